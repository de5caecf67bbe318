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

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Parser;
use crossbeam_utils::CachePadded;
use serde_json::{json, Value};
use tqfwd::dpdk::{self, Eal, Lcore, Ring, SocketMemory};
use tqfwd::queue::{self, BurstReceiver, BurstSender, UnitMemory};
use tqfwd::report::latency::{cycles_to_ns, Histogram};

/// Largest burst the bench accepts (sizes its stack buffers).
const MAX_BURST: usize = queue::MAX_BURST;

/// Size of the rings `ring_perf_autotest` uses (DPDK 22.11
/// `app/test/test_ring_perf.c`, `RING_SIZE`): the depth row the anchor is
/// compared with.
const ANCHOR_RING_SIZE: usize = 4096;

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

#[derive(Parser, Debug)]
#[command(
    name = "tqfwd-queue-bench",
    version,
    about = "Hand-off queue benchmark: TransferQueue vs rte_ring across lcores (run via bench/queue.sh)",
    after_help = "EAL options go before `--`, these options after it, e.g.\n  \
                  tqfwd-queue-bench -l 0-1 --no-pci --in-memory -- --quick"
)]
struct Args {
    /// Short run: 3 rounds, 50 ms throughput and 25 ms latency runs (explicit
    /// options still win).
    #[arg(long)]
    quick: bool,

    /// Rounds over all configurations (medians are taken over them)
    /// [default: 7, --quick: 3].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: Option<u32>,

    /// Length of each throughput run in ms [default: 200, --quick: 50].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    duration_ms: Option<u64>,

    /// Length of each latency run in ms (the first 10 % is warm-up and not
    /// recorded) [default: 100, --quick: 25].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    latency_ms: Option<u64>,

    /// Offered load of the latency runs, in million items per second (all
    /// producers together), the same for every contender.
    #[arg(long, value_name = "MITEMS", default_value_t = 4.0)]
    rate: f64,

    /// Bursts (items per send/receive call, and per TransferQueue unit).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = vec![1usize, 8, 32, 64])]
    bursts: Vec<usize>,

    /// Queue depths in items (powers of two; split over producers).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = vec![1024usize, 4096, 16384])]
    depths: Vec<usize>,

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
    contenders: Vec<String>,

    /// Skip the multi-producer configurations even when the lcores exist.
    #[arg(long)]
    single_producer_only: bool,

    /// Run only the multi-producer configurations (all producer lcores at
    /// once; they need at least 3 lcores: with fewer, nothing runs and the
    /// bench exits 1).
    #[arg(long, conflicts_with = "single_producer_only")]
    multi_producer_only: bool,

    /// Output of `dpdk-test` running `ring_perf_autotest` (the anchor).
    #[arg(long, value_name = "FILE")]
    anchor: Option<std::path::PathBuf>,

    /// Why the anchor could not be measured (printed instead of it).
    #[arg(long, value_name = "TEXT")]
    anchor_error: Option<String>,

    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<std::path::PathBuf>,

    /// Free-form label stored in the JSON (bench/queue.sh passes the date).
    #[arg(long, value_name = "TEXT", default_value = "")]
    label: String,

    /// Free-form notes stored in the JSON (bench/queue.sh passes the EAL
    /// memory mode and the machine load it saw).
    #[arg(long, value_name = "TEXT", default_value = "")]
    note: String,
}

/// Run parameters after applying `--quick` and the defaults.
#[derive(Debug, Clone)]
struct Plan {
    rounds: u32,
    duration_ms: u64,
    latency_ms: u64,
    rate_items_s: f64,
    bursts: Vec<usize>,
    depths: Vec<usize>,
    contenders: Vec<Contender>,
}

fn plan_from(args: &Args) -> Result<Plan, String> {
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

// ---------------------------------------------------------------------------
// Contenders
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Contender {
    TqSharded,
    TqShared,
    RingSpsc,
    RingMpsc,
}

impl Contender {
    const ALL: [Contender; 4] = [
        Contender::TqSharded,
        Contender::TqShared,
        Contender::RingSpsc,
        Contender::RingMpsc,
    ];

    fn parse(s: &str) -> Option<Contender> {
        Contender::ALL.into_iter().find(|c| c.key() == s.trim())
    }

    fn key(self) -> &'static str {
        match self {
            Contender::TqSharded => "tq-sharded",
            Contender::TqShared => "tq-shared",
            Contender::RingSpsc => "ring-spsc",
            Contender::RingMpsc => "ring-mpsc",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Contender::TqSharded => "TQ sharded",
            Contender::TqShared => "TQ shared",
            Contender::RingSpsc => "rte_ring SP/SC",
            Contender::RingMpsc => "rte_ring MP/SC",
        }
    }
}

// ---------------------------------------------------------------------------
// One run
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Throughput,
    Latency,
}

/// Most throughput windows one run records (later ones are not recorded).
const MAX_TP_WINDOWS: usize = 16_384;

/// Throughput window length, in bursts: long enough to amortise the TSC read
/// (about 0.1–1 ms of hand-offs), short enough to get ~100+ windows per run.
const TP_WINDOW_BURSTS: u64 = 2048;

/// Fewest pooled clean latency samples for which percentiles are reported
/// (p99.9 then rests on at least 20 samples).
const MIN_CLEAN_SAMPLES: u64 = 20_000;

/// A thread that saw more than this between two iterations of its own loop
/// was descheduled or interrupted (the loops themselves take < 1 µs).
const GAP_NS: u64 = 20_000;

/// Parameters of one run, in TSC cycles.
#[derive(Debug, Clone, Copy)]
struct RunParams {
    mode: Mode,
    burst: usize,
    /// How long producers send.
    run_cycles: u64,
    /// Latency mode: cycles between two bursts of one producer.
    interval_cycles: u64,
    /// Throughput mode: items per measurement window.
    window_items: u64,
    /// Latency mode: windows are `2^window_shift` cycles (about 0.25 ms).
    window_shift: u32,
    /// Latency mode: windows before this one are warm-up, not recorded.
    warmup_windows: usize,
    /// Latency mode: number of windows covering the run.
    windows: usize,
    /// Latency mode: gap (cycles) that marks a descheduled thread.
    gap_cycles: u64,
}

/// State shared by the lcores of one run (allocated before it).
struct RunState {
    /// Start barrier.
    ready: AtomicUsize,
    /// Producers that have finished sending.
    done: AtomicUsize,
    /// Consumer's TSC at the start: origin of the latency windows.
    base: AtomicU64,
    /// Latency windows during which a bench thread was descheduled.
    disturbed: Vec<AtomicBool>,
    /// Involuntary context switches of the bench threads during the run.
    ctx_switches: AtomicU64,
}

