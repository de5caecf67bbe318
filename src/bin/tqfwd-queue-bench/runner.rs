//! Running the measurements: the producer and consumer loops (the code that
//! is timed), one run on the EAL lcores ([`run_once`]: one thread per lcore,
//! start barrier, TSC timing, stall marking, drain) and [`Lab`], where the
//! runs of one bench take place. It knows no contender, plan or result
//! file: those import it (the rounds over them are `rounds.rs`).
//!
//! Promises: no allocation, logging or formatting inside the measured loops
//! (stack buffers; windows and histograms are allocated before the run);
//! each side's queue handle sits in its own cache-line-padded slot; after
//! every run the producers stop and the consumer drains.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;
use tqfwd::counters::latency::Histogram;
use tqfwd::dpdk::{self, Eal, Lcore};
use tqfwd::queue::{self, BurstReceiver, BurstSender, UnitMemory};

/// Largest burst the bench accepts (sizes its stack buffers).
pub(crate) const MAX_BURST: usize = queue::MAX_BURST;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Throughput,
    Latency,
}

/// Most throughput windows one run records (later ones are not recorded).
const MAX_TP_WINDOWS: usize = 16_384;

/// Throughput window length, in bursts: long enough to amortise the TSC read
/// (about 0.1–1 ms of hand-offs), short enough to get ~100+ windows per run.
pub(crate) const TP_WINDOW_BURSTS: u64 = 2048;

/// A thread that saw more than this between two iterations of its own loop
/// was descheduled or interrupted (the loops themselves take < 1 µs).
pub(crate) const GAP_NS: u64 = 20_000;

/// Parameters of one run, in TSC cycles.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunParams {
    pub(crate) mode: Mode,
    pub(crate) burst: usize,
    /// How long producers send.
    pub(crate) run_cycles: u64,
    /// Latency mode: cycles between two bursts of one producer.
    pub(crate) interval_cycles: u64,
    /// Throughput mode: items per measurement window.
    pub(crate) window_items: u64,
    /// Latency mode: windows are `2^window_shift` cycles (about 0.25 ms).
    pub(crate) window_shift: u32,
    /// Latency mode: windows before this one are warm-up, not recorded.
    pub(crate) warmup_windows: usize,
    /// Latency mode: number of windows covering the run.
    pub(crate) windows: usize,
    /// Latency mode: gap (cycles) that marks a descheduled thread.
    pub(crate) gap_cycles: u64,
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
pub(crate) struct RunOut {
    pub(crate) sent: u64,
    pub(crate) received: u64,
    /// Sum of the received items' values (throughput mode: every item is 1).
    pub(crate) checksum: u64,
    /// Consumer-side cycles from the start barrier to the last item drained.
    pub(crate) elapsed_cycles: u64,
    /// Throughput: the recorded windows (cycles per `window_items` items).
    pub(crate) tp_windows: Vec<u64>,
    /// Latency: all samples after the warm-up, and those of the windows in
    /// which no bench thread was descheduled.
    pub(crate) lat_all: Histogram,
    pub(crate) lat_clean: Histogram,
    pub(crate) windows_total: usize,
    pub(crate) windows_clean: usize,
    /// Latency mode: pacing slots the producers missed (they were behind by a
    /// whole interval, e.g. descheduled) and skipped rather than catching up.
    pub(crate) missed_slots: u64,
    /// Latency mode: samples where the consumer's TSC was below the stamp
    /// (unsynchronised TSCs; recorded as 0).
    pub(crate) negative: u64,
    /// Latency mode: producers' own elapsed cycles (for the achieved rate).
    pub(crate) producer_cycles: u64,
    /// Involuntary context switches of the bench threads during the run.
    pub(crate) ctx_switches: u64,
}

/// The lcores of a run.
pub(crate) struct Roles<'a> {
    pub(crate) producers: &'a [Lcore],
    pub(crate) consumer: Lcore,
}

/// Waits until `n` participants have arrived.
#[inline]
pub(crate) fn barrier(ready: &AtomicUsize, n: usize) {
    ready.fetch_add(1, Ordering::AcqRel);
    while ready.load(Ordering::Acquire) < n {
        dpdk::pause();
    }
}

/// The calling thread's involuntary context switches so far (0 if
/// `/proc/thread-self/status` cannot be read). Not for measured loops.
pub(crate) fn involuntary_switches() -> u64 {
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
pub(crate) fn run_once<S, R>(
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

/// Where the runs of one bench take place: its EAL, its lcores, and the
/// memory and socket its queues are built in.
pub(crate) struct Lab<'a> {
    pub(crate) eal: &'a Eal,
    pub(crate) roles: Roles<'a>,
    pub(crate) mem: Arc<dyn UnitMemory>,
    pub(crate) socket: i32,
}

/// The 1, 5 and 15 minute load averages (`unknown` if `/proc/loadavg`
/// cannot be read). Not for measured loops.
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
