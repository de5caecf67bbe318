//! The cache-line trip between the first two forwarding lcores, measured
//! on those lcores as they start forwarding and again once both have
//! stopped, for the report (`lcore_trip_ns`).
//!
//! Why: every packet of the pipeline crosses between lcores twice, so its
//! cost follows how far apart the two cores are. On a VM the host decides
//! that, and may decide it anew each time the vCPUs wake (on this project's
//! 2-vCPU test VM one process measured ~60 ns one way and the next ~170
//! ns, seconds apart). A run that reports its own trip can be compared
//! with runs that had the same.
//!
//! How: a ping-pong on one cache line (the first lcore stores an odd
//! count, the second answers with the next even one), in [`BATCHES`]
//! batches of [`ROUND_TRIPS`]; the figure is the median batch's one-way
//! time. The two meet first (each waits for the other's arrival, at most
//! a timeout, after which the measurement is abandoned and reported as
//! missing; nothing else waits on it). Costs about 1 ms of each lcore at
//! the start; nothing on the datapath.

use crate::config::Lcore;
use crate::counters::trip::TripReport;
use crate::dpdk;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Round trips per batch.
const ROUND_TRIPS: u32 = 500;
/// Batches per measurement (the median is reported).
const BATCHES: usize = 5;
/// How long an lcore waits for the other at the start, and at the end
/// (where the other may still be draining a stalled port).
const START_TIMEOUT_S: f64 = 1.0;
const END_TIMEOUT_S: f64 = 10.0;

/// When a measurement is taken.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum When {
    Start = 0,
    End = 1,
}

/// The probe shared by the two lcores.
pub struct TripProbe {
    lcores: [Lcore; 2],
    /// The ball: the count the lcores take turns to advance.
    ball: CachePadded<AtomicU64>,
    /// Arrivals per measurement: each lcore adds 1 when it gets there.
    arrived: [CachePadded<AtomicU32>; 2],
    /// A measurement was abandoned (one side timed out): the other stops.
    abandoned: [AtomicBool; 2],
    /// One-way TSC cycles, as `f64` bits (0: none).
    cycles: [AtomicU64; 2],
}

impl TripProbe {
    /// A probe between the first two of `lcores` (none with fewer).
    pub fn between_first_two(lcores: &[Lcore]) -> Option<TripProbe> {
        match lcores {
            [a, b, ..] => Some(TripProbe {
                lcores: [*a, *b],
                ball: CachePadded::new(AtomicU64::new(0)),
                arrived: [
                    CachePadded::new(AtomicU32::new(0)),
                    CachePadded::new(AtomicU32::new(0)),
                ],
                abandoned: [AtomicBool::new(false), AtomicBool::new(false)],
                cycles: [AtomicU64::new(0), AtomicU64::new(0)],
            }),
            _ => None,
        }
    }

    /// Takes part in measurement `when` if `lcore` is one of the two
    /// (returns at once otherwise).
    pub fn play(&self, lcore: Lcore, when: When) {
        let Some(side) = self.lcores.iter().position(|&l| l == lcore) else {
            return;
        };
        let w = when as usize;
        let hz = dpdk::tsc_hz().max(1) as f64;
        let timeout_s = match when {
            When::Start => START_TIMEOUT_S,
            When::End => END_TIMEOUT_S,
        };
        let deadline = dpdk::rdtsc().saturating_add((timeout_s * hz) as u64);
        self.arrived[w].fetch_add(1, Ordering::AcqRel);
        if !self.wait(w, deadline, || self.arrived[w].load(Ordering::Acquire) == 2) {
            return;
        }
        // The ball's counts of this measurement start after the last one's.
        let base = w as u64 * 2 * u64::from(ROUND_TRIPS) * BATCHES as u64;
        let mut batches = [0u64; BATCHES];
        for (b, batch) in batches.iter_mut().enumerate() {
            let first = base + 2 * u64::from(ROUND_TRIPS) * b as u64;
            let t0 = dpdk::rdtsc();
            for i in 0..u64::from(ROUND_TRIPS) {
                let serve = first + 2 * i + 1;
                if side == 0 {
                    self.ball.store(serve, Ordering::Release);
                    if !self.wait(w, deadline, || {
                        self.ball.load(Ordering::Acquire) == serve + 1
                    }) {
                        return;
                    }
                } else {
                    if !self.wait(w, deadline, || self.ball.load(Ordering::Acquire) == serve) {
                        return;
                    }
                    self.ball.store(serve + 1, Ordering::Release);
                }
            }
            *batch = dpdk::rdtsc().wrapping_sub(t0);
        }
        if side == 0 {
            batches.sort_unstable();
            let one_way = batches[BATCHES / 2] as f64 / (2.0 * f64::from(ROUND_TRIPS));
            self.cycles[w].store(one_way.to_bits(), Ordering::Relaxed);
        }
    }

    /// Spins until `done()` or the deadline (or the other side gave up);
    /// false, marking the measurement abandoned, when it did not happen.
    fn wait(&self, w: usize, deadline: u64, done: impl Fn() -> bool) -> bool {
        let mut spins = 0u32;
        loop {
            if done() {
                return true;
            }
            spins = spins.wrapping_add(1);
            if spins % 1024 == 0
                && (self.abandoned[w].load(Ordering::Relaxed) || dpdk::rdtsc() >= deadline)
            {
                self.abandoned[w].store(true, Ordering::Relaxed);
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// The measurements, once both lcores are done with them.
    pub fn report(&self) -> TripReport {
        let hz = dpdk::tsc_hz().max(1) as f64;
        let ns = |w: usize| {
            let c = f64::from_bits(self.cycles[w].load(Ordering::Relaxed));
            (c > 0.0 && !self.abandoned[w].load(Ordering::Relaxed)).then(|| c * 1e9 / hz)
        };
        TripReport {
            between: self.lcores,
            start: ns(0),
            end: ns(1),
        }
    }
}
