//! Log-linear latency histogram (HDR-style), pure Rust, fixed size.
//!
//! ## What it owns and promises
//!
//! A [`Histogram`] counts `u64` samples (in tqfwd: TSC cycles) in a fixed
//! array of [`BUCKETS`] counters that lives inside the struct. Promises:
//!
//! * [`Histogram::record`] never allocates, logs, formats or panics: it is a
//!   handful of integer instructions (a leading-zero count, a shift, two adds,
//!   two compares), fit for a per-packet loop.
//! * Every value below 2^[`MAX_BITS`] is kept with a relative error of at most
//!   1/[`SUB_BUCKETS`] (3.1 %); values below 2 × [`SUB_BUCKETS`] are exact.
//!   Larger values land in the top bucket; [`Histogram::max`] stays exact and
//!   is what [`Histogram::percentile`] reports for that bucket.
//! * [`Histogram::percentile`] never under-reports: it returns the highest
//!   value that falls in the bucket holding the requested rank (capped by the
//!   exact maximum), so the true percentile `t` satisfies
//!   `t <= reported <= t * (1 + 1/32)`.
//! * [`Histogram::merge`] is exact: merging A into B gives the same counts,
//!   min, max and percentiles as recording A's samples into B.
//!
//! ## Layout
//!
//! Values `0..32` get one bucket each. Above that, every power-of-two range
//! `[2^k, 2^(k+1))` (k = 5 ..= 35) is split into 32 equal-width linear
//! sub-buckets of width `2^(k-5)`: 32 + 31 × 32 = 1024 buckets, 8 KiB.
//! With a 2–5 GHz TSC that covers 1 ns (a few cycles, exact) to well over
//! 1 s (2^36 cycles ≈ 14–34 s) before clamping.

use std::sync::{Mutex, TryLockError};

/// log2 of the linear sub-buckets per power of two.
pub const SUB_BITS: u32 = 5;
/// Linear sub-buckets per power-of-two range (and the exact range `0..32`).
pub const SUB_BUCKETS: usize = 1 << SUB_BITS;
/// Values below `2^MAX_BITS` keep the ≤ 1/32 relative precision.
pub const MAX_BITS: u32 = 36;
/// Number of buckets: the exact range plus 32 per power of two up to
/// `2^MAX_BITS`.
pub const BUCKETS: usize = SUB_BUCKETS + (MAX_BITS - SUB_BITS) as usize * SUB_BUCKETS;

/// Fixed-size log-linear histogram of `u64` samples. See the module doc.
#[derive(Clone)]
pub struct Histogram {
    counts: [u64; BUCKETS],
    count: u64,
    /// Sum of samples (u128: cannot overflow for any realistic count).
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min())
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

/// Bucket index of `v` (see the module doc for the layout).
#[inline(always)]
fn index(v: u64) -> usize {
    if v < SUB_BUCKETS as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= SUB_BITS here
    if msb >= MAX_BITS {
        return BUCKETS - 1;
    }
    let shift = msb - SUB_BITS;
    // `v >> shift` is in [32, 64): its low 5 bits pick the linear sub-bucket.
    let sub = (v >> shift) as usize - SUB_BUCKETS;
    SUB_BUCKETS + shift as usize * SUB_BUCKETS + sub
}

/// Lowest and highest value that map to bucket `idx` (inclusive).
fn bucket_bounds(idx: usize) -> (u64, u64) {
    if idx < SUB_BUCKETS {
        return (idx as u64, idx as u64);
    }
    let shift = ((idx - SUB_BUCKETS) / SUB_BUCKETS) as u32;
    let sub = ((idx - SUB_BUCKETS) % SUB_BUCKETS) as u64;
    let low = (SUB_BUCKETS as u64 + sub) << shift;
    (low, low + (1u64 << shift) - 1)
}

