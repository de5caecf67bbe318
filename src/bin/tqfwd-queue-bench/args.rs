//! The command line: the options after `--` ([`Args`], parsed by clap) and
//! the run plan they resolve to ([`Plan`]: `--quick` and the defaults
//! applied, every value checked).
//!
//! Promises: [`plan_from`] returns either a plan every run can use (known
//! contenders; bursts in 1..=`MAX_BURST`; depths that are powers of two up
//! to 2^24 and hold every burst; a rate in 0.001..=1000 Mitems/s; at least
//! one value of each list) or the message of a bad-options exit (code 2).
//! Nothing here touches the EAL.

use clap::Parser;

use crate::contenders::Contender;
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
    /// producers together), the same for every contender.
    #[arg(long, value_name = "MITEMS", default_value_t = 4.0)]
    pub(crate) rate: f64,

    /// Bursts (items per send/receive call, and per TransferQueue unit).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = vec![1usize, 8, 32, 64])]
    pub(crate) bursts: Vec<usize>,

    /// Queue depths in items (powers of two; split over producers).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = vec![1024usize, 4096, 16384])]
    pub(crate) depths: Vec<usize>,

    /// Contenders to run: tq-sharded, tq-shared, ring-spsc, ring-mpsc.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_values_t = vec![
            "tq-sharded".to_string(),
            "tq-shared".to_string(),
            "ring-spsc".to_string(),
            "ring-mpsc".to_string()
        ]
    )]
    pub(crate) contenders: Vec<String>,

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

pub(crate) fn plan_from(args: &Args) -> Result<Plan, String> {
    let (rounds, dur, lat) = if args.quick {
        (3, 50, 25)
    } else {
        (7, 200, 100)
    };
    let plan = Plan {
        rounds: args.rounds.unwrap_or(rounds),
        duration_ms: args.duration_ms.unwrap_or(dur),
        latency_ms: args.latency_ms.unwrap_or(lat),
        rate_items_s: args.rate * 1e6,
        bursts: args.bursts.clone(),
        depths: args.depths.clone(),
        contenders: args
            .contenders
            .iter()
            .map(|c| {
                Contender::parse(c).ok_or_else(|| {
                    format!(
                        "unknown contender `{c}`: use tq-sharded, tq-shared, ring-spsc, ring-mpsc"
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    if !(plan.rate_items_s.is_finite() && plan.rate_items_s >= 1e3 && plan.rate_items_s <= 1e9) {
        return Err(format!(
            "--rate {} is out of range: use 0.001..=1000 (million items/s)",
            args.rate
        ));
    }
    if plan.contenders.is_empty() || plan.bursts.is_empty() || plan.depths.is_empty() {
        return Err("--contenders, --bursts and --depths need at least one value each".into());
    }
    for &b in &plan.bursts {
        if b == 0 || b > MAX_BURST {
            return Err(format!("burst {b} is out of range: use 1..={MAX_BURST}"));
        }
    }
    for &d in &plan.depths {
        if !d.is_power_of_two() || d > (1 << 24) {
            return Err(format!("depth {d} is not a power of two up to 16777216"));
        }
        if let Some(&b) = plan.bursts.iter().find(|&&b| b > d) {
            return Err(format!(
                "depth {d} is smaller than burst {b}: every depth must hold one burst"
            ));
        }
    }
    Ok(plan)
}