impl RunState {
    /// Marks the latency windows that items affected by a stall of one thread
    /// between TSC `from` and `to` can be stamped in: from one gap-length
    /// before the stall (items in flight when it began) to as long again
    /// after its end (items queued behind the backlog the stall left: at an
    /// offered load at most half the queue's capacity, the backlog of a
    /// stall of length L drains within L). Rare: only after a detected gap.
    #[cold]
    fn mark_stall(&self, from: u64, to: u64, rp: &RunParams) {
        let base = self.base.load(Ordering::Relaxed);
        let a =
            (from.saturating_sub(rp.gap_cycles).saturating_sub(base) >> rp.window_shift) as usize;
        let b = ((to + (to - from)).saturating_sub(base) >> rp.window_shift) as usize;
        for w in a..=b.min(self.disturbed.len().saturating_sub(1)) {
            self.disturbed[w].store(true, Ordering::Relaxed);
        }
    }
}

/// Per-run buffers of the consumer, allocated before the run.
struct ConsumerBufs {
    /// Throughput: cycles of each window of `window_items` items.
    tp_windows: Vec<u64>,
    /// Latency: one histogram per window, indexed by the item's stamp.
    lat: Vec<Histogram>,
}

/// What one run measured.
struct RunOut {
    sent: u64,
    received: u64,
    /// Sum of the received items' values (throughput mode: every item is 1).
    checksum: u64,
    /// Consumer-side cycles from the start barrier to the last item drained.
    elapsed_cycles: u64,
    /// Throughput: the recorded windows (cycles per `window_items` items).
    tp_windows: Vec<u64>,
    /// Latency: all samples after the warm-up, and those of the windows in
    /// which no bench thread was descheduled.
    lat_all: Histogram,
    lat_clean: Histogram,
    windows_total: usize,
    windows_clean: usize,
    /// Latency mode: pacing slots the producers missed (they were behind by a
    /// whole interval, e.g. descheduled) and skipped rather than catching up.
    missed_slots: u64,
    /// Latency mode: samples where the consumer's TSC was below the stamp
    /// (unsynchronised TSCs; recorded as 0).
    negative: u64,
    /// Latency mode: producers' own elapsed cycles (for the achieved rate).
    producer_cycles: u64,
    /// Involuntary context switches of the bench threads during the run.
    ctx_switches: u64,
}

/// The lcores of a run.
struct Roles<'a> {
    producers: &'a [Lcore],
    consumer: Lcore,
}

/// Waits until `n` participants have arrived.
#[inline]
fn barrier(ready: &AtomicUsize, n: usize) {
    ready.fetch_add(1, Ordering::AcqRel);
    while ready.load(Ordering::Acquire) < n {
        dpdk::pause();
    }
}

