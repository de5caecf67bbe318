//! `tqfwd-queue-bench [EAL options] -- [options]`: the hand-off queue
//! benchmark. Run it through `bench/queue.sh`, which builds it, picks the EAL
//! options and runs the `dpdk-test ring_perf_autotest` anchor next to it.
//!
//! ## What it owns and promises
//!
//! It measures one *hand-off* — a `u64` item leaving a producer lcore through a
//! queue and arriving at the consumer lcore — for four contenders, on the same
//! EAL, in one process, alternating them:
//!
//! * `TQ sharded`: the TransferQueue, one single-producer queue per producer,
//!   read by a [`queue::ShardedConsumer`] (`queue::sharded`);
//! * `TQ shared`: the TransferQueue, one queue for all producers
//!   (`queue::channel`, the MPSC code path);
//! * `rte_ring SP/SC`: one single-producer ring per producer (polled
//!   round-robin when there are several);
//! * `rte_ring MP/SC`: one multi-producer ring for all producers.
//!
//! For every (producers, burst, depth) and contender it does two runs, in
//! rounds; within a round the contenders of one configuration run back to back
//! (their order rotates every round) and the figures reported are medians over
//! the rounds:
//!
//! * **throughput**: producers send bursts flat out for `--duration-ms`; the
//!   consumer reads the TSC every 2048 bursts, and cycles/item is the median
//!   of those windows (robust to the stalls of a shared VM); the whole run
//!   (start barrier to last item drained) is reported beside it;
//! * **latency**: producers send one burst every `burst / rate` seconds
//!   (TSC-paced, the same offered load for every contender), each item
//!   carrying the TSC read just before the send; the consumer records
//!   `now - stamp` into a [`Histogram`] per ~0.23 ms window of stamps (after a
//!   warm-up). Both threads read the TSC on every loop iteration; a gap above
//!   20 µs marks the windows it can have affected. p50/p99/p99.9 (ns) are
//!   given over the clean windows, and p99 over all windows beside them.
//!
//! Promises: no allocation, logging or formatting inside the measured loops
//! (buffers are stack arrays, windows and histograms are allocated before the
//! run); after every run the producers stop, the consumer drains, and the run
//! is accepted only if received == sent and every item carried what was sent
//! — otherwise it prints an error and exits 1. A run whose options leave no
//! configuration the lcores can run (e.g. `--multi-producer-only` on 2
//! lcores) says so on stderr and exits 1, with no table and no verdict; a
//! target whose configurations have no figure is `n/a`, never `met`. Bad
//! options exit 2. No `unsafe` here: all FFI goes through `tqfwd::dpdk`.
//!
//! Topology: the consumer is the highest enabled lcore other than the main
//! lcore; every other lcore (main included) can be a producer. Single-producer
//! configurations use the main lcore. Multi-producer configurations (all
//! producer lcores at once) need at least 3 lcores; with fewer they are
//! reported as skipped rows, never estimated.
//!
//! ## Scatter and drain rows (`--scatter`)
//!
//! Instead of the hand-off rows: one producer lcore (the main lcore) and
//! one consumer lcore, k = 1, 2, 4, 8 queues (`--queues`) between them,
//! `depth` items each, for four contenders: `tq in place`, `tq copy`
//! (one single-producer TransferQueue per queue), `ring in place`, `ring
//! copy` (one SP/SC rte_ring per queue). *Scatter*: the producer sends
//! each item to the queue its hash picks (in place: one lent run per
//! destination, opened nested; by copy: per-destination buckets). *Drain*:
//! the producer sends its bursts to the k queues in turn. The consumer
//! polls the k queues round-robin. Each role's busy cycles per item (one
//! TSC read per loop iteration) are reported, with the throughput, the
//! targets (k = 4 against k = 1, tq against the ring) and the lcores'
//! cache-line trip before each run; `fan_loops.rs` says exactly what is
//! timed. Same rounds, alternation and medians as above; throughput runs
//! only; each run is accepted only if every queue received exactly the
//! stream's items for it (count and sum), otherwise exit 1.
//!
//! ## Layout
//!
//! * `main.rs`: EAL start and stop, the topology (which lcore does what),
//!   the run from options to report (either mode), exit codes;
//! * `args.rs`: the options and the run plan;
//! * `contenders.rs`: the queues compared, built fresh for every run;
//! * `runner.rs`: the measured loops and one run on the lcores;
//! * `rounds.rs`: the rounds over the configurations, each run's
//!   accounting check;
//! * `results.rs`: the per-configuration figures over the rounds;
//! * `anchor.rs`: the `ring_perf_autotest` anchor;
//! * `report.rs`: the markdown table, targets and JSON;
//! * `fan_plan.rs`: the scatter and drain rows' rows, contenders, limits
//!   and plan (a leaf: it uses no other module);
//! * `fan.rs`: the scatter and drain rows' queues, rounds,
//!   accounting check and figures;
//! * `fan_loops.rs`: their measured loops and one run on the lcores;
//! * `fan_report.rs`: their tables, targets and JSON.
//!
//! [`queue::ShardedConsumer`]: tqfwd::queue::ShardedConsumer
//! [`Histogram`]: tqfwd::counters::latency::Histogram

