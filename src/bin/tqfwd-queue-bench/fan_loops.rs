//! The scatter and drain rows' measured code (`--scatter`): the item
//! stream and its hash, the producer loops (scatter in place, scatter by
//! buckets, drain in place, drain by copy), the consumer loops (in place,
//! by copy) over k queues, the busy-cycle clock of each role, and one run
//! on the EAL lcores ([`run_fan`]). It knows no plan or result file.
//!
//! * **Items.** Every run sends the same stream: the `u64` values of a
//!   table of [`TABLE_ITEMS`] pseudo-random values (splitmix64, fixed
//!   seed), read in order, in bursts, wrapping around.
//! * **Scatter.** Each item goes to queue [`dest`]`(item, k)`: a
//!   multiply-shift hash of the value mapped onto `0..k` by a second
//!   multiply-shift (no division), the same for every contender and every
//!   k, k = 1 included. *In place* counts a burst's items per destination,
//!   then opens one lent run per destination that has items
//!   ([`BurstSender::send_coalesced`], in ascending destination order,
//!   each inside the previous one's fill) and writes each item straight
//!   into its destination's run; a TransferQueue keeps a unit that is not
//!   full open, published when full, when a destination had no room, and
//!   at least every [`COALESCE_POLLS`] bursts, as the forwarder's
//!   scattering stages do; *by copy* pushes each item into its
//!   destination's bucket, then sends each bucket with one
//!   [`BurstSender::send_burst`]. Items that do not fit (a queue full, a
//!   run shorter than its count) stay pending, in order, and go first in
//!   the next iteration; a new burst is read only once none is pending.
//! * **Drain.** The producer sends whole bursts to queue 0, 1, …, k − 1, 0,
//!   … in turn (the rest of a burst a full queue did not take goes to the
//!   same queue next), in place (`send_with`, the fill copies the burst's
//!   values into the lent slots) or by copy (`send_burst`).
//! * **Consumer.** The same for both rows: the k queues polled with
//!   [`RoundRobin::take`] (the rotation of `queue::ShardedConsumer`, which
//!   is a `RoundRobin` of single-producer queues), each queue visited at
//!   most once per poll and a poll taking at most one burst; in place each
//!   queue lends one run (`recv_with`), by copy it copies out
//!   (`recv_burst`). Each item is added to its queue's sum (the accounting
//!   check).
//! * **Busy cycles.** Each role reads the TSC once per loop iteration; an
//!   iteration that moved items is busy, and its cycles (TSC to TSC, the
//!   read included) count against its items. Windows of `window_items`
//!   items record (busy cycles, items, elapsed cycles); the figures are
//!   medians over windows (`fan.rs`). An iteration that moved nothing
//!   pauses (`pause`) and is idle.
//! * **Placement.** Before each run the two lcores ping-pong one cache
//!   line (5 batches of 200 round trips, the median batch's one-way time):
//!   the host decides how far apart the two vCPUs are.
//!
//! Promises: no allocation, logging or formatting inside the measured
//! loops (fixed-size stack arrays; windows allocated before the run); the
//! producer stops only between bursts (every burst it read is sent whole),
//! then the consumer drains; each side's handles sit in cache-line-padded
//! slots. No `unsafe`: the runs lent at once are held as `&mut [u64]`
//! reborrowed through a chain of the open levels ([`Lent`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crossbeam_utils::CachePadded;
use tqfwd::dpdk::{self, Eal};
use tqfwd::forward::stages::COALESCE_POLLS;
use tqfwd::queue::{BurstReceiver, BurstSender, RoundRobin, MAX_BURST};

use crate::fan_plan::{FanRow, MAX_QUEUES, TABLE_ITEMS};
use crate::runner::{barrier, involuntary_switches, Roles};

/// The hash's multiplier (2^64 / golden ratio, odd).
const HASH_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// Most windows one role records in a run (later ones are not recorded).
const MAX_WINDOWS: usize = 16_384;

/// Round trips per placement batch, and batches.
const TRIP_ROUND_TRIPS: u64 = 200;
const TRIP_BATCHES: usize = 5;

