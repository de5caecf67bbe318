//! The receiving end ([`Consumer`], and [`ShardedConsumer`], which polls
//! one single-producer queue per producer): taking what was published,
//! handing items out FIFO per producer, and returning each spent unit to
//! its producer with one store (*Receive*, *Return*, *Empty*, *Single
//! producer* and *Counts* in the module doc of `queue`).
//!
//! Promise: every item published is handed out or dropped exactly once,
//! and a unit goes back to its producer only after every read of its
//! slots.

use core::fmt;
use core::ptr;

use super::burst::{BurstReceiver, Plain};
use super::probe::Probe;
use super::round_robin::RoundRobin;
use super::shared::Shared;
use super::sync::{Arc, Ordering};
use super::unit::{detach, prefetch_header, prefetch_unit, reverse, slot, Unit};

/// Receiving end of a TransferQueue (exactly one). `Send`, not `Sync`.
pub struct Consumer<T> {
    /// First unit of the local (detached, FIFO) chain, or null.
    cur: *mut Unit,
    /// `count` of `cur`, or [`UNREAD`] while `cur`'s header has not been
    /// read yet (the consumer moved to it; the first `ready` reads it).
    count: usize,
    /// Items of `cur` already handed out.
    offset: usize,
    /// `cur`'s items are already counted back to its producer (one
    /// producer: the consumer keeps its last unit until another is linked
    /// after it, but gives its items back at once; the stub has none).
    items_back: bool,
    items_offset: usize,
    /// Next expected unit `seq` per producer (FIFO self-check).
    #[cfg(any(debug_assertions, loom))]
    expect_seq: Vec<u32>,
    shared: Arc<Shared<T>>,
}

/// `Consumer::count` of a unit moved to but not entered: its header was
/// written on another core, so it is read when the unit is first needed,
/// not when the previous one is spent (the miss then overlaps whatever the
/// caller does in between). Above any real count, so `offset < count`
/// holds for it, as for any unit with unread items.
const UNREAD: usize = usize::MAX;

// SAFETY: the consumer exclusively owns its detached chain (raw pointers into
// the arenas) and the items in it, which are `T: Send`.
unsafe impl<T: Send> Send for Consumer<T> {}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("producers", &self.shared.pools.len())
            .field("burst", &self.shared.geo.burst)
            .field("units_per_producer", &self.shared.geo.units)
            .finish_non_exhaustive()
    }
}

impl<T: Send> Consumer<T> {
    /// Hands up to `max` items, FIFO per producer, to `sink`; returns how many.
    ///
    /// A panic in `sink` loses nothing: each item is marked read before it is
    /// handed out, and the next call carries on after it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tqfwd::queue::{self, GlobalMemory};
    ///
    /// let (mut txs, mut rx) = queue::channel::<u64>(1, 1024, 32, Arc::new(GlobalMemory))?;
    /// let mut tx = txs.pop().unwrap();
    /// let producer = std::thread::spawn(move || {
    ///     let items: Vec<u64> = (1..=100).collect();
    ///     let mut sent = 0;
    ///     while sent < items.len() {
    ///         sent += tx.send_slice(&items[sent..]);
    ///     }
    /// });
    /// let (mut n, mut sum) = (0, 0);
    /// while n < 100 {
    ///     n += rx.recv(32, |item| sum += item);
    /// }
    /// producer.join().unwrap();
    /// assert_eq!(sum, 5050);
    /// assert!(rx.is_empty());
    /// # Ok::<(), tqfwd::queue::QueueError>(())
    /// ```
    #[inline]
    pub fn recv(&mut self, max: usize, mut sink: impl FnMut(T)) -> usize {
        let mut got = 0;
        while got < max && self.ready() {
            let unit = self.cur;
            let n = (self.count - self.offset).min(max - got);
            for _ in 0..n {
                // SAFETY: `offset < count`: the slot holds an initialised item
                // of a unit we own; advancing `offset` before handing it out
                // makes this the item's only read.
                let item = unsafe {
                    let s = slot::<T>(unit, self.items_offset, self.offset);
                    (*unit).track.write(|| ptr::read(s))
                };
                self.offset += 1;
                sink(item);
            }
            got += n;
            if self.offset == self.count {
                self.spent();
            }
        }
        got
    }