/// The calling thread's involuntary context switches so far (0 if
/// `/proc/thread-self/status` cannot be read). Not for measured loops.
fn involuntary_switches() -> u64 {
    std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Throughput producer: sends `burst` items (all 1) flat out until the
/// deadline; returns how many were accepted.
#[inline(never)]
fn produce_flat_out<S: BurstSender<u64>>(tx: &mut S, rp: &RunParams) -> u64 {
    let buf = [1u64; MAX_BURST];
    let items = &buf[..rp.burst];
    let deadline = dpdk::rdtsc_inline() + rp.run_cycles;
    let mut sent = 0u64;
    let mut iter = 0u32;
    loop {
        let n = tx.send_burst(items);
        sent += n as u64;
        if n == 0 {
            dpdk::pause(); // full
        }
        iter = iter.wrapping_add(1);
        // Read the clock every 64 calls only: at burst 1 a TSC read per call
        // would cost as much as the hand-off.
        if iter % 64 == 0 && dpdk::rdtsc_inline() >= deadline {
            return sent;
        }
    }
}

/// Latency producer: one burst every `interval_cycles`, each item carrying the
/// TSC read when the send starts. A full queue is retried (the wait counts as
/// latency). If the producer finds itself a whole interval late it skips the
/// missed slots instead of sending a catch-up storm. Every iteration reads the
/// TSC; a gap above `gap_cycles` between two reads marks a stall. Returns
/// (sent, missed slots, elapsed cycles).
#[inline(never)]
fn produce_paced<S: BurstSender<u64>>(
    tx: &mut S,
    rp: &RunParams,
    st: &RunState,
) -> (u64, u64, u64) {
    let mut buf = [0u64; MAX_BURST];
    let burst = rp.burst;
    let start = dpdk::rdtsc_inline();
    let deadline = start + rp.run_cycles;
    let mut next = start;
    let mut prev = start;
    let mut sent = 0u64;
    let mut missed = 0u64;
    loop {
        let mut now = dpdk::rdtsc_inline();
        if now - prev > rp.gap_cycles {
            st.mark_stall(prev, now, rp);
        }
        prev = now;
        while now < next {
            dpdk::pause();
            now = dpdk::rdtsc_inline();
            if now - prev > rp.gap_cycles {
                st.mark_stall(prev, now, rp);
            }
            prev = now;
        }
        if now >= deadline {
            return (sent, missed, now - start);
        }
        if now - next >= rp.interval_cycles {
            missed += (now - next) / rp.interval_cycles;
            next = now;
        }
        let items = &mut buf[..burst];
        items.fill(now);
        let mut off = 0;
        while off < burst {
            let n = tx.send_burst(&items[off..]);
            off += n;
            if n == 0 {
                dpdk::pause(); // full: retry, the items keep their stamp
                let t = dpdk::rdtsc_inline();
                if t - prev > rp.gap_cycles {
                    st.mark_stall(prev, t, rp);
                }
                prev = t;
            }
        }
        sent += burst as u64;
        next += rp.interval_cycles;
    }
}

/// Throughput consumer: receives bursts until every producer is done and the
/// queue is drained, summing the items (the accounting check) and recording
/// the cycles of every `window_items` items. Returns (received, checksum,
/// elapsed cycles, windows recorded).
#[inline(never)]
fn consume_flat_out<R: BurstReceiver<u64>>(
    rx: &mut R,
    rp: &RunParams,
    producers: usize,
    st: &RunState,
    windows: &mut [u64],
    t0: u64,
) -> (u64, u64, u64, usize) {
    let mut buf = [0u64; MAX_BURST];
    let out = &mut buf[..rp.burst];
    let mut got = 0u64;
    let mut sum = 0u64;
    let mut t_mark = t0;
    let mut next_mark = rp.window_items;
    let mut nw = 0;
    let mut finishing = false;
    loop {
        let n = rx.recv_burst(out);
        if n > 0 {
            got += n as u64;
            for &v in &out[..n] {
                sum = sum.wrapping_add(v);
            }
            if got >= next_mark {
                let now = dpdk::rdtsc_inline();
                if nw < windows.len() {
                    windows[nw] = now - t_mark;
                    nw += 1;
                }
                t_mark = now;
                next_mark += rp.window_items;
            }
            continue;
        }
        if finishing {
            break; // drained after every producer finished
        }
        // Acquire: every item a producer sent before it reported done is
        // published, so the next empty receive means drained.
        if st.done.load(Ordering::Acquire) == producers {
            finishing = true;
        } else {
            dpdk::pause();
        }
    }
    (got, sum, dpdk::rdtsc_inline() - t0, nw)
}

/// Latency consumer: polls without pausing, reads the TSC after every poll
/// (a gap above `gap_cycles` marks a stall) and records `now - stamp` of
/// every item into the histogram of the window its stamp falls in (warm-up
/// windows skipped). Returns (received, elapsed cycles, negative samples).
#[inline(never)]
fn consume_paced<R: BurstReceiver<u64>>(
    rx: &mut R,
    rp: &RunParams,
    producers: usize,
    st: &RunState,
    hists: &mut [Histogram],
    t0: u64,
) -> (u64, u64, u64) {
    let mut buf = [0u64; MAX_BURST];
    let out = &mut buf[..rp.burst];
    let mut got = 0u64;
    let mut negative = 0u64;
    let mut prev = t0;
    let mut finishing = false;
    loop {
        let n = rx.recv_burst(out);
        let now = dpdk::rdtsc_inline();
        if now - prev > rp.gap_cycles {
            st.mark_stall(prev, now, rp);
        }
        prev = now;
        if n > 0 {
            got += n as u64;
            for &stamp in &out[..n] {
                let lat = if now >= stamp {
                    now - stamp
                } else {
                    negative += 1;
                    0
                };
                let w = (stamp.saturating_sub(t0) >> rp.window_shift) as usize;
                if w >= rp.warmup_windows && w < hists.len() {
                    hists[w].record(lat);
                }
            }
            continue;
        }
        if finishing {
            break;
        }
        if st.done.load(Ordering::Acquire) == producers {
            finishing = true;
        }
    }
    (got, dpdk::rdtsc_inline() - t0, negative)
}

impl ConsumerBufs {
    /// The consumer's buffers for one run of `rp.mode`, allocated up front.
    fn for_run(rp: &RunParams) -> ConsumerBufs {
        match rp.mode {
            Mode::Throughput => ConsumerBufs {
                tp_windows: vec![0; MAX_TP_WINDOWS],
                lat: Vec::new(),
            },
            Mode::Latency => ConsumerBufs {
                tp_windows: Vec::new(),
                lat: vec![Histogram::new(); rp.windows],
            },
        }
    }
}

/// Latency: merges the windows after the warm-up into (all, clean, windows
/// total, windows clean); "clean" leaves out those in which a bench thread
/// was descheduled.
fn merge_latency(
    lat: &[Histogram],
    st: &RunState,
    rp: &RunParams,
) -> (Histogram, Histogram, usize, usize) {
    let mut lat_all = Histogram::new();
    let mut lat_clean = Histogram::new();
    let (mut windows_total, mut windows_clean) = (0, 0);
    for (w, h) in lat.iter().enumerate() {
        if w < rp.warmup_windows || h.count() == 0 {
            continue;
        }
        windows_total += 1;
        lat_all.merge(h);
        if !st.disturbed[w].load(Ordering::Relaxed) {
            windows_clean += 1;
            lat_clean.merge(h);
        }
    }
    (lat_all, lat_clean, windows_total, windows_clean)
}

/// Runs one producer→consumer measurement on the EAL lcores: `senders[i]` on
/// `roles.producers[i]`, `receiver` on `roles.consumer`. Handles stay in their
/// slots during the run and are dropped here, on the main lcore.
fn run_once<S, R>(
    eal: &Eal,
    roles: &Roles,
    senders: Vec<S>,
    receiver: R,
    rp: &RunParams,
) -> Result<RunOut, String>
where
    S: BurstSender<u64>,
    R: BurstReceiver<u64>,
{
    let producers = senders.len();
    let lcores = &roles.producers[..producers];
    let bufs = ConsumerBufs::for_run(rp);
    // Each side's handle in its own cache-line-padded heap slot: the
    // consumer's TransferQueue handle is written on every receive, and must
    // not share a line with anything the producer touches (e.g. this stack
    // frame, which lives on the main lcore = the first producer).
    let tx_slots: Vec<Box<CachePadded<Mutex<S>>>> = senders
        .into_iter()
        .map(|s| Box::new(CachePadded::new(Mutex::new(s))))
        .collect();
    let rx_slot = Box::new(CachePadded::new(Mutex::new((receiver, bufs))));
    let st = Box::new(CachePadded::new(RunState {
        ready: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        base: AtomicU64::new(0),
        disturbed: (0..rp.windows).map(|_| AtomicBool::new(false)).collect(),
        ctx_switches: AtomicU64::new(0),
    }));
    let sent: Vec<AtomicU64> = (0..producers).map(|_| AtomicU64::new(0)).collect();
    let missed = AtomicU64::new(0);
    let producer_cycles = AtomicU64::new(0);
    let consumer_out = Mutex::new(None::<(u64, u64, u64, u64, usize)>);
    let participants = producers + 1;

    eal.run_on_all_lcores(|lcore| {
        if lcore == roles.consumer {
            // Each slot is locked by its own lcore only: no contention.
            let mut guard = rx_slot.lock().expect("consumer slot");
            let (rx, bufs) = &mut *guard;
            let cs0 = involuntary_switches();
            // The window origin is published before the barrier, so every
            // producer sees it once the barrier opens.
            let t0 = dpdk::rdtsc_inline();
            st.base.store(t0, Ordering::Relaxed);
            barrier(&st.ready, participants);
            let r = match rp.mode {
                Mode::Throughput => {
                    let (got, sum, el, nw) =
                        consume_flat_out(rx, rp, producers, &st, &mut bufs.tp_windows, t0);
                    (got, sum, el, 0, nw)
                }
                Mode::Latency => {
                    let (got, el, neg) = consume_paced(rx, rp, producers, &st, &mut bufs.lat, t0);
                    (got, 0, el, neg, 0)
                }
            };
            st.ctx_switches
                .fetch_add(involuntary_switches() - cs0, Ordering::Relaxed);
            *consumer_out.lock().expect("consumer result") = Some(r);
        } else if let Some(i) = lcores.iter().position(|&l| l == lcore) {
            let mut tx = tx_slots[i].lock().expect("producer slot");
            let cs0 = involuntary_switches();
            barrier(&st.ready, participants);
            match rp.mode {
                Mode::Throughput => {
                    sent[i].store(produce_flat_out(&mut *tx, rp), Ordering::Relaxed)
                }
                Mode::Latency => {
                    let (n, m, c) = produce_paced(&mut *tx, rp, &st);
                    sent[i].store(n, Ordering::Relaxed);
                    missed.fetch_add(m, Ordering::Relaxed);
                    producer_cycles.fetch_max(c, Ordering::Relaxed);
                }
            }
            // Release: everything sent above happens before the consumer
            // sees this count.
            st.done.fetch_add(1, Ordering::Release);
            st.ctx_switches
                .fetch_add(involuntary_switches() - cs0, Ordering::Relaxed);
        }
    })
    .map_err(|e| e.to_string())?;

    let (received, checksum, elapsed_cycles, negative, nw) = consumer_out
        .into_inner()
        .expect("consumer result")
        .ok_or("the consumer lcore did not run")?;
    let (_rx, mut bufs) = CachePadded::into_inner(*rx_slot)
        .into_inner()
        .expect("consumer slot");
    bufs.tp_windows.truncate(nw);

    let (lat_all, lat_clean, windows_total, windows_clean) = merge_latency(&bufs.lat, &st, rp);
    Ok(RunOut {
        sent: sent.iter().map(|s| s.load(Ordering::Relaxed)).sum(),
        received,
        checksum,
        elapsed_cycles,
        tp_windows: bufs.tp_windows,
        lat_all,
        lat_clean,
        windows_total,
        windows_clean,
        missed_slots: missed.load(Ordering::Relaxed),
        negative,
        producer_cycles: producer_cycles.load(Ordering::Relaxed),
        ctx_switches: st.ctx_switches.load(Ordering::Relaxed),
    })
}

/// Builds a fresh queue of contender `c` for `producers` producers and runs
/// one measurement on it.
#[allow(clippy::too_many_arguments)]
fn run_config(
    eal: &Eal,
    roles: &Roles,
    mem: &Arc<dyn UnitMemory>,
    socket: i32,
    c: Contender,
    producers: usize,
    depth: usize,
    rp: &RunParams,
) -> Result<RunOut, String> {
    let roles = Roles {
        producers: &roles.producers[..producers],
        consumer: roles.consumer,
    };
    let burst = rp.burst;
    match c {
        Contender::TqSharded => {
            let (txs, rx) = queue::sharded::<u64>(producers, depth, burst, mem.clone())
                .map_err(|e| e.to_string())?;
            run_once(eal, &roles, txs, rx, rp)
        }
        Contender::TqShared => {
            let (txs, rx) = queue::channel::<u64>(producers, depth, burst, mem.clone())
                .map_err(|e| e.to_string())?;
            run_once(eal, &roles, txs, rx, rp)
        }
        Contender::RingSpsc if producers == 1 => {
            let (tx, rx) =
                Ring::<u64>::spsc("qbs", depth as u32, socket).map_err(|e| e.to_string())?;
            run_once(eal, &roles, vec![tx], rx, rp)
        }
        Contender::RingSpsc => {
            // One SP/SC ring per producer, the depth split as for the TQ,
            // polled with the rotation TQ sharded's consumer uses.
            let per = (depth / producers).max(burst) as u32;
            let mut txs = Vec::with_capacity(producers);
            let mut rxs = Vec::with_capacity(producers);
            for _ in 0..producers {
                let (tx, rx) = Ring::<u64>::spsc("qbs", per, socket).map_err(|e| e.to_string())?;
                txs.push(tx);
                rxs.push(rx);
            }
            run_once(eal, &roles, txs, queue::RoundRobin::new(rxs), rp)
        }
        Contender::RingMpsc => {
            let (txs, rx) = Ring::<u64>::mpsc("qbm", depth as u32, socket, producers)
                .map_err(|e| e.to_string())?;
            run_once(eal, &roles, txs, rx, rp)
        }
    }
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

/// Key of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    producers: usize,
    contender: Contender,
    burst: usize,
    depth: usize,
}

/// Per-round figures of one configuration (one entry per round; NaN when a
/// round has no figure, e.g. no clean latency window).
#[derive(Debug, Default, Clone)]
struct Samples {
    /// Throughput from the median window of the run.
    mitems_s: Vec<f64>,
    cycles_per_item: Vec<f64>,
    /// Throughput over the whole run (start barrier to drained).
    mitems_s_whole: Vec<f64>,
    cycles_per_item_whole: Vec<f64>,
    /// Latency over the clean windows (no bench thread descheduled).
    p50_ns: Vec<f64>,
    p99_ns: Vec<f64>,
    p999_ns: Vec<f64>,
    max_ns: Vec<f64>,
    /// Latency over every window after the warm-up.
    p50_ns_all: Vec<f64>,
    p99_ns_all: Vec<f64>,
    p999_ns_all: Vec<f64>,
    max_ns_all: Vec<f64>,
    /// Share of the latency windows that were clean (%).
    clean_pct: Vec<f64>,
    /// Involuntary context switches of the bench threads (throughput +
    /// latency run).
    ctx_switches: Vec<f64>,
    /// Items/s the paced producers actually offered (Mitems/s).
    offered_mitems_s: Vec<f64>,
    latency_samples_clean: u64,
    latency_samples_all: u64,
    /// Latency samples of every round pooled: clean windows, and all windows.
    pooled_clean: Histogram,
    pooled_all: Histogram,
    windows_clean: u64,
    windows_total: u64,
    missed_slots: u64,
    negative: u64,
    items_throughput: u64,
}

/// Median of the finite values (NaN when there are none).
fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Median, min, max and every round's value (null where a round had none).
fn stats(v: &[f64]) -> Value {
    let fin = v.iter().copied().filter(|x| x.is_finite());
    let min = fin.clone().fold(f64::INFINITY, f64::min);
    let max = fin.fold(f64::NEG_INFINITY, f64::max);
    json!({ "median": num(median(v)), "min": num(min), "max": num(max), "rounds": v.iter().map(|&x| num(x)).collect::<Vec<_>>() })
}

/// A JSON number rounded to 3 decimals, or null when not finite.
fn num(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

// ---------------------------------------------------------------------------
// Anchor: dpdk-test ring_perf_autotest
// ---------------------------------------------------------------------------

/// The "two physical cores" figures of `ring_perf_autotest` (legacy API,
/// pointer-sized elements like our `u64`), cycles per element: the median
/// over the runs in the log, and each run's value.
#[derive(Debug, Default, Clone)]
struct Anchor {
    lines: Vec<AnchorLine>,
    error: Option<String>,
}

#[derive(Debug, Clone)]
struct AnchorLine {
    label: String,
    median: f64,
    runs: Vec<f64>,
}

impl Anchor {
    fn get(&self, what: &str) -> Option<f64> {
        self.lines
            .iter()
            .find(|l| l.label.contains(what))
            .map(|l| l.median)
    }
}

/// Parses one or more concatenated `dpdk-test ring_perf_autotest` outputs.
fn parse_anchor(text: &str) -> Result<Vec<AnchorLine>, String> {
    const SECTION: &str = "### Testing using two physical cores ###";
    let mut lines: Vec<AnchorLine> = Vec::new();
    for (start, _) in text.match_indices(SECTION) {
        for line in text[start + SECTION.len()..].lines() {
            let line = line.trim();
            if line.starts_with("###") {
                break;
            }
            // The elem-API section (16-byte elements) has the same title;
            // only the legacy lines (8-byte elements) are kept.
            if !line.starts_with("legacy APIs:") {
                continue;
            }
            let Some((label, value)) = line.rsplit_once(':') else {
                continue;
            };
            let Ok(v) = value.trim().parse::<f64>() else {
                continue;
            };
            let label = label.trim();
            match lines.iter_mut().find(|l| l.label == label) {
                Some(l) => l.runs.push(v),
                None => lines.push(AnchorLine {
                    label: label.to_string(),
                    median: 0.0,
                    runs: vec![v],
                }),
            }
        }
    }
    if lines.is_empty() {
        return Err("no \"two physical cores\" figures in the dpdk-test output (the two lcores may be hyperthreads of one core, or the test failed)".into());
    }
    let runs = lines.iter().map(|l| l.runs.len()).max().unwrap_or(0);
    let ok = text.matches("Test OK").count();
    if ok < runs {
        return Err(format!(
            "ring_perf_autotest reported \"Test OK\" {ok} times for {runs} runs"
        ));
    }
    for l in &mut lines {
        l.median = median(&l.runs);
    }
    Ok(lines)
}

fn load_anchor(args: &Args) -> Anchor {
    if let Some(e) = &args.anchor_error {
        return Anchor {
            lines: Vec::new(),
            error: Some(e.clone()),
        };
    }
    let Some(path) = &args.anchor else {
        return Anchor {
            lines: Vec::new(),
            error: Some("not run (no --anchor file given)".into()),
        };
    };
    match std::fs::read_to_string(path) {
        Ok(text) => match parse_anchor(&text) {
            Ok(lines) => Anchor { lines, error: None },
            Err(e) => Anchor {
                lines: Vec::new(),
                error: Some(e),
            },
        },
        Err(e) => Anchor {
            lines: Vec::new(),
            error: Some(format!("cannot read {}: {e}", path.display())),
        },
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

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
    let plan = match plan_from(&args) {
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
    let code = match bench(&eal, &args, &plan) {
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

/// What every measurement of one bench shares.
struct Bench<'a> {
    eal: &'a Eal,
    roles: Roles<'a>,
    mem: Arc<dyn UnitMemory>,
    socket: i32,
    plan: &'a Plan,
    tsc_hz: u64,
    /// Latency windows are `2^window_shift` TSC cycles.
    window_shift: u32,
    /// A gap of [`GAP_NS`] in TSC cycles.
    gap_cycles: u64,
}

impl Bench<'_> {
    fn ms_to_cycles(&self, ms: u64) -> u64 {
        (ms as u128 * self.tsc_hz as u128 / 1000) as u64
    }

    fn throughput_params(&self, burst: usize) -> RunParams {
        RunParams {
            mode: Mode::Throughput,
            burst,
            run_cycles: self.ms_to_cycles(self.plan.duration_ms),
            interval_cycles: 0,
            window_items: TP_WINDOW_BURSTS * burst as u64,
            window_shift: self.window_shift,
            warmup_windows: 0,
            windows: 0,
            gap_cycles: self.gap_cycles,
        }
    }

    /// Each producer offers `rate / producers`, one burst per interval.
    fn latency_params(&self, burst: usize, producers: usize) -> RunParams {
        let per_producer = self.plan.rate_items_s / producers as f64;
        let run_cycles = self.ms_to_cycles(self.plan.latency_ms);
        RunParams {
            mode: Mode::Latency,
            burst,
            run_cycles,
            interval_cycles: ((burst as f64 * self.tsc_hz as f64 / per_producer).round() as u64)
                .max(1),
            window_items: 0,
            window_shift: self.window_shift,
            // First 10 % of the run, rounded up to whole windows.
            warmup_windows: (run_cycles / 10).div_ceil(1 << self.window_shift) as usize,
            windows: (run_cycles >> self.window_shift) as usize + 2,
            gap_cycles: self.gap_cycles,
        }
    }

    /// One configuration, one round: a throughput run then a latency run,
    /// each on a fresh queue and checked; their figures go into `s`.
    fn measure(&self, key: &Key, s: &mut Samples) -> Result<(), String> {
        let tp = self.throughput_params(key.burst);
        let out = self.run(key, &tp)?;
        check_accounting(key, Mode::Throughput, &out)?;
        s.record_throughput(&out, &tp, self.tsc_hz);
        let ctx_tp = out.ctx_switches;

        let lp = self.latency_params(key.burst, key.producers);
        let out = self.run(key, &lp)?;
        check_accounting(key, Mode::Latency, &out)?;
        s.record_latency(&out, ctx_tp, self.tsc_hz);
        Ok(())
    }

    fn run(&self, key: &Key, rp: &RunParams) -> Result<RunOut, String> {
        run_config(
            self.eal,
            &self.roles,
            &self.mem,
            self.socket,
            key.contender,
            key.producers,
            key.depth,
            rp,
        )
    }

    /// Every round over every configuration; the contenders of one
    /// configuration run back to back, starting one later every round so
    /// none always goes first.
    fn rounds(&self, producer_counts: &[usize]) -> Result<HashMap<Key, Samples>, String> {
        let plan = self.plan;
        let mut results: HashMap<Key, Samples> = HashMap::new();
        for round in 0..plan.rounds {
            let t_round = Instant::now();
            for &producers in producer_counts {
                for &burst in &plan.bursts {
                    for &depth in &plan.depths {
                        let n = plan.contenders.len();
                        for k in 0..n {
                            let key = Key {
                                producers,
                                contender: plan.contenders[(k + round as usize) % n],
                                burst,
                                depth,
                            };
                            self.measure(&key, results.entry(key).or_default())?;
                        }
                    }
                }
            }
            eprintln!(
                "tqfwd-queue-bench: round {}/{} done in {:.1} s (load {})",
                round + 1,
                plan.rounds,
                t_round.elapsed().as_secs_f64(),
                loadavg()
            );
        }
        Ok(results)
    }
}

impl Samples {
    /// Files one throughput run: the median window's cycles/item (the whole
    /// run's if it had fewer than 5 windows) and the whole run's.
    fn record_throughput(&mut self, out: &RunOut, tp: &RunParams, tsc_hz: u64) {
        self.items_throughput += out.received;
        let whole = out.elapsed_cycles as f64 / out.received as f64;
        self.cycles_per_item_whole.push(whole);
        self.mitems_s_whole.push(tsc_hz as f64 / whole / 1e6);
        let win: Vec<f64> = out.tp_windows.iter().map(|&c| c as f64).collect();
        let cyc = if win.len() >= 5 {
            median(&win) / tp.window_items as f64
        } else {
            whole
        };
        self.cycles_per_item.push(cyc);
        self.mitems_s.push(tsc_hz as f64 / cyc / 1e6);
    }

    /// Files one latency run (`ctx_tp`: the context switches of the
    /// throughput run before it, counted with this run's).
    fn record_latency(&mut self, out: &RunOut, ctx_tp: u64, tsc_hz: u64) {
        let ns = |cyc: u64| cycles_to_ns(cyc as f64, tsc_hz);
        let pct = |h: &Histogram, p: f64| {
            if h.count() > 0 {
                ns(h.percentile(p))
            } else {
                f64::NAN
            }
        };
        let (hc, ha) = (&out.lat_clean, &out.lat_all);
        self.p50_ns.push(pct(hc, 50.0));
        self.p99_ns.push(pct(hc, 99.0));
        self.p999_ns.push(pct(hc, 99.9));
        self.max_ns.push(pct(hc, 100.0));
        self.p50_ns_all.push(pct(ha, 50.0));
        self.p99_ns_all.push(pct(ha, 99.0));
        self.p999_ns_all.push(pct(ha, 99.9));
        self.max_ns_all.push(pct(ha, 100.0));
        self.clean_pct
            .push(100.0 * out.windows_clean as f64 / out.windows_total.max(1) as f64);
        self.ctx_switches.push((ctx_tp + out.ctx_switches) as f64);
        let psecs = out.producer_cycles.max(1) as f64 / tsc_hz as f64;
        self.offered_mitems_s.push(out.sent as f64 / psecs / 1e6);
        self.latency_samples_clean += hc.count();
        self.latency_samples_all += ha.count();
        self.pooled_clean.merge(hc);
        self.pooled_all.merge(ha);
        self.windows_clean += out.windows_clean as u64;
        self.windows_total += out.windows_total as u64;
        self.missed_slots += out.missed_slots;
        self.negative += out.negative;
    }
}

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
        eal,
        roles: Roles {
            producers: &topo.producer_lcores,
            consumer: topo.consumer,
        },
        mem: Arc::new(SocketMemory {
            socket: topo.socket,
        }),
        socket: topo.socket,
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
/// Received == sent, and (throughput mode) every item carried the 1 it was
/// sent with; otherwise an error that ends the bench with exit code 1.
fn check_accounting(key: &Key, mode: Mode, out: &RunOut) -> Result<(), String> {
    let what = format!(
        "{} with {} producer(s), burst {}, depth {}, {:?} run",
        key.contender.name(),
        key.producers,
        key.burst,
        key.depth,
        mode
    );
    if out.received != out.sent {
        return Err(format!(
            "items lost or duplicated: {what}: sent {}, received {}",
            out.sent, out.received
        ));
    }
    if mode == Mode::Throughput && out.checksum != out.received {
        return Err(format!(
            "items corrupted: {what}: {} items should sum to {}, got {}",
            out.received, out.received, out.checksum
        ));
    }
    if out.sent == 0 {
        return Err(format!("nothing was sent: {what}"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Report: markdown table, anchor, targets, JSON
// ---------------------------------------------------------------------------

/// Everything a report is made from.
struct Report<'a> {
    args: &'a Args,
    plan: &'a Plan,
    results: &'a HashMap<Key, Samples>,
    producer_counts: &'a [usize],
    skipped_multi: bool,
    lcores: &'a [Lcore],
    producer_lcores: &'a [Lcore],
    consumer: Lcore,
    tsc_hz: u64,
    anchor: &'a Anchor,
    window_shift: u32,
    load_start: &'a str,
    load_end: &'a str,
    wall_s: f64,
}

impl Report<'_> {
    /// Median over the rounds of one figure of `k` (NaN if `k` did not run).
    fn med(&self, k: &Key, f: fn(&Samples) -> &Vec<f64>) -> f64 {
        self.results
            .get(k)
            .map(|s| median(f(s)))
            .unwrap_or(f64::NAN)
    }

    /// Pooled clean-window percentile in ns; NaN with too few samples.
    fn pooled(&self, s: &Samples, p: f64) -> f64 {
        if s.pooled_clean.count() >= MIN_CLEAN_SAMPLES {
            cycles_to_ns(s.pooled_clean.percentile(p) as f64, self.tsc_hz)
        } else {
            f64::NAN
        }
    }

    fn pooled_p99(&self, k: &Key) -> f64 {
        self.results
            .get(k)
            .map(|s| self.pooled(s, 99.0))
            .unwrap_or(f64::NAN)
    }

    /// The configurations that ran, in table order.
    fn measured(&self) -> Vec<(Key, &Samples)> {
        let plan = self.plan;
        let mut out = Vec::new();
        for &producers in self.producer_counts {
            for &burst in &plan.bursts {
                for &depth in &plan.depths {
                    for &contender in &plan.contenders {
                        let k = Key {
                            producers,
                            contender,
                            burst,
                            depth,
                        };
                        if let Some(s) = self.results.get(&k) {
                            out.push((k, s));
                        }
                    }
                }
            }
        }
        out
    }

    /// The text of the skipped multi-producer rows, if there are any.
    fn skipped_why(&self) -> Option<String> {
        self.skipped_multi
            .then(|| format!("skipped: needs ≥3 lcores (have {})", self.lcores.len()))
    }
}

/// The same configuration on rte_ring SP/SC: the baseline of the ratios.
fn baseline(k: &Key) -> Key {
    Key {
        contender: Contender::RingSpsc,
        ..*k
    }
}

/// The figures of one measured configuration that the table and the JSON
/// both show, computed once.
struct Row<'a> {
    key: Key,
    s: &'a Samples,
    cycles: f64,
    p99: f64,
    ratio_cycles: f64,
    ratio_p99: f64,
    clean_pct: f64,
    p99_all: f64,
}

fn row<'a>(r: &Report, key: Key, s: &'a Samples) -> Row<'a> {
    let cycles = median(&s.cycles_per_item);
    let p99 = r.pooled(s, 99.0);
    let b = baseline(&key);
    Row {
        key,
        s,
        cycles,
        p99,
        ratio_cycles: cycles / r.med(&b, |s| &s.cycles_per_item),
        ratio_p99: p99 / r.pooled_p99(&b),
        clean_pct: 100.0 * s.windows_clean as f64 / s.windows_total.max(1) as f64,
        p99_all: if s.pooled_all.count() > 0 {
            cycles_to_ns(s.pooled_all.percentile(99.0) as f64, r.tsc_hz)
        } else {
            f64::NAN
        },
    }
}

fn fmt_ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "–".into()
    }
}

fn fmt0(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        "–".into()
    }
}