/// Destination of `v` among `k` queues: a multiply-shift hash (the high
/// half of `v × HASH_MUL`'s low 64 bits) mapped onto `0..k` by a second
/// multiply-shift.
#[inline(always)]
pub(crate) fn dest(v: u64, k: u32) -> usize {
    (((v.wrapping_mul(HASH_MUL) >> 32) * k as u64) >> 32) as usize
}

/// The item stream: [`TABLE_ITEMS`] splitmix64 values from a fixed seed.
pub(crate) fn item_table() -> Vec<u64> {
    let mut x = 0x05EE_D0F7_AB1E_u64;
    (0..TABLE_ITEMS)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

/// Parameters of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FanParams {
    pub(crate) row: FanRow,
    pub(crate) in_place: bool,
    pub(crate) burst: usize,
    /// How long the producer reads new bursts, in TSC cycles.
    pub(crate) run_cycles: u64,
    /// Items per measurement window, per role.
    pub(crate) window_items: u64,
}

/// One measurement window of one role.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Window {
    /// Cycles of the busy iterations.
    pub(crate) busy: u64,
    pub(crate) items: u64,
    /// TSC cycles from the window's start to its end.
    pub(crate) elapsed: u64,
}

/// One role's figures of one run.
#[derive(Debug, Default)]
pub(crate) struct RoleOut {
    pub(crate) windows: Vec<Window>,
    /// Whole run: busy cycles, items moved, elapsed cycles (first to last
    /// TSC read of the loop), iterations, busy iterations.
    pub(crate) busy: u64,
    pub(crate) items: u64,
    pub(crate) elapsed: u64,
    pub(crate) iters: u64,
    pub(crate) busy_iters: u64,
}

/// What one run measured.
#[derive(Debug)]
pub(crate) struct FanOut {
    pub(crate) sent: u64,
    /// Per queue: items received and the wrapping sum of their values.
    pub(crate) per_queue: Vec<(u64, u64)>,
    pub(crate) producer: RoleOut,
    pub(crate) consumer: RoleOut,
    /// Producer iterations after which items were still pending (a queue
    /// had no room for all of them).
    pub(crate) short_iters: u64,
    /// One-way cache-line trip between the two lcores before the run, ns
    /// (NaN when the ping-pong timed out).
    pub(crate) trip_ns: f64,
    /// Involuntary context switches of the two bench threads.
    pub(crate) ctx_switches: u64,
}

impl FanOut {
    pub(crate) fn received(&self) -> u64 {
        self.per_queue.iter().map(|q| q.0).sum()
    }
}

// ---- The busy-cycle clock ----------------------------------------------------

/// One role's busy-cycle accounting (module doc).
struct RoleClock {
    start: u64,
    prev: u64,
    win_start: u64,
    win_busy: u64,
    win_items: u64,
    window_items: u64,
    busy: u64,
    items: u64,
    iters: u64,
    busy_iters: u64,
    windows: Vec<Window>,
    nw: usize,
}

impl RoleClock {
    /// Allocates the windows (before the run).
    fn new(window_items: u64) -> RoleClock {
        RoleClock {
            start: 0,
            prev: 0,
            win_start: 0,
            win_busy: 0,
            win_items: 0,
            window_items,
            busy: 0,
            items: 0,
            iters: 0,
            busy_iters: 0,
            windows: vec![Window::default(); MAX_WINDOWS],
            nw: 0,
        }
    }

    /// The loop starts now.
    fn begin(&mut self) -> u64 {
        let now = dpdk::rdtsc_inline();
        self.start = now;
        self.prev = now;
        self.win_start = now;
        now
    }

    /// End of an iteration that moved `moved` items (busy when > 0);
    /// returns the TSC it read.
    #[inline(always)]
    fn tick(&mut self, moved: usize) -> u64 {
        let now = dpdk::rdtsc_inline();
        self.iters += 1;
        if moved > 0 {
            let c = now - self.prev;
            self.busy += c;
            self.win_busy += c;
            self.busy_iters += 1;
            self.items += moved as u64;
            self.win_items += moved as u64;
            if self.win_items >= self.window_items {
                self.close_window(now);
            }
        }
        self.prev = now;
        now
    }

