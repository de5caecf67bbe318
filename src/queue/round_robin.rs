//! Several receivers polled as one, round-robin: the one rotation used by
//! the sharded TransferQueue consumer, the forwarder's input sets and the
//! queue benchmark.
//!
//! Promise: each call visits every input at most once, starting one input
//! later than the previous call, and stops as soon as it has what was
//! asked for; so under load no input is starved by the ones before it.

use super::burst::{BurstReceiver, Plain};

/// Inputs polled round-robin (module doc).
#[derive(Debug)]
pub struct RoundRobin<R> {
    inputs: Vec<R>,
    /// Where the next call starts; `< inputs.len()` (or 0 when empty).
    next: usize,
}

impl<R> RoundRobin<R> {
    pub fn new(inputs: Vec<R>) -> Self {
        RoundRobin { inputs, next: 0 }
    }

    /// The inputs, in the order given to `new`.
    pub fn inputs(&self) -> &[R] {
        &self.inputs
    }

    /// Takes up to `max` items: calls `take(input, taken_so_far)` (which
    /// returns how many it took, at most `max - taken_so_far`) on each
    /// input at most once, in rotation. Returns how many were taken.
    #[inline]
    pub fn take(&mut self, max: usize, mut take: impl FnMut(&mut R, usize) -> usize) -> usize {
        let len = self.inputs.len();
        let start = self.next;
        // No division per poll.
        self.next = if start + 1 >= len { 0 } else { start + 1 };
        let mut got = 0;
        let mut i = start;
        for _ in 0..len {
            if got >= max {
                break;
            }
            got += take(&mut self.inputs[i], got);
            i = if i + 1 == len { 0 } else { i + 1 };
        }
        got
    }

    /// Calls `f` on each input at most once, in rotation (starting one
    /// input later than the previous call), until one returns non-zero;
    /// returns that value (0 when none did).
    #[inline]
    pub fn first(&mut self, mut f: impl FnMut(&mut R) -> usize) -> usize {
        let len = self.inputs.len();
        let start = self.next;
        self.next = if start + 1 >= len { 0 } else { start + 1 };
        let mut i = start;
        for _ in 0..len {
            let got = f(&mut self.inputs[i]);
            if got != 0 {
                return got;
            }
            i = if i + 1 == len { 0 } else { i + 1 };
        }
        0
    }

    /// Fills a prefix of `out` from the inputs; returns how many.
    #[inline]
    pub fn recv<T: Copy>(&mut self, out: &mut [T]) -> usize
    where
        R: BurstReceiver<T>,
    {
        self.take(out.len(), |r, got| r.recv_burst(&mut out[got..]))
    }

    /// True when every input is empty (per-input snapshots).
    pub fn is_empty<T: Copy>(&self) -> bool
    where
        R: BurstReceiver<T>,
    {
        self.inputs.iter().all(|r| r.is_empty())
    }
}

impl<T: Copy, R: BurstReceiver<T>> BurstReceiver<T> for RoundRobin<R> {
    #[inline]
    fn recv_burst(&mut self, out: &mut [T]) -> usize {
        self.recv(out)
    }

    fn is_empty(&self) -> bool {
        self.inputs.iter().all(|r| r.is_empty())
    }

    /// Lends the run of the first input, in rotation, that has one (one
    /// input later than the previous call, as [`take`](Self::take)).
    #[inline]
    fn recv_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        let len = self.inputs.len();
        let start = self.next;
        self.next = if start + 1 >= len { 0 } else { start + 1 };
        let mut i = start;
        let mut lent = false;
        for _ in 0..len {
            let got = self.inputs[i].recv_with(max, &mut |items| {
                lent = true;
                take(items)
            });
            if lent {
                return got;
            }
            i = if i + 1 == len { 0 } else { i + 1 };
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver holding `n` copies of `v`.
    struct Fixed {
        v: u32,
        n: usize,
    }

    impl BurstReceiver<u32> for Fixed {
        fn recv_burst(&mut self, out: &mut [u32]) -> usize {
            let k = out.len().min(self.n);
            out[..k].fill(self.v);
            self.n -= k;
            k
        }
        fn is_empty(&self) -> bool {
            self.n == 0
        }
        fn recv_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [u32]) -> usize) -> usize {
            if self.n == 0 {
                return 0;
            }
            let mut run = [self.v; 8];
            let k = max.min(self.n).min(run.len());
            let used = take(&mut run[..k]).min(k);
            self.n -= used;
            used
        }
    }

    #[test]
    fn rotates_the_start_and_visits_each_input_once() {
        let mut rr = RoundRobin::new((0..3).map(|v| Fixed { v, n: 100 }).collect());
        let mut out = [9u32; 4];
        // Each call starts one input later; one input fills the burst.
        for want in [0, 1, 2, 0] {
            assert_eq!(rr.recv(&mut out), 4);
            assert_eq!(out, [want; 4]);
        }
        let mut big = [9u32; 1000];
        assert_eq!(rr.recv(&mut big), 300 - 16);
        assert!(BurstReceiver::<u32>::is_empty(&rr));
        assert_eq!(rr.recv(&mut big), 0);
        let mut none: RoundRobin<Fixed> = RoundRobin::new(Vec::new());
        assert_eq!(none.recv(&mut out), 0);
    }

    #[test]
    fn lends_one_run_of_the_first_input_that_has_one() {
        let mut rr = RoundRobin::new(vec![
            Fixed { v: 0, n: 0 },
            Fixed { v: 1, n: 3 },
            Fixed { v: 2, n: 20 },
        ]);
        let mut seen = Vec::new();
        // Start at input 0 (empty): input 1 lends its 3; `take` consumes 2.
        let got = rr.recv_with(16, &mut |items| {
            seen.extend_from_slice(items);
            2
        });
        assert_eq!((got, seen.as_slice()), (2, &[1, 1, 1][..]));
        // Start at input 1: its last item; then input 2 (8 at most per run).
        for (want, n) in [(1, 1), (2, 8)] {
            seen.clear();
            let got = rr.recv_with(16, &mut |items| {
                seen.extend_from_slice(items);
                items.len()
            });
            assert_eq!(got, n);
            assert_eq!(seen, vec![want; n]);
        }
        // `take` is never called when nothing is waiting.
        let mut empty = RoundRobin::new(vec![Fixed { v: 0, n: 0 }]);
        assert_eq!(empty.recv_with(16, &mut |_| unreachable!()), 0);
    }
}