#![forbid(unsafe_code)]

mod anchor;
mod args;
mod contenders;
mod fan;
mod fan_loops;
mod fan_plan;
mod fan_report;
mod report;
mod results;
mod rounds;
mod runner;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use tqfwd::dpdk::{self, Eal, Lcore, SocketMemory};

use crate::anchor::load_anchor;
use crate::args::{plans_from, Args, Plan, Plans};
use crate::fan::FanBench;
use crate::fan_plan::FanPlan;
use crate::fan_report::{fan_report, FanReport};
use crate::report::{report, Report};
use crate::rounds::Bench;
use crate::runner::{loadavg, Lab, Roles, GAP_NS};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let prog = argv
        .first()
        .cloned()
        .unwrap_or_else(|| "tqfwd-queue-bench".into());
    let (eal_args, app_args) = match argv.iter().position(|a| a == "--") {
        Some(i) => (
            argv[..i].to_vec(),
            std::iter::once(prog)
                .chain(argv[i + 1..].iter().cloned())
                .collect::<Vec<_>>(),
        ),
        None => (argv.clone(), vec![prog]),
    };
    let args = match Args::try_parse_from(&app_args) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let plans = match plans_from(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tqfwd-queue-bench: error: {e}");
            return ExitCode::from(2);
        }
    };
    let eal = match Eal::init(&eal_args) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("tqfwd-queue-bench: error: {e} (check the EAL options before `--`)");
            return ExitCode::from(2);
        }
    };
    let run = match &plans {
        Plans::Handoff(plan) => bench(&eal, &args, plan),
        Plans::Fan(plan) => fan_bench(&eal, &args, plan),
    };
    let code = match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tqfwd-queue-bench: error: {e}");
            ExitCode::from(1)
        }
    };
    if let Err(e) = eal.cleanup() {
        eprintln!("tqfwd-queue-bench: warning: {e}");
    }
    code
}

/// Cycles of one TSC read on this lcore (mean of many back to back).
fn tsc_read_cycles() -> f64 {
    const N: u64 = 100_000;
    let t0 = dpdk::rdtsc_inline();
    let mut last = t0;
    for _ in 0..N {
        last = std::hint::black_box(dpdk::rdtsc_inline());
    }
    (last - t0) as f64 / N as f64
}

/// The scatter and drain rows (`--scatter`) after the EAL is up.
fn fan_bench(eal: &Eal, args: &Args, plan: &FanPlan) -> Result<(), String> {
    let topo = topology(eal, args)?;
    let tsc_hz = dpdk::tsc_hz();
    if tsc_hz == 0 {
        return Err("EAL reports a TSC frequency of 0".into());
    }
    let load_start = loadavg();
    let producer = topo.producer_lcores[0];
    eprintln!(
        "tqfwd-queue-bench: scatter and drain rows: {} on {} lcores (producer {}, consumer {}), TSC {:.3} GHz, load {}",
        dpdk::version(),
        topo.lcores.len(),
        producer,
        topo.consumer,
        tsc_hz as f64 / 1e9,
        load_start
    );
    let configs = FanBench::keys(plan).len();
    eprintln!(
        "tqfwd-queue-bench: {} rounds x {} configurations x {} ms",
        plan.rounds, configs, plan.duration_ms
    );
    let tsc_read = tsc_read_cycles();
    let b = FanBench {
        lab: lab(eal, &topo),
        plan,
        tsc_hz,
    };
    let t_all = Instant::now();
    let results = b.rounds()?;
    let load_end = loadavg();
    fan_report(FanReport {
        args,
        plan,
        results: &results,
        lcores: &topo.lcores,
        producer,
        consumer: topo.consumer,
        tsc_hz,
        tsc_read_cycles: tsc_read,
        load_start: &load_start,
        load_end: &load_end,
        wall_s: t_all.elapsed().as_secs_f64(),
    })
}

/// Where the bench runs: the consumer lcore, the producer lcores (main lcore
/// first) and the producer counts of the configurations.
struct Topology {
    lcores: Vec<Lcore>,
    producer_lcores: Vec<Lcore>,
    consumer: Lcore,
    /// NUMA socket of the consumer: where queue memory goes.
    socket: i32,
    producer_counts: Vec<usize>,
    /// Fewer than 3 lcores: the multi-producer rows cannot run.
    skipped_multi: bool,
}