fn fmt1(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1}")
    } else {
        "–".into()
    }
}

/// Prints the report on stdout (markdown) and writes the JSON. A run with no
/// measured configuration is an error: no empty table, no verdict.
fn report(r: Report) -> Result<(), String> {
    if r.results.is_empty() {
        return Err("no configuration ran: no table, no verdict".into());
    }
    let rows: Vec<Row> = r
        .measured()
        .into_iter()
        .map(|(k, s)| row(&r, k, s))
        .collect();
    print_table(&r, &rows);
    print_anchor(r.anchor);
    let targets = targets(&r);
    print_targets(&targets);
    if let Some(path) = &r.args.json {
        write_json(&r, &rows, &targets, path)?;
    }
    Ok(())
}

// ---- Markdown table ---------------------------------------------------------

fn print_table(r: &Report, rows: &[Row]) {
    let plan = r.plan;
    println!("## Hand-off queue benchmark (tqfwd-queue-bench)");
    println!();
    println!(
        "{}; TSC {} Hz; lcores {:?} (producers {:?}, consumer {}); {} rounds, medians; \
         throughput runs {} ms, latency runs {} ms at {} Mitems/s offered (first 10 % warm-up); load {} -> {}{}",
        dpdk::version(),
        r.tsc_hz,
        r.lcores,
        r.producer_lcores,
        r.consumer,
        plan.rounds,
        plan.duration_ms,
        plan.latency_ms,
        plan.rate_items_s / 1e6,
        r.load_start,
        r.load_end,
        if r.args.note.is_empty() { String::new() } else { format!("; {}", r.args.note) }
    );
    println!();
    println!(
        "| producers | contender | burst | depth | Mitems/s | cycles/item | whole-run cycles/item | p50 ns | p99 ns | p99.9 ns \
         | cycles/item ÷ ring SP/SC | p99 ÷ ring SP/SC | clean latency windows | p99 ns, all windows | preemptions |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for w in rows {
        let (k, s) = (&w.key, w.s);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}% | {} | {} |",
            k.producers,
            k.contender.name(),
            k.burst,
            k.depth,
            fmt1(median(&s.mitems_s)),
            fmt1(w.cycles),
            fmt1(median(&s.cycles_per_item_whole)),
            fmt0(r.pooled(s, 50.0)),
            fmt0(w.p99),
            fmt0(r.pooled(s, 99.9)),
            fmt_ratio(w.ratio_cycles),
            fmt_ratio(w.ratio_p99),
            fmt0(w.clean_pct),
            fmt0(w.p99_all),
            fmt0(median(&s.ctx_switches)),
        );
    }
    if let Some(why) = r.skipped_why() {
        for &c in &plan.contenders {
            println!("| ≥2 | {} | – | – | {why} | | | | | | | | | | |", c.name());
        }
    }
    println!();
}