impl Histogram {
    /// An empty histogram (8 KiB by value; use [`Histogram::boxed`] to keep it
    /// off the stack).
    pub const fn new() -> Histogram {
        Histogram {
            counts: [0; BUCKETS],
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// An empty histogram on the heap (allocate before the measured loop).
    pub fn boxed() -> Box<Histogram> {
        Box::new(Histogram::new())
    }

    /// Records one sample. No allocation, no panic.
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        if v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
    }

    /// Records the interval from `stamp` to `now`, two TSC readings that
    /// may come from two cores: where their TSCs differ by more than the
    /// interval, `stamp` reads later than `now`, and the sample counts as
    /// 0 (not as the 2^64 − d a wrapping difference would make it).
    #[inline(always)]
    pub fn record_since(&mut self, now: u64, stamp: u64) {
        self.record(now.saturating_sub(stamp));
    }

    /// Adds every sample of `other` to `self` (exact, see the module doc).
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Forgets every sample.
    pub fn reset(&mut self) {
        *self = Histogram::new();
    }

    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact largest sample (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact smallest sample (0 when empty).
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Exact sum of the samples.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Exact arithmetic mean (0.0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Samples that are certainly at most `v`: the counts of the buckets
    /// whose every value is `<= v`. A bucket holding values on both sides
    /// of `v` is left out, so no sample above `v` is ever counted; what is
    /// missed lies within 1/32 below `v` (nothing below 64, where buckets
    /// are exact, nor when `v` is a bucket's highest value). The top
    /// bucket also holds the clamped values, so it counts only for
    /// `v == u64::MAX`.
    pub fn count_at_most(&self, v: u64) -> u64 {
        let end = if v == u64::MAX {
            BUCKETS
        } else {
            let idx = index(v);
            if idx < BUCKETS - 1 && bucket_bounds(idx).1 == v {
                idx + 1
            } else {
                idx
            }
        };
        self.counts[..end].iter().sum()
    }

    /// The `p`-th percentile (`p` in 0..=100, clamped): the smallest bucket
    /// holding the sample of rank `ceil(p/100 × count)` (at least rank 1),
    /// reported as that bucket's highest value, capped by the exact max.
    /// 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let p = if p.is_nan() {
            100.0
        } else {
            p.clamp(0.0, 100.0)
        };
        let rank = ((p / 100.0) * self.count as f64).ceil() as u64;
        let rank = rank.clamp(1, self.count);
        let mut seen = 0u64;
        for (idx, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                if idx == BUCKETS - 1 {
                    return self.max; // clamped values: only the max is exact
                }
                return bucket_bounds(idx).1.min(self.max).max(self.min);
            }
        }
        self.max
    }
}

/// The percentiles (p for [`Histogram::percentile`]) the summary and the
/// JSON report as p50, p90, p99, p999.
pub const REPORTED: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// A TX lcore's histogram as it last published it, for a reader while the
/// lcore runs (`--metrics`). The lcore copies its histogram in (8 KiB)
/// once in a while, off the per-packet path, and only if no reader holds
/// the slot at that moment: it never waits for a reader.
pub struct HistogramSlot(Mutex<Box<Histogram>>);

impl Default for HistogramSlot {
    fn default() -> Self {
        HistogramSlot(Mutex::new(Histogram::boxed()))
    }
}

impl HistogramSlot {
    /// Copies `h` in, unless a reader holds the slot (false: try again
    /// later). Never blocks, never allocates.
    pub fn publish(&self, h: &Histogram) -> bool {
        let mut slot = match self.0.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        (**slot).clone_from(h);
        true
    }