    /// Copies up to `out.len()` items, FIFO per producer, into `out`; returns
    /// how many (a prefix of `out`).
    #[inline]
    pub fn recv_slice(&mut self, out: &mut [T]) -> usize
    where
        T: Copy,
    {
        let mut got = 0;
        while got < out.len() && self.ready() {
            let unit = self.cur;
            let n = (self.count - self.offset).min(out.len() - got);
            // SAFETY: slots `offset..offset + n` hold initialised items of a
            // unit we own; `out[got..got + n]` is in bounds; `T: Copy`.
            unsafe {
                let src = slot::<T>(unit, self.items_offset, self.offset);
                (*unit)
                    .track
                    .write(|| ptr::copy_nonoverlapping(src, out.as_mut_ptr().add(got), n));
            }
            self.offset += n;
            got += n;
            if self.offset == self.count {
                self.spent();
            }
        }
        got
    }

    /// In place (see `burst`): lends the unread items of the current unit,
    /// at most `max`, to `take`, and marks read the prefix it says it
    /// consumed (a unit whose last item is consumed goes back to its
    /// producer). Returns that count; 0 without calling `take` when nothing
    /// is waiting. A panic in `take` consumes nothing. In a round trip
    /// ([`round_trip`](super::round_trip)) *consumed* means processed: the
    /// items go back to their producer as `take` left them.
    #[inline]
    pub fn recv_with(&mut self, max: usize, take: impl FnOnce(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        if max == 0 || !self.ready() {
            return 0;
        }
        let unit = self.cur;
        let n = (self.count - self.offset).min(max);
        if self.offset + n == self.count && self.shared.single {
            // This call may spend the unit: ask now for its header line,
            // where the producer links the next unit, so that the `next`
            // load in `spent` does not wait a cross-core trip after `take`.
            prefetch_header(unit);
        }
        // SAFETY: slots `offset..offset + n` hold initialised items of a
        // unit we own until we return it (after this call); whatever `take`
        // writes into them is a valid `T` (`Plain`).
        let used = unsafe {
            (*unit).track.write(|| {
                let items = std::slice::from_raw_parts_mut(
                    slot::<T>(unit, self.items_offset, self.offset),
                    n,
                );
                take(items).min(n)
            })
        };
        self.offset += used;
        if self.offset == self.count {
            self.spent();
        }
        used
    }

    /// True when nothing is waiting: the local chain is spent and the published
    /// list was empty at an Acquire load. A snapshot: a producer may publish
    /// right after.
    pub fn is_empty(&self) -> bool {
        if self.shared.single {
            // SAFETY: `cur` is the stub or a unit we hold (never null with
            // one producer); `next` is an atomic.
            return self.offset >= self.count
                && unsafe { (*self.cur).next.load(Ordering::Acquire) }.is_null();
        }
        (self.cur.is_null() || self.offset >= self.count)
            && self.shared.head.load(Ordering::Acquire).is_null()
    }

    /// Number of producers feeding this consumer.
    pub fn producers(&self) -> usize {
        self.shared.pools.len()
    }

    /// A read-only view of how full the queue is, for another thread.
    pub fn probe(&self) -> Probe<T> {
        Probe {
            shared: self.shared.clone(),
        }
    }

    /// Items per unit.
    pub fn burst(&self) -> usize {
        self.shared.geo.burst
    }
}

// Internal helpers need no `T: Send` (so `Drop` can use them); a consumer can
// only be built through `channel`/`sharded`, which require it.
impl<T> Consumer<T> {
    /// The consumer of the queue `shared` (built by `channel`), before
    /// anything is published.
    pub(super) fn new(shared: Arc<Shared<T>>) -> Self {
        let single = shared.single;
        Consumer {
            // One producer: the consumer starts at the stub (count 0).
            cur: if single { shared.stub } else { ptr::null_mut() },
            count: 0,
            offset: 0,
            // The stub has no items to count back.
            items_back: single,
            items_offset: shared.geo.items_offset,
            #[cfg(any(debug_assertions, loom))]
            expect_seq: vec![0; shared.pools.len()],
            shared,
        }
    }

    /// Makes `cur` a unit with unread items, detaching the published list when
    /// the local chain is spent. False when nothing is available.
    #[inline(always)]
    fn ready(&mut self) -> bool {
        loop {
            if !self.cur.is_null() {
                if self.count == UNREAD {
                    self.enter();
                }
                if self.offset < self.count {
                    return true;
                }
                // Spent (e.g. after a panic in a sink, or the last unit
                // with one producer).
                if !self.spent() {
                    return false;
                }
                continue;
            }
            let list = detach(&self.shared.head);
            if list.is_null() {
                return false;
            }
            // SAFETY: the detached chain is now exclusively ours.
            self.cur = unsafe { reverse(list, self.shared.geo.stride) };
            self.enter();
        }
    }