// ---- Anchor -----------------------------------------------------------------

fn print_anchor(anchor: &Anchor) {
    println!("### Anchor: dpdk-test ring_perf_autotest, \"two physical cores\" (cycles per element, ring of {ANCHOR_RING_SIZE})");
    println!();
    match &anchor.error {
        Some(e) => println!("dpdk-test anchor failed: {e}"),
        None => {
            for l in &anchor.lines {
                let runs: Vec<String> = l.runs.iter().map(|v| format!("{v}")).collect();
                println!(
                    "- {}: {} (median of {} runs: {})",
                    l.label,
                    l.median,
                    l.runs.len(),
                    runs.join(", ")
                );
            }
        }
    }
    println!();
}

fn anchor_json(anchor: &Anchor) -> Value {
    match &anchor.error {
        Some(e) => json!({ "ok": false, "error": e }),
        None => json!({
            "ok": true,
            "source": "dpdk-test ring_perf_autotest, section \"Testing using two physical cores\", legacy APIs (8-byte elements), cycles per element = enqueue side + dequeue side (about 2x wall-clock cycles per element); median over the runs",
            "lines": anchor.lines.iter().map(|l| json!({ "what": l.label, "cycles_per_element_median": l.median, "runs": l.runs })).collect::<Vec<_>>(),
        }),
    }
}