    #[cold]
    fn close_window(&mut self, now: u64) {
        if self.nw < self.windows.len() {
            self.windows[self.nw] = Window {
                busy: self.win_busy,
                items: self.win_items,
                elapsed: now - self.win_start,
            };
            self.nw += 1;
        }
        self.win_start = now;
        self.win_busy = 0;
        self.win_items = 0;
    }

    fn finish(mut self) -> RoleOut {
        self.windows.truncate(self.nw);
        RoleOut {
            windows: self.windows,
            busy: self.busy,
            items: self.items,
            elapsed: self.prev - self.start,
            iters: self.iters,
            busy_iters: self.busy_iters,
        }
    }
}

// ---- Scatter in place ---------------------------------------------------------

/// The runs lent by the levels opened so far, innermost first: each level
/// puts its run into `runs[its destination]` and asks the level outside
/// it. Reborrowing through the chain gives every run one lifetime, so the
/// innermost level holds them all at once without `unsafe`.
trait Lent {
    fn collect<'s>(&'s mut self, runs: &mut [Option<&'s mut [u64]>]);
}

/// Outside the outermost level: no run.
struct NoRun;

impl Lent for NoRun {
    fn collect<'s>(&'s mut self, _runs: &mut [Option<&'s mut [u64]>]) {}
}

/// One open level: destination `d`'s lent slots.
struct Run<'a, 'o> {
    d: usize,
    slots: &'a mut [u64],
    outer: &'a mut (dyn Lent + 'o),
}

impl Lent for Run<'_, '_> {
    #[inline]
    fn collect<'s>(&'s mut self, runs: &mut [Option<&'s mut [u64]>]) {
        runs[self.d] = Some(&mut *self.slots);
        self.outer.collect(runs);
    }
}

/// What the innermost level does with every run open: `write(runs,
/// written)`, where `written[d]` counts the slots of `runs[d]` filled.
type Write<'w> = dyn FnMut(&mut [Option<&mut [u64]>], &mut [u32; MAX_QUEUES]) + 'w;

/// Opens the run of the first of `senders` (destination `base` onward)
/// that `want`s slots (at most that many), and inside its fill the later
/// ones; at the innermost level, calls `write` with every run. A queue
/// without room lends nothing (its destination gets no run). Each level
/// publishes `written[d]` items.
fn open<S: BurstSender<u64>>(
    senders: &mut [CachePadded<S>],
    base: usize,
    want: &[u32; MAX_QUEUES],
    written: &mut [u32; MAX_QUEUES],
    outer: &mut dyn Lent,
    write: &mut Write<'_>,
) {
    let Some(i) = (0..senders.len()).find(|&i| want[base + i] != 0) else {
        let mut runs: [Option<&mut [u64]>; MAX_QUEUES] = Default::default();
        outer.collect(&mut runs);
        write(&mut runs, written);
        return;
    };
    let d = base + i;
    let (first, rest) = senders[i..].split_at_mut(1);
    let mut lent = false;
    first[0].send_coalesced(want[d] as usize, true, &mut |slots: &mut [u64]| {
        lent = true;
        let mut run = Run {
            d,
            slots,
            outer: &mut *outer,
        };
        open(rest, d + 1, want, written, &mut run, write);
        written[d] as usize
    });
    if !lent {
        open(rest, d + 1, want, written, outer, write);
    }
}

/// The in-place scatter's pending items, in arrival order, with their
/// destinations and the count per destination.
struct Batch {
    vals: [u64; MAX_BURST],
    dests: [u8; MAX_BURST],
    len: usize,
    want: [u32; MAX_QUEUES],
}

impl Batch {
    fn new() -> Batch {
        Batch {
            vals: [0; MAX_BURST],
            dests: [0; MAX_BURST],
            len: 0,
            want: [0; MAX_QUEUES],
        }
    }

