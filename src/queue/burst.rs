//! The backend-neutral faces of a burst queue, implemented by the
//! TransferQueue ([`super::Producer`], [`super::Consumer`],
//! [`super::ShardedConsumer`]), by [`super::RoundRobin`] and by the
//! forwarder's `rte_ring` wrapper, so the backend is chosen by value.
//!
//! Two ways to move items:
//!
//! * **By copy** ([`BurstSender::send_burst`], [`BurstReceiver::recv_burst`]):
//!   the caller's array is copied into the queue and out of it.
//! * **In place** ([`BurstSender::send_with`], [`BurstReceiver::recv_with`]):
//!   the queue lends the caller a run of its own slots, contiguous in
//!   memory, for the items [`Plain`] allows. A sender's `fill` writes items
//!   straight into free slots (a PMD receiving into them) and says how many
//!   it wrote: exactly those are published, in order. A receiver's `take`
//!   handles waiting items where they lie (a PMD transmitting from them)
//!   and says how many it consumed: a prefix, which leaves the queue; the
//!   rest stay first in line with whatever values `take` left in them. One
//!   call lends one run (a transfer unit's slots, or a ring's slots up to
//!   its wrap), so a caller wanting more calls again.

/// Items a queue may lend its slots for ([`BurstSender::send_with`],
/// [`BurstReceiver::recv_with`]): plain data for which every bit pattern,
/// all zeros included, is a valid value, so a free slot (zeroed at
/// allocation, or holding an item that already left) can be handed out as
/// a `&mut T`.
///
/// # Safety
/// Implementors are `Copy`, have no drop obligations, and every bit
/// pattern of their size is a valid value.
pub unsafe trait Plain: Copy + Send + 'static {}

// SAFETY: integers: any bit pattern is valid, Copy, no Drop.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for usize {}

/// Sending side of a burst queue.
pub trait BurstSender<T: Copy>: Send {
    /// Enqueues a prefix of `items`; returns its length (less than
    /// `items.len()` when the queue is full).
    fn send_burst(&mut self, items: &[T]) -> usize;

    /// In place (module doc): lends up to `max` free slots, contiguous, to
    /// `fill`, which writes items into a prefix of them and returns its
    /// length; those items are published. `None` when the queue has no
    /// room (`fill` is not called); `Some(0)` when `fill` wrote nothing
    /// (nothing is published). A queue that cannot lend its slots lends a
    /// buffer of its own and copies it in: same contract, one copy.
    fn send_with(&mut self, max: usize, fill: &mut dyn FnMut(&mut [T]) -> usize) -> Option<usize>
    where
        T: Plain;

    /// As [`send_with`](Self::send_with), but never waits for another
    /// producer: where the queue is held by one (a serialized ring whose
    /// previous reservation is not finished), `None` at once. A caller
    /// holding slots of another queue (scattering in place) opens the next
    /// queue with this, so that it never waits while it holds slots. A
    /// queue whose producers never wait for each other (a TransferQueue:
    /// each producer fills its own units) is the same as `send_with`.
    fn try_send_with(
        &mut self,
        max: usize,
        fill: &mut dyn FnMut(&mut [T]) -> usize,
    ) -> Option<usize>
    where
        T: Plain,
    {
        self.send_with(max, fill)
    }

    /// Round trip (a TransferQueue built by [`round_trip`](super::round_trip)):
    /// lends the next run of items the consumer handed back, oldest first,
    /// to `take`, which returns how many of them (a prefix) it took;
    /// returns that count (see `Producer::take_back_with`). A queue whose
    /// items never come back returns 0 without calling `take`.
    fn take_back_with(&mut self, _max: usize, _take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        0
    }

    /// Round trip: items sent and not yet taken back (0 for a queue whose
    /// items never come back).
    fn outstanding(&self) -> usize {
        0
    }

    /// In place and coalescing (a TransferQueue: `Producer::send_coalesced`):
    /// as [`send_with`](Self::send_with) (`may_wait`) or
    /// [`try_send_with`](Self::try_send_with) (not), but a unit that is not
    /// full stays open for the next call to fill further, unpublished
    /// until [`flush`](Self::flush). A queue without units (a ring)
    /// publishes every run, as those do.
    fn send_coalesced(
        &mut self,
        max: usize,
        may_wait: bool,
        fill: &mut dyn FnMut(&mut [T]) -> usize,
    ) -> Option<usize>
    where
        T: Plain,
    {
        if may_wait {
            self.send_with(max, fill)
        } else {
            self.try_send_with(max, fill)
        }
    }

    /// Coalescing: publishes the unit left open; returns how many items
    /// (0: none, or a queue that does not coalesce).
    fn flush(&mut self) -> usize {
        0
    }
}

/// Receiving side of a burst queue.
pub trait BurstReceiver<T: Copy>: Send {
    /// Dequeues up to `out.len()` items into a prefix of `out`; returns how many.
    fn recv_burst(&mut self, out: &mut [T]) -> usize;

    /// Snapshot: nothing waiting right now.
    fn is_empty(&self) -> bool;

    /// In place (module doc): lends the next run of up to `max` waiting
    /// items, contiguous, to `take`, which returns how many of them (a
    /// prefix) it consumed; returns that count. `take` is called at most
    /// once, and not at all when nothing is waiting (0).
    fn recv_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain;
}

/// A boxed sender is a sender (the forwarder picks the backend at run
/// time).
impl<T: Copy, S: BurstSender<T> + ?Sized> BurstSender<T> for Box<S> {
    #[inline]
    fn send_burst(&mut self, items: &[T]) -> usize {
        (**self).send_burst(items)
    }

    #[inline]
    fn send_with(&mut self, max: usize, fill: &mut dyn FnMut(&mut [T]) -> usize) -> Option<usize>
    where
        T: Plain,
    {
        (**self).send_with(max, fill)
    }

    #[inline]
    fn try_send_with(
        &mut self,
        max: usize,
        fill: &mut dyn FnMut(&mut [T]) -> usize,
    ) -> Option<usize>
    where
        T: Plain,
    {
        (**self).try_send_with(max, fill)
    }

    #[inline]
    fn take_back_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        (**self).take_back_with(max, take)
    }

    fn outstanding(&self) -> usize {
        (**self).outstanding()
    }

    #[inline]
    fn send_coalesced(
        &mut self,
        max: usize,
        may_wait: bool,
        fill: &mut dyn FnMut(&mut [T]) -> usize,
    ) -> Option<usize>
    where
        T: Plain,
    {
        (**self).send_coalesced(max, may_wait, fill)
    }

    #[inline]
    fn flush(&mut self) -> usize {
        (**self).flush()
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

    #[inline]
    fn recv_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        (**self).recv_with(max, take)
    }
}