// ---- Targets and verdicts ---------------------------------------------------

/// One target: the lines it prints and its JSON entry.
struct Target {
    lines: Vec<String>,
    json: Value,
}

/// Verdict of a ratio whose target is ≤ 0.50: `met`, `missed by N×`, or
/// `n/a` when a side has no figure (its configuration did not run).
fn verdict_half(ratio: f64) -> String {
    if !ratio.is_finite() {
        "n/a: no figure".to_string()
    } else if ratio <= 0.5 {
        "met".to_string()
    } else {
        format!("missed by {:.2}×", ratio / 0.5)
    }
}

/// The JSON `met` of a ratio whose target is ≤ 0.50 (null when n/a).
fn met_half(ratio: f64) -> Value {
    if ratio.is_finite() {
        json!(ratio <= 0.5)
    } else {
        Value::Null
    }
}

fn targets(r: &Report) -> Vec<Target> {
    let plan = r.plan;
    let have = |c: Contender| plan.contenders.contains(&c);
    let mut t = Vec::new();
    if !(have(Contender::TqSharded) && have(Contender::RingSpsc)) {
        return t;
    }
    if plan.bursts.contains(&32) {
        t.extend(plan.depths.iter().map(|&d| target_vs_ring(r, d)));
        if let Some(a) = r.anchor.get("SP/SC: bulk (size: 32)") {
            t.push(target_vs_anchor(r, a));
        }
    }
    t.push(target_p99(r));
    t
}

