//! The command line: the options after `--` ([`Args`], parsed by clap) and
//! the run plan they resolve to: [`Plan`] for the hand-off rows, or with
//! `--scatter` [`FanPlan`] for the scatter and drain rows (`--quick` and
//! the defaults applied, every value checked).
//!
//! Promises: [`plans_from`] returns either a plan every run can use (known
//! contenders; bursts in 1..=`MAX_BURST`, and with `--scatter` powers of
//! two; depths that are powers of two up to 2^24 and hold every burst; a
//! rate in 0.001..=1000 Mitems/s; queue counts in 1..=`MAX_QUEUES`; at
//! least one value of each list) or the message of a bad-options exit
//! (code 2). Nothing here touches the EAL.

use clap::Parser;

use crate::contenders::Contender;
use crate::fan_plan::{FanContender, FanPlan, FanRow, MAX_QUEUES, TABLE_ITEMS};
use crate::runner::MAX_BURST;

#[derive(Parser, Debug)]
#[command(
    name = "tqfwd-queue-bench",
    version,
    about = "Hand-off queue benchmark: TransferQueue vs rte_ring across lcores (run via bench/queue.sh)",
    after_help = "EAL options go before `--`, these options after it, e.g.\n  \
                  tqfwd-queue-bench -l 0-1 --no-pci --in-memory -- --quick"
)]
pub(crate) struct Args {
    /// Short run: 3 rounds, 50 ms throughput and 25 ms latency runs (explicit
    /// options still win).
    #[arg(long)]
    pub(crate) quick: bool,

    /// Run the scatter and drain rows instead of the hand-off rows: one
    /// producer lcore, k queues, one consumer lcore (throughput runs only).
    #[arg(
        long,
        conflicts_with_all = ["latency_ms", "rate", "single_producer_only", "multi_producer_only", "anchor", "anchor_error"]
    )]
    pub(crate) scatter: bool,

    /// With --scatter: the queue counts k [default: 1,2,4,8].
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "scatter")]
    pub(crate) queues: Option<Vec<usize>>,

    /// With --scatter: which rows, `scatter` and/or `drain` [default: both].
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "scatter")]
    pub(crate) rows: Option<Vec<String>>,

    /// Rounds over all configurations (medians are taken over them)
    /// [default: 7, --quick: 3].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) rounds: Option<u32>,

    /// Length of each throughput run in ms [default: 200, --quick: 50].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub(crate) duration_ms: Option<u64>,

    /// Length of each latency run in ms (the first 10 % is warm-up and not
    /// recorded) [default: 100, --quick: 25].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub(crate) latency_ms: Option<u64>,

    /// Offered load of the latency runs, in million items per second (all
    /// producers together), the same for every contender [default: 4].
    #[arg(long, value_name = "MITEMS")]
    pub(crate) rate: Option<f64>,

    /// Bursts (items per send/receive call, and per TransferQueue unit)
    /// [default: 1,8,32,64; --scatter: 32].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) bursts: Option<Vec<usize>>,

    /// Queue depths in items (powers of two; split over producers; with
    /// --scatter, the depth of each of the k queues) [default:
    /// 1024,4096,16384; --scatter: 2048].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) depths: Option<Vec<usize>>,

    /// Contenders to run: tq-sharded, tq-shared, ring-spsc, ring-mpsc
    /// [default: all four]; with --scatter: tq-in-place, tq-copy,
    /// ring-in-place, ring-copy [default: all four].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) contenders: Option<Vec<String>>,

    /// Skip the multi-producer configurations even when the lcores exist.
    #[arg(long)]
    pub(crate) single_producer_only: bool,

    /// Run only the multi-producer configurations (all producer lcores at
    /// once; they need at least 3 lcores: with fewer, nothing runs and the
    /// bench exits 1).
    #[arg(long, conflicts_with = "single_producer_only")]
    pub(crate) multi_producer_only: bool,

    /// Output of `dpdk-test` running `ring_perf_autotest` (the anchor).
    #[arg(long, value_name = "FILE")]
    pub(crate) anchor: Option<std::path::PathBuf>,

    /// Why the anchor could not be measured (printed instead of it).
    #[arg(long, value_name = "TEXT")]
    pub(crate) anchor_error: Option<String>,

    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<std::path::PathBuf>,

    /// Free-form label stored in the JSON (bench/queue.sh passes the date).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub(crate) label: String,

    /// Free-form notes stored in the JSON (bench/queue.sh passes the EAL
    /// memory mode and the machine load it saw).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub(crate) note: String,
}

/// Run parameters after applying `--quick` and the defaults.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) rounds: u32,
    pub(crate) duration_ms: u64,
    pub(crate) latency_ms: u64,
    pub(crate) rate_items_s: f64,
    pub(crate) bursts: Vec<usize>,
    pub(crate) depths: Vec<usize>,
    pub(crate) contenders: Vec<Contender>,
}

/// What the options ask for.
#[derive(Debug, Clone)]
pub(crate) enum Plans {
    Handoff(Plan),
    Fan(FanPlan),
}