    /// Loads the header of the new `cur` (non-null).
    #[inline(always)]
    fn enter(&mut self) {
        let unit = self.cur;
        // SAFETY: `cur` is a valid unit of our chain; its header was published
        // with it.
        let (count, _seq, _producer) = unsafe {
            (*unit)
                .track
                .read(|| ((*unit).count, (*unit).seq, (*unit).producer))
        };
        // (Skipped while unwinding: a second panic in `Drop` would abort.)
        #[cfg(any(debug_assertions, loom))]
        if !std::thread::panicking() {
            let expect = &mut self.expect_seq[_producer as usize];
            assert_eq!(
                _seq, *expect,
                "TransferQueue: unit out of order for producer {_producer}"
            );
            *expect = expect.wrapping_add(1);
        }
        self.count = count as usize;
        self.offset = 0;
        // One producer: a unit already linked after this one is fetched
        // while this one is read (its `next` is read again, Acquire, before
        // the consumer moves to it: this load is a hint only).
        #[cfg(not(any(loom, miri)))]
        if self.shared.single {
            // SAFETY: `cur` is a unit we hold; `next` is an atomic.
            let ahead = unsafe { (*unit).next.load(Ordering::Relaxed) };
            if !ahead.is_null() {
                prefetch_unit(ahead, self.shared.geo.stride);
            }
        }
    }

    /// `cur` has no unread item: moves on. Several producers: returns it
    /// and takes the next unit of the local chain (null at its end); true.
    /// One producer: if a unit is linked after it, returns it and takes
    /// that one (true); else keeps it, with its items counted back, and
    /// returns false (it is the unit the producer links the next one to).
    #[inline(always)]
    fn spent(&mut self) -> bool {
        let unit = self.cur;
        if !self.shared.single {
            // SAFETY: `cur` is a valid unit of our detached chain.
            let next = unsafe { (*unit).next.load(Ordering::Relaxed) };
            self.retire(next);
            return true;
        }
        // Acquire: pairs with the producer's Release link (`append`): the
        // units from `next` on, items and headers, are visible.
        // SAFETY: `cur` is the stub or a unit we hold; `next` is an atomic
        // only the producer writes, once, while `cur` is its tail.
        let next = unsafe { (*unit).next.load(Ordering::Acquire) };
        if next.is_null() {
            self.give_items_back();
            return false;
        }
        prefetch_unit(next, self.shared.geo.stride);
        self.retire(next);
        true
    }

    /// One producer: counts `cur`'s items back to the producer now (its
    /// budget), keeping the unit itself.
    #[inline(always)]
    fn give_items_back(&mut self) {
        if !self.items_back {
            self.items_back = true;
            let unit = self.cur;
            // SAFETY: `cur` is a unit we hold (the stub's `items_back` is set).
            let producer = unsafe { (*unit).track.read(|| (*unit).producer) };
            self.give_back(producer, 0, self.count as u32);
        }
    }

    /// Returns `cur` (all its items handed out or dropped) to its producer,
    /// counting its items back unless that was done already, and moves to
    /// `next` (its successor; null: the end of a detached chain).
    #[inline]
    fn retire(&mut self, next: *mut Unit) {
        let unit = self.cur;
        if unit != self.shared.stub {
            // One producer: its index is 0, and in a round trip it may be
            // taking back this unit's items (handed back before the unit)
            // right now, so the unit is not read again.
            let producer = if self.shared.single {
                0
            } else {
                // SAFETY: `cur` is a valid unit we hold: read its owner
                // before giving it away.
                unsafe { (*unit).track.read(|| (*unit).producer) }
            };
            let items = if self.items_back {
                0
            } else {
                self.count as u32
            };
            self.give_back(producer, 1, items);
        }
        self.cur = next;
        self.items_back = false;
        self.offset = 0;
        self.count = if next.is_null() { 0 } else { UNREAD };
    }

    /// Counts `units` units and `items` items back to `producer`'s pool:
    /// one store. Only this consumer writes the count; Release orders our
    /// reads of the returned units before the producer's refill (it loads
    /// the count with Acquire). Under loom the same increment is one RMW:
    /// as in `push`, a load right before the store would hide, from loom's
    /// DPOR (it tracks only the last access to an atomic), the
    /// interleavings where the producer reloads the count in between. With
    /// one writer the two forms are equivalent; natively load + store
    /// avoids a locked RMW. Each half wraps on its own (under loom the low
    /// half never reaches a carry).
    #[inline]
    fn give_back(&self, producer: u32, units: u32, items: u32) {
        let returned = &self.shared.pools[producer as usize].returned;
        #[cfg(not(loom))]
        {
            let now = returned.load(Ordering::Relaxed);
            let u = (now as u32).wrapping_add(units);
            let i = ((now >> 32) as u32).wrapping_add(items);
            returned.store(u64::from(i) << 32 | u64::from(u), Ordering::Release);
        }
        #[cfg(loom)]
        returned.fetch_add(u64::from(items) << 32 | u64::from(units), Ordering::Release);
    }