/// Burst 32, one producer: the TQ sharded's cycles/item of `depth` against
/// the key's rte_ring SP/SC.
fn b32_key(depth: usize) -> Key {
    Key {
        producers: 1,
        contender: Contender::TqSharded,
        burst: 32,
        depth,
    }
}

fn target_vs_ring(r: &Report, depth: usize) -> Target {
    let k = b32_key(depth);
    let tq = r.med(&k, |s| &s.cycles_per_item);
    let ring = r.med(&baseline(&k), |s| &s.cycles_per_item);
    let ratio = tq / ring;
    let line = if ratio.is_finite() {
        format!(
            "- TQ sharded burst 32, depth {depth}: {tq:.2} cycles/item vs rte_ring SP/SC {ring:.2} (this run) = {ratio:.2}× (target ≤ 0.50: {})",
            verdict_half(ratio)
        )
    } else {
        format!("- TQ sharded burst 32, depth {depth} vs rte_ring SP/SC: n/a (no single-producer figure for both in this run)")
    };
    Target {
        lines: vec![line],
        json: json!({ "target": "tq_sharded_b32_vs_ring_spsc_b32_cycles", "depth": depth, "tq": num(tq), "ring": num(ring), "ratio": num(ratio), "met": met_half(ratio) }),
    }
}

/// Against `ring_perf_autotest`'s SP/SC bulk 32 line `a`. It prints
/// enqueue-side + dequeue-side cycles per element; both sides run for the
/// whole test, so half of it is the wall-clock cycles per element, the
/// footing of our cycles/item.
fn target_vs_anchor(r: &Report, a: f64) -> Target {
    let plan = r.plan;
    let depth = if plan.depths.contains(&ANCHOR_RING_SIZE) {
        ANCHOR_RING_SIZE
    } else {
        plan.depths[0]
    };
    let k = b32_key(depth);
    let tq = r.med(&k, |s| &s.cycles_per_item);
    let ring = r.med(&baseline(&k), |s| &s.cycles_per_item);
    let ratio = tq / a;
    if !(tq.is_finite() && ring.is_finite()) {
        return Target {
            lines: vec![format!("- TQ sharded burst 32, depth {depth} vs ring_perf_autotest SP/SC bulk 32: n/a (no single-producer figure for TQ sharded and rte_ring SP/SC in this run)")],
            json: json!({ "target": "tq_sharded_b32_vs_ring_perf_spsc_bulk32", "depth": depth, "tq": num(tq), "anchor_as_printed": a, "met": Value::Null }),
        };
    }
    let mut lines = vec![
        format!(
            "- TQ sharded burst 32, depth {depth}: {tq:.2} cycles/item vs ring_perf_autotest SP/SC bulk 32 as printed {a:.2} = {ratio:.2}× (target ≤ 0.50: {})",
            verdict_half(ratio)
        ),
        format!(
            "- ring_perf_autotest prints the sum of its enqueue-side and dequeue-side cycles per element, so its wall-clock \
             equivalent is {:.2}; our rte_ring SP/SC burst 32 depth {depth}: {ring:.2} cycles/item ({:.2}× that), TQ sharded {:.2}×",
            a / 2.0,
            ring / (a / 2.0),
            tq / (a / 2.0)
        ),
    ];
    let disturbed = a / 2.0 > ring;
    if disturbed {
        lines.push(
            "- warning: the anchor's wall-clock equivalent is above our own rte_ring SP/SC figure; \
             ring_perf_autotest has no stall filtering, so it was probably disturbed: rerun on a quiet machine"
                .to_string(),
        );
    }
    Target {
        lines,
        json: json!({
            "anchor_probably_disturbed": disturbed,
            "target": "tq_sharded_b32_vs_ring_perf_spsc_bulk32",
            "depth": depth,
            "tq": num(tq),
            "anchor_as_printed": a,
            "anchor_wall_equivalent": num(a / 2.0),
            "ratio_vs_printed": num(ratio),
            "ratio_vs_wall_equivalent": num(tq / (a / 2.0)),
            "our_ring_spsc_vs_wall_equivalent": num(ring / (a / 2.0)),
            "met": met_half(ratio),
        }),
    }
}

