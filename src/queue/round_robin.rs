//! Several receivers polled as one, round-robin: the one rotation used by
//! the sharded TransferQueue consumer, the forwarder's input sets and the
//! queue benchmark.
//!
//! Promise: each call visits every input at most once, starting one input
//! later than the previous call, and stops as soon as it has what was
//! asked for; so under load no input is starved by the ones before it.

use super::BurstReceiver;

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
}

/// A boxed receiver is a receiver (the forwarder picks the backend at run
/// time and polls `RoundRobin<Box<dyn BurstReceiver<_>>>`).
impl<T: Copy, R: BurstReceiver<T> + ?Sized> BurstReceiver<T> for Box<R> {
    #[inline]
    fn recv_burst(&mut self, out: &mut [T]) -> usize {
        (**self).recv_burst(out)
    }

    fn is_empty(&self) -> bool {
        (**self).is_empty()
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
}