    /// Merges the last published copy into `all`.
    pub fn merge_into(&self, all: &mut Histogram) {
        all.merge(&self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// Converts TSC cycles to nanoseconds for a TSC running at `tsc_hz`.
pub fn cycles_to_ns(cycles: f64, tsc_hz: u64) -> f64 {
    if tsc_hz == 0 {
        return f64::NAN;
    }
    cycles * 1e9 / tsc_hz as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The true p-th percentile of the sorted samples (nearest rank).
    fn true_percentile(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }

    /// `t <= got <= t * (1 + 1/32)`.
    fn within(got: u64, t: u64) -> bool {
        got >= t && (got - t) as f64 <= t as f64 / SUB_BUCKETS as f64
    }

    #[test]
    fn layout_constants() {
        assert_eq!(BUCKETS, 1024);
        assert_eq!(index((1u64 << MAX_BITS) - 1), BUCKETS - 1);
        assert_eq!(index(1u64 << MAX_BITS), BUCKETS - 1);
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn every_value_lies_in_its_bucket_and_buckets_tile() {
        // Bounds are contiguous and ordered over all buckets.
        let mut next = 0u64;
        for idx in 0..BUCKETS {
            let (lo, hi) = bucket_bounds(idx);
            assert_eq!(lo, next, "bucket {idx} starts where the previous ended");
            assert!(hi >= lo);
            assert_eq!(index(lo), idx);
            assert_eq!(index(hi), idx);
            // Relative width <= 1/32 (exact below 64).
            assert!(
                (hi - lo) as f64 <= lo as f64 / SUB_BUCKETS as f64,
                "bucket {idx}"
            );
            next = hi + 1;
        }
        assert_eq!(next, 1u64 << MAX_BITS);
        // Spot checks across the range.
        for v in [
            0,
            1,
            31,
            32,
            63,
            64,
            65,
            100,
            1000,
            12345,
            1 << 20,
            (1 << 33) + 7,
        ] {
            let (lo, hi) = bucket_bounds(index(v));
            assert!(lo <= v && v <= hi, "{v} in [{lo}, {hi}]");
        }
    }

    #[test]
    fn empty() {
        let h = Histogram::new();
        assert_eq!(h.count(), 0);
        assert_eq!(h.max(), 0);
        assert_eq!(h.min(), 0);
        assert_eq!(h.percentile(50.0), 0);
        assert_eq!(h.percentile(99.9), 0);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 0..64 {
            h.record(v);
        }
        assert_eq!(h.count(), 64);
        assert_eq!(h.percentile(50.0), 31); // rank 32
        assert_eq!(h.percentile(100.0), 63);
        assert_eq!(h.percentile(0.0), 0); // rank 1
        assert_eq!(h.max(), 63);
        assert_eq!(h.min(), 0);
        assert!((h.mean() - 31.5).abs() < 1e-9);
    }

    #[test]
    fn uniform_distribution_percentiles() {
        let n = 100_000u64;
        let mut h = Histogram::new();
        for v in 1..=n {
            h.record(v);
        }
        let sorted: Vec<u64> = (1..=n).collect();
        for p in [
            0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0,
        ] {
            let t = true_percentile(&sorted, p);
            let got = h.percentile(p);
            assert!(within(got, t), "p{p}: got {got}, true {t}");
        }
        assert_eq!(h.percentile(100.0), n);
        assert_eq!(h.max(), n);
    }

    #[test]
    fn bimodal_distribution_tail() {
        // 98.9 % at 100 cycles, 1 % at 10_000, 0.1 % at 1_000_000.
        let mut h = Histogram::new();
        let mut all = Vec::new();
        for i in 0..100_000u64 {
            let v = if i % 1000 == 0 {
                1_000_000
            } else if i % 100 == 1 {
                10_000
            } else {
                100
            };
            h.record(v);
            all.push(v);
        }
        all.sort_unstable();
        for p in [50.0, 98.0, 99.0, 99.5, 99.9, 99.95, 100.0] {
            let t = true_percentile(&all, p);
            let got = h.percentile(p);
            assert!(within(got, t), "p{p}: got {got}, true {t}");
        }
        assert_eq!(h.max(), 1_000_000);
    }

    #[test]
    fn geometric_spread_percentiles() {
        // Values spread over many powers of two (a deterministic LCG).
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut h = Histogram::new();
        let mut all = Vec::with_capacity(50_000);
        for _ in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 40) >> ((x >> 8) % 24); // 0 .. 2^24, log-spread
            h.record(v);
            all.push(v);
        }
        all.sort_unstable();
        for p in [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            let t = true_percentile(&all, p);
            let got = h.percentile(p);
            assert!(within(got, t), "p{p}: got {got}, true {t}");
        }
    }

    #[test]
    fn huge_values_clamp_but_max_is_exact() {
        let mut h = Histogram::new();
        h.record(10);
        h.record(u64::MAX);
        assert_eq!(h.count(), 2);
        assert_eq!(h.max(), u64::MAX);
        assert_eq!(h.percentile(100.0), u64::MAX);
        assert_eq!(h.percentile(50.0), 10);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        let mut both = Histogram::new();
        for v in 0..10_000u64 {
            let va = v * 3 + 7;
            let vb = v * v % 77_777 + 1;
            a.record(va);
            b.record(vb);
            both.record(va);
            both.record(vb);
        }
        let mut merged = a.clone();
        merged.merge(&b);
        assert_eq!(merged.count(), both.count());
        assert_eq!(merged.max(), both.max());
        assert_eq!(merged.min(), both.min());
        assert!((merged.mean() - both.mean()).abs() < 1e-9);
        for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(merged.percentile(p), both.percentile(p), "p{p}");
        }
        // Merging an empty histogram changes nothing.
        let before = merged.percentile(99.0);
        merged.merge(&Histogram::new());
        assert_eq!(merged.count(), both.count());
        assert_eq!(merged.min(), both.min());
        assert_eq!(merged.percentile(99.0), before);
    }

    #[test]
    fn count_at_most_never_counts_a_larger_sample() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut h = Histogram::new();
        let mut all = Vec::with_capacity(20_000);
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 40) >> ((x >> 8) % 20);
            h.record(v);
            all.push(v);
        }
        h.record(u64::MAX); // clamped into the top bucket
        all.push(u64::MAX);
        let at_most = |v: u64| all.iter().filter(|&&x| x <= v).count() as u64;
        for v in [
            0,
            1,
            31,
            63,
            64,
            100,
            210,
            1000,
            4321,
            99_999,
            1 << 20,
            1 << 35,
        ] {
            let got = h.count_at_most(v);
            assert!(got <= at_most(v), "{v}: {got} > {}", at_most(v));
            // Whatever is missed lies within 1/32 below v.
            assert!(
                got >= at_most(v.saturating_sub(v / SUB_BUCKETS as u64 + 1)),
                "{v}: {got}"
            );
        }
        // Exact at a bucket's highest value and in the exact range.
        for idx in [0, 31, 32, 100, 500, BUCKETS - 2] {
            let hi = bucket_bounds(idx).1;
            assert_eq!(h.count_at_most(hi), at_most(hi), "bucket {idx}");
        }
        assert_eq!(h.count_at_most(40), at_most(40));
        // The clamped sample counts only at the very top.
        assert_eq!(h.count_at_most((1u64 << MAX_BITS) - 1), h.count() - 1);
        assert_eq!(h.count_at_most(u64::MAX), h.count());
    }

    #[test]
    fn reset_forgets() {
        let mut h = Histogram::new();
        h.record(5);
        h.reset();
        assert_eq!(h.count(), 0);
        assert_eq!(h.percentile(50.0), 0);
    }

    /// A stamp read on a core whose TSC runs ahead of the reader's counts
    /// as 0: the max and the sum stay those of the real intervals.
    #[test]
    fn a_stamp_after_now_counts_as_zero() {
        let mut h = Histogram::new();
        h.record_since(1_000, 400);
        h.record_since(1_000, 1_050);
        assert_eq!(h.count(), 2);
        assert_eq!(h.max(), 600);
        assert_eq!(h.min(), 0);
        assert_eq!(h.sum(), 600);
    }

    #[test]
    fn ns_conversion() {
        assert!((cycles_to_ns(2300.0, 2_300_000_000) - 1000.0).abs() < 1e-9);
        assert!(cycles_to_ns(1.0, 0).is_nan());
    }
}