/// p99 of TQ sharded below rte_ring SP/SC's, one producer, every (burst,
/// depth) where both ran and have enough clean samples; `n/a` when none
/// has.
fn target_p99(r: &Report) -> Target {
    let (mut met, mut total, mut skipped) = (0, 0, 0);
    for &burst in &r.plan.bursts {
        for &depth in &r.plan.depths {
            let k = Key {
                producers: 1,
                contender: Contender::TqSharded,
                burst,
                depth,
            };
            if !(r.results.contains_key(&k) && r.results.contains_key(&baseline(&k))) {
                continue; // not run: neither compared nor short of samples
            }
            let tq = r.pooled_p99(&k);
            let ring = r.pooled_p99(&baseline(&k));
            if !(tq.is_finite() && ring.is_finite()) {
                skipped += 1;
                continue;
            }
            total += 1;
            if tq < ring {
                met += 1;
            }
        }
    }
    let without = if skipped > 0 {
        format!(" ({skipped} without enough clean samples)")
    } else {
        String::new()
    };
    let line = if total == 0 {
        format!("- p99 (clean windows) of TQ sharded below rte_ring SP/SC at equal load: n/a, no (burst, depth) configuration to compare{without}")
    } else {
        format!("- p99 (clean windows) of TQ sharded below rte_ring SP/SC at equal load: {met} of {total} (burst, depth) configurations{without}")
    };
    Target {
        lines: vec![line],
        json: json!({ "target": "tq_sharded_p99_below_ring_spsc", "met_configs": met, "total_configs": total, "configs_without_enough_clean_samples": skipped }),
    }
}

fn print_targets(targets: &[Target]) {
    println!("### Targets (figures, not assertions)");
    println!();
    for l in targets.iter().flat_map(|t| &t.lines) {
        println!("{l}");
    }
    println!();
}

// ---- JSON -------------------------------------------------------------------

fn row_json(w: &Row, r: &Report) -> Value {
    let (k, s) = (&w.key, w.s);
    json!({
        "producers": k.producers,
        "contender": k.contender.key(),
        "contender_name": k.contender.name(),
        "burst": k.burst,
        "depth": k.depth,
        "status": "ok",
        "mitems_per_s": stats(&s.mitems_s),
        "cycles_per_item": stats(&s.cycles_per_item),
        "mitems_per_s_whole_run": stats(&s.mitems_s_whole),
        "cycles_per_item_whole_run": stats(&s.cycles_per_item_whole),
        "p50_ns": num(r.pooled(s, 50.0)),
        "p99_ns": num(w.p99),
        "p999_ns": num(r.pooled(s, 99.9)),
        "max_ns": num(r.pooled(s, 100.0)),
        "clean_latency_windows_pct": num(w.clean_pct),
        "all_windows_p99_ns": num(w.p99_all),
        "per_round_p50_ns": stats(&s.p50_ns),
        "per_round_p99_ns": stats(&s.p99_ns),
        "per_round_p999_ns": stats(&s.p999_ns),
        "per_round_max_ns": stats(&s.max_ns),
        "per_round_all_windows_p50_ns": stats(&s.p50_ns_all),
        "per_round_all_windows_p99_ns": stats(&s.p99_ns_all),
        "per_round_all_windows_p999_ns": stats(&s.p999_ns_all),
        "per_round_all_windows_max_ns": stats(&s.max_ns_all),
        "per_round_clean_latency_windows_pct": stats(&s.clean_pct),
        "involuntary_context_switches": stats(&s.ctx_switches),
        "offered_mitems_per_s": stats(&s.offered_mitems_s),
        "ratio_cycles_vs_ring_spsc": num(w.ratio_cycles),
        "ratio_p99_vs_ring_spsc": num(w.ratio_p99),
        "throughput_items_total": s.items_throughput,
        "latency_samples_clean_total": s.latency_samples_clean,
        "latency_samples_all_total": s.latency_samples_all,
        "latency_missed_pacing_slots": s.missed_slots,
        "latency_negative_samples": s.negative,
    })
}

fn write_json(
    r: &Report,
    rows: &[Row],
    targets: &[Target],
    path: &std::path::Path,
) -> Result<(), String> {
    let plan = r.plan;
    let mut results: Vec<Value> = rows.iter().map(|w| row_json(w, r)).collect();
    if let Some(why) = r.skipped_why() {
        for &c in &plan.contenders {
            results.push(json!({ "producers": ">=2", "contender": c.key(), "contender_name": c.name(), "status": why }));
        }
    }
    let doc = json!({
        "tool": "tqfwd-queue-bench",
        "version": env!("CARGO_PKG_VERSION"),
        "label": r.args.label,
        "note": r.args.note,
        "dpdk": dpdk::version(),
        "tsc_hz": r.tsc_hz,
        "lcores": r.lcores,
        "producer_lcores": r.producer_lcores,
        "consumer_lcore": r.consumer,
        "item": "u64",
        "method": {
            "rounds": plan.rounds,
            "throughput_run_ms": plan.duration_ms,
            "latency_run_ms": plan.latency_ms,
            "latency_warmup_fraction": 0.1,
            "latency_offered_mitems_per_s": plan.rate_items_s / 1e6,
            "alternation": "per (producers, burst, depth): contenders back to back, order rotated each round; medians over rounds",
            "cycles_per_item": "median over the run's windows of (consumer TSC cycles per window / items per window), windows of 2048 bursts; *_whole_run: start barrier to last item drained / items received",
            "latency": "consumer TSC after receive minus producer TSC before send, log-linear histogram, bucket upper bound (<= 3.1 % above); p50/p99/p999/max pooled over all rounds' ~0.23 ms windows in which no bench thread stalled > 20 us (null below 20000 samples), all_windows_p99 pooled over every window after warm-up; per_round_*: each round's own figures",
            "latency_window_cycles": 1u64 << r.window_shift,
            "stall_gap_ns": GAP_NS,
        },
        "load_avg_start": r.load_start,
        "load_avg_end": r.load_end,
        "wall_seconds": num(r.wall_s),
        "results": results,
        "anchor": anchor_json(r.anchor),
        "targets": targets.iter().map(|t| t.json.clone()).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("tqfwd-queue-bench: wrote {}", path.display());
    Ok(())
}