    /// Drops the unread items of `cur` (non-null); in a round trip, hands
    /// them back as they are (its items are `Plain`: nothing to drop, and
    /// the producer may be taking back what was handed back before).
    fn drop_unread(&mut self) {
        if self.count == UNREAD {
            self.enter();
        }
        let unit = self.cur;
        let (from, n) = (self.offset, self.count - self.offset);
        self.offset = self.count; // mark read before dropping
        if self.shared.round_trip {
            return;
        }
        // SAFETY: slots `from..count` hold initialised items of our unit
        // that nobody else will read or drop (offset already advanced).
        unsafe {
            let s = slot::<T>(unit, self.items_offset, from);
            (*unit)
                .track
                .write(|| ptr::drop_in_place(ptr::slice_from_raw_parts_mut(s, n)));
        }
    }

    /// Several producers: drops the unread items of the local chain and
    /// returns its units.
    fn drop_chain(&mut self) {
        while !self.cur.is_null() {
            self.drop_unread();
            self.spent();
        }
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        if self.shared.single {
            // Everything linked so far: dropped, its units returned but
            // the last, from which the queue's final drop carries on.
            loop {
                self.drop_unread();
                if !self.spent() {
                    break;
                }
            }
            self.shared.head.store(self.cur, Ordering::Release);
            return;
        }
        self.drop_chain();
        // What is published now: drop it too, so producers get their units
        // back; anything published later is dropped with the last handle.
        let list = detach(&self.shared.head);
        if !list.is_null() {
            // SAFETY: the detached chain is now exclusively ours.
            self.cur = unsafe { reverse(list, self.shared.geo.stride) };
            self.enter();
            self.drop_chain();
        }
    }
}

// ---------------------------------------------------------------------------
// Sharded consumer
// ---------------------------------------------------------------------------

/// Sharded topology: one single-producer queue per producer->consumer pair;
/// the consumer polls its queues round-robin. The starting queue rotates on
/// every call, so no shard is favoured; FIFO per producer as for
/// [`Consumer`].
pub struct ShardedConsumer<T>(RoundRobin<Consumer<T>>);

impl<T> fmt::Debug for ShardedConsumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedConsumer")
            .field("shards", &self.0.inputs().len())
            .finish()
    }
}

impl<T: Send> ShardedConsumer<T> {
    /// Polls `shards` round-robin.
    pub fn new(shards: Vec<Consumer<T>>) -> Self {
        ShardedConsumer(RoundRobin::new(shards))
    }

    /// Hands up to `max` items to `sink`, visiting every shard at most once
    /// per call, starting one shard later than the previous call.
    #[inline]
    pub fn recv(&mut self, max: usize, mut sink: impl FnMut(T)) -> usize {
        self.0.take(max, |c, got| c.recv(max - got, &mut sink))
    }

    /// Copies up to `out.len()` items into `out` (a prefix), round-robin as
    /// [`recv`](Self::recv).
    #[inline]
    pub fn recv_slice(&mut self, out: &mut [T]) -> usize
    where
        T: Copy,
    {
        self.0
            .take(out.len(), |c, got| c.recv_slice(&mut out[got..]))
    }

    /// True when every shard is empty (per-shard snapshots, see
    /// [`Consumer::is_empty`]).
    pub fn is_empty(&self) -> bool {
        self.0.inputs().iter().all(Consumer::is_empty)
    }

    /// The shards, in the order given to `new`.
    pub fn shards(&self) -> &[Consumer<T>] {
        self.0.inputs()
    }
}

// ---------------------------------------------------------------------------
// Backend-neutral traits (module `burst`)
// ---------------------------------------------------------------------------

impl<T: Copy + Send> BurstReceiver<T> for Consumer<T> {
    #[inline]
    fn recv_burst(&mut self, out: &mut [T]) -> usize {
        self.recv_slice(out)
    }

    fn is_empty(&self) -> bool {
        Consumer::is_empty(self)
    }

    #[inline]
    fn recv_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        Consumer::recv_with(self, max, take)
    }
}

impl<T: Copy + Send> BurstReceiver<T> for ShardedConsumer<T> {
    #[inline]
    fn recv_burst(&mut self, out: &mut [T]) -> usize {
        self.recv_slice(out)
    }

    fn is_empty(&self) -> bool {
        ShardedConsumer::is_empty(self)
    }

    #[inline]
    fn recv_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        self.0.recv_with(max, take)
    }
}