fn topology(eal: &Eal, args: &Args) -> Result<Topology, String> {
    let main_lcore = eal.main_lcore();
    let lcores = eal.lcores();
    let consumer =
        *lcores.iter().rev().find(|&&l| l != main_lcore).ok_or(
            "needs at least 2 lcores (one producer, one consumer), e.g. EAL option -l 0-1",
        )?;
    // Producers: the main lcore first, then the others (consumer excluded).
    let mut producer_lcores = vec![main_lcore];
    producer_lcores.extend(
        lcores
            .iter()
            .copied()
            .filter(|&l| l != main_lcore && l != consumer),
    );
    // Producer counts: 1, plus all producer lcores at once when there are
    // at least 2 of them (>= 3 lcores).
    let multi = producer_lcores.len();
    let mut producer_counts = Vec::new();
    if !args.multi_producer_only {
        producer_counts.push(1usize);
    }
    if multi >= 2 && !args.single_producer_only {
        producer_counts.push(multi);
    }
    Ok(Topology {
        socket: eal.lcore_socket(consumer) as i32,
        skipped_multi: multi < 2,
        lcores,
        producer_lcores,
        consumer,
        producer_counts,
    })
}

/// Where the runs take place: `eal`'s lcores as `topo` assigns them, queue
/// memory on the consumer's socket.
fn lab<'a>(eal: &'a Eal, topo: &'a Topology) -> Lab<'a> {
    Lab {
        eal,
        roles: Roles {
            producers: &topo.producer_lcores,
            consumer: topo.consumer,
        },
        mem: Arc::new(SocketMemory {
            socket: topo.socket,
        }),
        socket: topo.socket,
    }
}

/// Why the options leave no configuration to run (the message of the error
/// that ends such a run with exit code 1, before anything is printed).
fn no_configuration(args: &Args, topo: &Topology) -> String {
    let why = if args.multi_producer_only && topo.skipped_multi {
        format!(
            "--multi-producer-only asks for the multi-producer configurations only, and they need ≥3 lcores (have {})",
            topo.lcores.len()
        )
    } else {
        "the options select no (producers, contender, burst, depth) combination".to_string()
    };
    format!("no configuration ran: {why}; no table, no verdict")
}

/// The whole bench after the EAL is up: topology, rounds, anchor, report.
fn bench(eal: &Eal, args: &Args, plan: &Plan) -> Result<(), String> {
    let topo = topology(eal, args)?;
    let tsc_hz = dpdk::tsc_hz();
    if tsc_hz == 0 {
        return Err("EAL reports a TSC frequency of 0".into());
    }
    let load_start = loadavg();
    eprintln!(
        "tqfwd-queue-bench: {} on {} lcores (producers {:?}, consumer {}), TSC {:.3} GHz, load {}",
        dpdk::version(),
        topo.lcores.len(),
        topo.producer_lcores,
        topo.consumer,
        tsc_hz as f64 / 1e9,
        load_start
    );
    let configs_per_round =
        topo.producer_counts.len() * plan.bursts.len() * plan.depths.len() * plan.contenders.len();
    if configs_per_round == 0 {
        return Err(no_configuration(args, &topo));
    }
    eprintln!(
        "tqfwd-queue-bench: {} rounds x {} configurations x ({} ms throughput + {} ms latency)",
        plan.rounds, configs_per_round, plan.duration_ms, plan.latency_ms
    );

    let b = Bench {
        lab: lab(eal, &topo),
        plan,
        tsc_hz,
        // Latency windows of 2^shift cycles, the power of two at or below
        // 250 µs (short, so that a stall spoils little data; 8 KiB of
        // histogram each).
        window_shift: 63 - (tsc_hz / 4000).max(2).leading_zeros(),
        gap_cycles: (GAP_NS as u128 * tsc_hz as u128 / 1_000_000_000) as u64,
    };
    let t_all = Instant::now();
    let results = b.rounds(&topo.producer_counts)?;
    let load_end = loadavg();
    let anchor = load_anchor(args);

    report(Report {
        args,
        plan,
        results: &results,
        producer_counts: &topo.producer_counts,
        skipped_multi: topo.skipped_multi,
        lcores: &topo.lcores,
        producer_lcores: &topo.producer_lcores,
        consumer: topo.consumer,
        tsc_hz,
        anchor: &anchor,
        window_shift: b.window_shift,
        load_start: &load_start,
        load_end: &load_end,
        wall_s: t_all.elapsed().as_secs_f64(),
    })
}