pub(crate) fn plans_from(args: &Args) -> Result<Plans, String> {
    if args.scatter {
        fan_plan_from(args).map(Plans::Fan)
    } else {
        plan_from(args).map(Plans::Handoff)
    }
}

/// The values a list option names (`all` when it is not given), or the
/// message `unknown` makes of the first name `parse` does not know.
fn parse_list<T: Copy>(
    given: &Option<Vec<String>>,
    all: &[T],
    parse: fn(&str) -> Option<T>,
    unknown: impl Fn(&str) -> String,
) -> Result<Vec<T>, String> {
    match given {
        None => Ok(all.to_vec()),
        Some(list) => list
            .iter()
            .map(|v| parse(v).ok_or_else(|| unknown(v)))
            .collect(),
    }
}

/// `--quick` and the defaults: (rounds, throughput ms, latency ms).
fn lengths(args: &Args) -> (u32, u64, u64) {
    let (rounds, dur, lat) = if args.quick {
        (3, 50, 25)
    } else {
        (7, 200, 100)
    };
    (
        args.rounds.unwrap_or(rounds),
        args.duration_ms.unwrap_or(dur),
        args.latency_ms.unwrap_or(lat),
    )
}

fn plan_from(args: &Args) -> Result<Plan, String> {
    let (rounds, duration_ms, latency_ms) = lengths(args);
    let rate = args.rate.unwrap_or(4.0);
    let plan = Plan {
        rounds,
        duration_ms,
        latency_ms,
        rate_items_s: rate * 1e6,
        bursts: args.bursts.clone().unwrap_or_else(|| vec![1, 8, 32, 64]),
        depths: args
            .depths
            .clone()
            .unwrap_or_else(|| vec![1024, 4096, 16384]),
        contenders: parse_list(&args.contenders, &Contender::ALL, Contender::parse, |c| {
            format!("unknown contender `{c}`: use tq-sharded, tq-shared, ring-spsc, ring-mpsc")
        })?,
    };
    if !(plan.rate_items_s.is_finite() && plan.rate_items_s >= 1e3 && plan.rate_items_s <= 1e9) {
        return Err(format!(
            "--rate {rate} is out of range: use 0.001..=1000 (million items/s)"
        ));
    }
    if plan.contenders.is_empty() || plan.bursts.is_empty() || plan.depths.is_empty() {
        return Err("--contenders, --bursts and --depths need at least one value each".into());
    }
    check_bursts_depths(&plan.bursts, &plan.depths)?;
    Ok(plan)
}

/// Bursts in 1..=`MAX_BURST`; depths powers of two up to 2^24 that hold
/// every burst.
fn check_bursts_depths(bursts: &[usize], depths: &[usize]) -> Result<(), String> {
    for &b in bursts {
        if b == 0 || b > MAX_BURST {
            return Err(format!("burst {b} is out of range: use 1..={MAX_BURST}"));
        }
    }
    for &d in depths {
        if !d.is_power_of_two() || d > (1 << 24) {
            return Err(format!("depth {d} is not a power of two up to 16777216"));
        }
        if let Some(&b) = bursts.iter().find(|&&b| b > d) {
            return Err(format!(
                "depth {d} is smaller than burst {b}: every depth must hold one burst"
            ));
        }
    }
    Ok(())
}

fn fan_plan_from(args: &Args) -> Result<FanPlan, String> {
    let (rounds, duration_ms, _) = lengths(args);
    let plan = FanPlan {
        rounds,
        duration_ms,
        rows: parse_list(&args.rows, &FanRow::ALL, FanRow::parse, |r| {
            format!("unknown row `{r}`: use scatter, drain")
        })?,
        queues: args.queues.clone().unwrap_or_else(|| vec![1, 2, 4, 8]),
        bursts: args.bursts.clone().unwrap_or_else(|| vec![32]),
        depths: args.depths.clone().unwrap_or_else(|| vec![2048]),
        contenders: parse_list(
            &args.contenders,
            &FanContender::ALL,
            FanContender::parse,
            |c| {
                format!("unknown contender `{c}` with --scatter: use tq-in-place, tq-copy, ring-in-place, ring-copy")
            },
        )?,
    };
    if plan.rows.is_empty()
        || plan.queues.is_empty()
        || plan.contenders.is_empty()
        || plan.bursts.is_empty()
        || plan.depths.is_empty()
    {
        return Err(
            "--rows, --queues, --contenders, --bursts and --depths need at least one value each"
                .into(),
        );
    }
    for &k in &plan.queues {
        if k == 0 || k > MAX_QUEUES {
            return Err(format!(
                "queue count {k} is out of range: use 1..={MAX_QUEUES}"
            ));
        }
    }
    check_bursts_depths(&plan.bursts, &plan.depths)?;
    // The producers read their items from a table of TABLE_ITEMS values
    // in whole bursts.
    if let Some(&b) = plan.bursts.iter().find(|&&b| !b.is_power_of_two()) {
        return Err(format!(
            "burst {b} is not a power of two: with --scatter, bursts are powers of two up to {MAX_BURST}"
        ));
    }
    debug_assert!(plan.bursts.iter().all(|&b| TABLE_ITEMS % b == 0));
    Ok(plan)
}