    /// Pass one: each item of `src` (nothing pending) with its
    /// destination, counted.
    #[inline(always)]
    fn gather(&mut self, src: &[u64], k: u32) {
        for ((&v, val), dst) in src.iter().zip(&mut self.vals).zip(&mut self.dests) {
            let d = dest(v, k);
            *val = v;
            *dst = d as u8;
            self.want[d] += 1;
        }
        self.len = src.len();
    }

    /// Pass two: opens a run per destination with items and writes each
    /// pending item into its run; what does not fit stays pending, in
    /// order. Returns the items sent.
    #[inline(always)]
    fn scatter<S: BurstSender<u64>>(&mut self, senders: &mut [CachePadded<S>]) -> usize {
        let Batch {
            vals,
            dests,
            len,
            want,
        } = self;
        let mut written = [0u32; MAX_QUEUES];
        open(
            senders,
            0,
            want,
            &mut written,
            &mut NoRun,
            &mut |runs: &mut [Option<&mut [u64]>], written: &mut [u32; MAX_QUEUES]| {
                let mut kept = 0;
                for j in 0..*len {
                    let (v, d) = (vals[j], dests[j] as usize);
                    let w = written[d] as usize;
                    match runs[d].as_deref_mut() {
                        Some(run) if w < run.len() => {
                            run[w] = v;
                            written[d] += 1;
                        }
                        _ => {
                            vals[kept] = v;
                            dests[kept] = d as u8;
                            kept += 1;
                        }
                    }
                }
                *len = kept;
            },
        );
        let mut moved = 0;
        for (w, n) in want.iter_mut().zip(written) {
            *w -= n;
            moved += n as usize;
        }
        moved
    }
}

// ---- Scatter by buckets -------------------------------------------------------

/// The copying scatter's buckets: per destination its items, how many,
/// and how many of them are sent.
struct Buckets {
    items: [[u64; MAX_BURST]; MAX_QUEUES],
    len: [u32; MAX_QUEUES],
    sent: [u32; MAX_QUEUES],
    pending: usize,
}

impl Buckets {
    fn new() -> Buckets {
        Buckets {
            items: [[0; MAX_BURST]; MAX_QUEUES],
            len: [0; MAX_QUEUES],
            sent: [0; MAX_QUEUES],
            pending: 0,
        }
    }

    /// Each item of `src` into its destination's bucket (all buckets
    /// empty).
    #[inline(always)]
    fn fill(&mut self, src: &[u64], k: u32) {
        for &v in src {
            let d = dest(v, k);
            let l = self.len[d] as usize;
            self.items[d][l] = v;
            self.len[d] += 1;
        }
        self.pending = src.len();
    }

