//! Busy/idle cycle accounting of an lcore's polling loop (the figures
//! behind `busy_cycles_per_packet` and `busy_ratio`), cheap enough for the
//! loop itself: pure arithmetic on TSC values read through closures, so it
//! is tested without EAL.

/// Busy/idle accounting of an lcore's polling loop, by sampling.
///
/// A TSC read costs about as much as a small poll on these machines (and
/// measurably slowed the RX+TX lcore when read on every loop), so the loop
/// is timed exactly only on a pseudo-random 1 in [`SAMPLE_ONE_IN`]
/// iterations (a random pick, so that periodic patterns such as busy/idle
/// alternation are not aliased); the TSC is read once more at the end of
/// every window of [`WINDOW`] iterations, and the window's cycles are split
/// between busy and idle in the proportion the sampled iterations show.
/// Poll counts are exact; cycle figures are estimates whose error shrinks
/// with the number of windows.
#[derive(Debug)]
pub struct LoopClock {
    window_start: u64,
    /// TSC at the start of the current iteration when it is sampled, else 0.
    sample_start: u64,
    rng: u32,
    in_window: u32,
    /// Sampled busy and idle cycles in this window.
    sampled: [u64; 2],
    pub busy_polls: u64,
    pub idle_polls: u64,
    pub busy_cycles: u64,
    pub idle_cycles: u64,
}

/// Mean iterations per timed one.
pub const SAMPLE_ONE_IN: u32 = 16;
/// Iterations per window (one TSC read to close it).
pub const WINDOW: u32 = 1024;

impl LoopClock {
    pub fn new(now: u64) -> Self {
        LoopClock {
            window_start: now,
            sample_start: 0,
            rng: 0x9e37_79b9,
            in_window: 0,
            sampled: [0; 2],
            busy_polls: 0,
            idle_polls: 0,
            busy_cycles: 0,
            idle_cycles: 0,
        }
    }

    /// Start of a loop iteration.
    #[inline]
    pub fn begin(&mut self, tsc: impl FnOnce() -> u64) {
        // xorshift32: a few register operations.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        // The first iteration of a window is always timed, so no window is
        // left without a sample.
        if self.in_window == 0 || x % SAMPLE_ONE_IN == 0 {
            self.sample_start = tsc().max(1);
        }
    }

    /// End of the iteration (`busy`: it moved packets). True when a window
    /// closed and the totals are worth publishing.
    #[inline]
    pub fn end(&mut self, busy: bool, tsc: impl Fn() -> u64) -> bool {
        if busy {
            self.busy_polls += 1;
        } else {
            self.idle_polls += 1;
        }
        if self.sample_start != 0 {
            let now = tsc();
            self.sampled[busy as usize] += now.wrapping_sub(self.sample_start);
            self.sample_start = 0;
        }
        self.in_window += 1;
        if self.in_window == WINDOW {
            self.close(tsc());
            return true;
        }
        false
    }

    /// Closes the current window at TSC `now` (also for the last, partial
    /// one) and adds its cycles to the totals.
    pub fn close(&mut self, now: u64) {
        let total = now.wrapping_sub(self.window_start);
        let [idle, busy] = self.sampled;
        let busy_part = if busy + idle == 0 {
            0
        } else {
            (total as u128 * busy as u128 / (busy + idle) as u128) as u64
        };
        self.busy_cycles += busy_part;
        self.idle_cycles += total - busy_part;
        self.window_start = now;
        self.in_window = 0;
        self.sampled = [0; 2];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop whose busy iterations take 1000 cycles and idle ones 100,
    /// alternating busy/idle (a pattern a fixed 1-in-N sample would alias):
    /// the split comes out within a few per cent, the total exactly.
    #[test]
    fn loop_clock_estimates_the_split() {
        let tsc = std::cell::Cell::new(1_000u64);
        let mut c = LoopClock::new(tsc.get());
        let n = 200 * WINDOW;
        for i in 0..n {
            c.begin(|| tsc.get());
            let busy = i % 2 == 0;
            tsc.set(tsc.get() + if busy { 1000 } else { 100 });
            c.end(busy, || tsc.get());
        }
        c.close(tsc.get());
        assert_eq!(c.busy_polls + c.idle_polls, n as u64);
        assert_eq!(c.busy_cycles + c.idle_cycles, tsc.get() - 1_000);
        let exact = (n as u64 / 2) * 1000;
        let err = (c.busy_cycles as f64 - exact as f64).abs() / exact as f64;
        assert!(err < 0.03, "busy {} vs {exact}: {err}", c.busy_cycles);
    }

    /// All idle: nothing is counted busy.
    #[test]
    fn loop_clock_idle_is_idle() {
        let tsc = std::cell::Cell::new(5u64);
        let mut c = LoopClock::new(5);
        for _ in 0..3000 {
            c.begin(|| tsc.get());
            tsc.set(tsc.get() + 50);
            c.end(false, || tsc.get());
        }
        c.close(tsc.get());
        assert_eq!(c.busy_cycles, 0);
        assert_eq!(c.idle_cycles, 3000 * 50);
    }
}