    /// Sends the unsent part of every bucket, one `send_burst` each;
    /// returns the items sent.
    #[inline(always)]
    fn send<S: BurstSender<u64>>(&mut self, senders: &mut [CachePadded<S>]) -> usize {
        let mut moved = 0;
        for (d, s) in senders.iter_mut().enumerate() {
            let (a, b) = (self.sent[d] as usize, self.len[d] as usize);
            if a < b {
                let n = s.send_burst(&self.items[d][a..b]);
                self.sent[d] += n as u32;
                moved += n;
            }
        }
        self.pending -= moved;
        if self.pending == 0 {
            self.len = [0; MAX_QUEUES];
            self.sent = [0; MAX_QUEUES];
        }
        moved
    }
}

// ---- Producer loops -----------------------------------------------------------

/// Scatter producer: reads bursts of the table until the deadline, each
/// item to its destination's queue, in place or by buckets. Returns
/// (items sent, iterations that left items pending).
#[inline(never)]
fn produce_scatter<S: BurstSender<u64>, const IN_PLACE: bool>(
    senders: &mut [CachePadded<S>],
    table: &[u64],
    rp: &FanParams,
    clock: &mut RoleClock,
) -> (u64, u64) {
    let k = senders.len() as u32;
    let b = rp.burst;
    // In place, the runs coalesce (`send_coalesced`) and the open units
    // are published as the forwarder's scattering stages publish them
    // (`forward::stages::Coalescing`): when a destination was full, and at
    // least every `COALESCE_POLLS` bursts (this loop is always loaded, so
    // never "drained" otherwise). A ring publishes every run.
    let mut polls = 0;
    let mut batch = Batch::new();
    let mut buckets = Buckets::new();
    let mut pos = 0;
    let (mut sent, mut short) = (0u64, 0u64);
    // The first burst is read before the clock starts; every later one in
    // the (busy) iteration that finished sending the one before.
    if IN_PLACE {
        batch.gather(&table[..b], k);
    } else {
        buckets.fill(&table[..b], k);
    }
    pos += b;
    let deadline = clock.begin() + rp.run_cycles;
    let mut now = 0;
    loop {
        let n = if IN_PLACE {
            batch.scatter(senders)
        } else {
            buckets.send(senders)
        };
        sent += n as u64;
        let pending = if IN_PLACE { batch.len } else { buckets.pending };
        if IN_PLACE {
            polls += 1;
            if pending != 0 || polls >= COALESCE_POLLS || now >= deadline {
                polls = 0;
                for s in senders.iter_mut() {
                    s.flush();
                }
            }
        }
        if pending == 0 {
            if now >= deadline {
                clock.tick(n);
                return (sent, short);
            }
            let src = &table[pos..pos + b];
            if IN_PLACE {
                batch.gather(src, k);
            } else {
                buckets.fill(src, k);
            }
            pos += b;
            if pos == table.len() {
                pos = 0;
            }
        } else {
            short += 1;
            if n == 0 {
                dpdk::pause(); // every destination left is full
            }
        }
        now = clock.tick(n);
    }
}

/// Drain producer: reads bursts of the table until the deadline, burst j
/// to queue j mod k, in place or by copy. Returns (items sent, iterations
/// that left part of a burst unsent).
#[inline(never)]
fn produce_drain<S: BurstSender<u64>, const IN_PLACE: bool>(
    senders: &mut [CachePadded<S>],
    table: &[u64],
    rp: &FanParams,
    clock: &mut RoleClock,
) -> (u64, u64) {
    let k = senders.len();
    let b = rp.burst;
    let (mut q, mut pos, mut off) = (0, 0, 0);
    let (mut sent, mut short) = (0u64, 0u64);
    let deadline = clock.begin() + rp.run_cycles;
    let mut now = 0;
    loop {
        let src = &table[pos + off..pos + b];
        let n = if IN_PLACE {
            senders[q]
                .send_with(src.len(), &mut |slots: &mut [u64]| {
                    let n = slots.len().min(src.len());
                    slots[..n].copy_from_slice(&src[..n]);
                    n
                })
                .unwrap_or(0)
        } else {
            senders[q].send_burst(src)
        };
        sent += n as u64;
        off += n;
        if off == b {
            if now >= deadline {
                clock.tick(n);
                return (sent, short);
            }
            q += 1;
            if q == k {
                q = 0;
            }
            pos += b;
            if pos == table.len() {
                pos = 0;
            }
            off = 0;
        } else {
            short += 1;
            if n == 0 {
                dpdk::pause(); // full
            }
        }
        now = clock.tick(n);
    }
}

// ---- Consumer loop ------------------------------------------------------------

/// One of the consumer's queues with its tally (items, wrapping sum).
struct Tally<R> {
    rx: R,
    items: u64,
    sum: u64,
}

/// The consumer: polls the queues with `RoundRobin::take` (at most one
/// burst per poll, each queue at most once), in place or by copy, until
/// the producer is done and a whole poll finds nothing.
#[inline(never)]
fn consume<R: BurstReceiver<u64>, const IN_PLACE: bool>(
    rr: &mut RoundRobin<CachePadded<Tally<R>>>,
    rp: &FanParams,
    done: &AtomicUsize,
    clock: &mut RoleClock,
) {
    let b = rp.burst;
    let mut buf = [0u64; MAX_BURST];
    let out = &mut buf[..b];
    let mut finishing = false;
    clock.begin();
    loop {
        let n = if IN_PLACE {
            rr.take(b, |t, got| {
                let mut s = 0u64;
                let n = t.rx.recv_with(b - got, &mut |items: &mut [u64]| {
                    for &v in items.iter() {
                        s = s.wrapping_add(v);
                    }
                    items.len()
                });
                t.items += n as u64;
                t.sum = t.sum.wrapping_add(s);
                n
            })
        } else {
            rr.take(b, |t, got| {
                let n = t.rx.recv_burst(&mut out[got..]);
                let mut s = 0u64;
                for &v in &out[got..got + n] {
                    s = s.wrapping_add(v);
                }
                t.items += n as u64;
                t.sum = t.sum.wrapping_add(s);
                n
            })
        };
        if n == 0 {
            if finishing {
                return; // drained after the producer finished
            }
            // Acquire: every item sent before the producer reported done
            // is published, so the next empty poll means drained.
            if done.load(Ordering::Acquire) != 0 {
                finishing = true;
            } else {
                dpdk::pause();
            }
        }
        clock.tick(n);
    }
}

// ---- Placement ----------------------------------------------------------------

/// The cache-line ping-pong (module doc). `first`: this side serves and
/// times; returns the median batch's one-way TSC cycles (None on the
/// other side, or when the other did not answer within `timeout`).
fn ping_pong(ball: &AtomicU64, first: bool, timeout: u64) -> Option<f64> {
    let wait = |want: u64| {
        let t0 = dpdk::rdtsc_inline();
        while ball.load(Ordering::Acquire) != want {
            if dpdk::rdtsc_inline() - t0 > timeout {
                return false;
            }
        }
        true
    };
    if !first {
        for n in 0..TRIP_BATCHES as u64 * TRIP_ROUND_TRIPS {
            if !wait(2 * n + 1) {
                return None;
            }
            ball.store(2 * n + 2, Ordering::Release);
        }
        return None;
    }
    let mut batches = [0f64; TRIP_BATCHES];
    let mut n = 0u64;
    for b in batches.iter_mut() {
        let t0 = dpdk::rdtsc_inline();
        for _ in 0..TRIP_ROUND_TRIPS {
            ball.store(2 * n + 1, Ordering::Release);
            if !wait(2 * n + 2) {
                return None;
            }
            n += 1;
        }
        *b = (dpdk::rdtsc_inline() - t0) as f64 / (2 * TRIP_ROUND_TRIPS) as f64;
    }
    batches.sort_by(|a, b| a.total_cmp(b));
    Some(batches[TRIP_BATCHES / 2])
}

// ---- One run ------------------------------------------------------------------

/// Runs one measurement: `senders` (one per queue) on the first producer
/// lcore of `roles`, `receivers` (the same queues' other ends, in order)
/// polled on the consumer lcore. Handles are dropped here, on the main
/// lcore, after the run.
pub(crate) fn run_fan<S, R>(
    eal: &Eal,
    roles: &Roles,
    senders: Vec<S>,
    receivers: Vec<R>,
    table: &[u64],
    rp: &FanParams,
    tsc_hz: u64,
) -> Result<FanOut, String>
where
    S: BurstSender<u64>,
    R: BurstReceiver<u64>,
{
    let k = senders.len();
    debug_assert!(k == receivers.len() && (1..=MAX_QUEUES).contains(&k));
    let producer = roles.producers[0];
    let tx_slot = Box::new(CachePadded::new(Mutex::new((
        senders
            .into_iter()
            .map(CachePadded::new)
            .collect::<Vec<_>>(),
        RoleClock::new(rp.window_items),
    ))));
    let rx_slot = Box::new(CachePadded::new(Mutex::new((
        RoundRobin::new(
            receivers
                .into_iter()
                .map(|rx| {
                    CachePadded::new(Tally {
                        rx,
                        items: 0,
                        sum: 0,
                    })
                })
                .collect(),
        ),
        RoleClock::new(rp.window_items),
    ))));
    let ready = CachePadded::new(AtomicUsize::new(0));
    let done = CachePadded::new(AtomicUsize::new(0));
    let ball = CachePadded::new(AtomicU64::new(0));
    let ctx = AtomicU64::new(0);
    let out = Mutex::new(None::<(u64, u64, f64)>);
    let timeout = tsc_hz; // one second

    eal.run_on_all_lcores(|lcore| {
        if lcore == roles.consumer {
            let mut guard = rx_slot.lock().expect("consumer slot");
            let (rr, clock) = &mut *guard;
            let cs0 = involuntary_switches();
            barrier(&ready, 2);
            ping_pong(&ball, false, timeout);
            if rp.in_place {
                consume::<R, true>(rr, rp, &done, clock);
            } else {
                consume::<R, false>(rr, rp, &done, clock);
            }
            ctx.fetch_add(involuntary_switches() - cs0, Ordering::Relaxed);
        } else if lcore == producer {
            let mut guard = tx_slot.lock().expect("producer slot");
            let (txs, clock) = &mut *guard;
            let cs0 = involuntary_switches();
            barrier(&ready, 2);
            let trip = ping_pong(&ball, true, timeout)
                .map(|c| c * 1e9 / tsc_hz as f64)
                .unwrap_or(f64::NAN);
            let (sent, short) = match (rp.row, rp.in_place) {
                (FanRow::Scatter, true) => produce_scatter::<S, true>(txs, table, rp, clock),
                (FanRow::Scatter, false) => produce_scatter::<S, false>(txs, table, rp, clock),
                (FanRow::Drain, true) => produce_drain::<S, true>(txs, table, rp, clock),
                (FanRow::Drain, false) => produce_drain::<S, false>(txs, table, rp, clock),
            };
            // Release: everything sent above happens before the consumer
            // sees this.
            done.store(1, Ordering::Release);
            ctx.fetch_add(involuntary_switches() - cs0, Ordering::Relaxed);
            *out.lock().expect("producer result") = Some((sent, short, trip));
        }
    })
    .map_err(|e| e.to_string())?;

    let (sent, short_iters, trip_ns) = out
        .into_inner()
        .expect("producer result")
        .ok_or("the producer lcore did not run")?;
    let (_txs, pclock) = CachePadded::into_inner(*tx_slot)
        .into_inner()
        .expect("producer slot");
    let (rr, cclock) = CachePadded::into_inner(*rx_slot)
        .into_inner()
        .expect("consumer slot");
    Ok(FanOut {
        sent,
        per_queue: rr.inputs().iter().map(|t| (t.items, t.sum)).collect(),
        producer: pclock.finish(),
        consumer: cclock.finish(),
        short_iters,
        trip_ns,
        ctx_switches: ctx.load(Ordering::Relaxed),
    })
}

/// What each queue should have received when the producer sent `sent`
/// items of the stream (a whole number of bursts): per queue (items, sum).
pub(crate) fn expected(
    row: FanRow,
    table: &[u64],
    k: usize,
    burst: usize,
    sent: u64,
) -> Vec<(u64, u64)> {
    let mut exp = vec![(0u64, 0u64); k];
    let t = table.len() as u64;
    match row {
        FanRow::Scatter => {
            let (full, rem) = (sent / t, sent % t);
            for (p, &v) in table.iter().enumerate() {
                let times = full + u64::from((p as u64) < rem);
                let e = &mut exp[dest(v, k as u32)];
                e.0 += times;
                e.1 = e.1.wrapping_add(v.wrapping_mul(times));
            }
        }
        FanRow::Drain => {
            let per_table = table.len() / burst;
            let sums: Vec<u64> = table
                .chunks(burst)
                .map(|c| c.iter().fold(0u64, |a, &v| a.wrapping_add(v)))
                .collect();
            for j in 0..sent / burst as u64 {
                let e = &mut exp[(j % k as u64) as usize];
                e.0 += burst as u64;
                e.1 = e.1.wrapping_add(sums[(j % per_table as u64) as usize]);
            }
        }
    }
    exp
}
