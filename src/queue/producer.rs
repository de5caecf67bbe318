//! The sending end ([`Producer`]): its own bookkeeping of its pool (the
//! units in flight in publish order, the free stack, the warm units),
//! taking a free unit, filling it and publishing it (*Send*, *Full*,
//! *Units*, *Reuse*, *Single producer* and *Counts* in the module doc of
//! `queue`).
//!
//! Promise: a producer never has more than its budget of items in the
//! queue, publishes each unit once, and refills a unit only after an
//! Acquire load of a `returned` count that includes it.

use core::fmt;
use core::ptr;

use super::burst::{BurstSender, Plain};
use super::shared::Shared;
use super::sync::{Arc, Ordering};
use super::unit::{prefetch_unit, push, slot, Unit};

/// No unit: the end of a list in [`Producer::book`].
const NONE: u32 = u32::MAX;

/// Sending end of a TransferQueue (one per producer thread/lcore). `Send`, not
/// `Sync`: move it to its thread.
pub struct Producer<T> {
    /// Items published and not yet known returned (at most `budget`).
    in_flight: usize,
    /// Items published since the start (wrapping): the value this
    /// producer stores into its pool's shared `published` count.
    published: u32,
    /// Items this producer may have in the queue: its share of `depth`.
    budget: usize,
    /// Top of the free stack (the oldest unit of the batch most recently
    /// found returned), or `NONE`. Only units below `warm` are ever on it.
    free: u32,
    /// Oldest unit published and not yet known returned (valid while any is).
    oldest: u32,
    /// Newest unit published (valid while any unit is in flight).
    newest: u32,
    /// Units ever put in use: indices `0..warm`; `warm` is the next fresh one.
    pub(super) warm: u32,
    /// Units put in use before the producer reloads the `returned` count to
    /// look for returned ones instead (`max(1, budget / burst)`).
    pub(super) warm_limit: u32,
    /// Per unit, the next unit on the list it is on: the in-flight FIFO
    /// (the unit published after it) or the free stack (the unit to be
    /// reused after it); `NONE` at the end (allocated at construction).
    book: Box<[u32]>,
    /// One producer: the unit published last (the stub before the first
    /// publish), whose `next` links the following publish.
    tail: *mut Unit,
    /// The pool's `returned` count as last loaded (Acquire): its units.
    returned_seen: u32,
    /// Round trip: the oldest unit whose items are not all taken back yet
    /// (`NONE`: none is in flight), ...
    back: u32,
    /// ... how many of its items are taken back, ...
    back_off: u32,
    /// ... the units whose items were all taken back (wrapping; a unit is
    /// free once it is also returned), ...
    units_done: u32,
    /// ... the items taken back (wrapping), and the items the consumer
    /// handed back as last loaded (the high half of `returned`).
    taken: u32,
    items_back: u32,
    /// Units published so far (wrapping); also the next unit's `seq`.
    seq: u32,
    /// Coalescing (`send_coalesced`): the unit being filled and not yet published (`NONE`:
    /// none), already taken off the free units and counted in flight, ...
    open: u32,
    /// ... and how many of its slots hold items (at least one while open).
    open_n: u32,
    id: u32,
    burst: usize,
    items_offset: usize,
    pub(super) shared: Arc<Shared<T>>,
}

// SAFETY: the producer exclusively owns its free units (never used, or
// published and already returned, found by index into its arena); moving it
// to another thread moves that ownership. Items it sends are `T: Send`.
unsafe impl<T: Send> Send for Producer<T> {}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("id", &self.id)
            .field("burst", &self.burst)
            .field("capacity", &self.budget)
            .field("units", &self.shared.geo.units)
            .finish_non_exhaustive()
    }
}

/// Coalescing: the open unit is published (its items reach the consumer, or
/// are dropped with the queue), not lost.
impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A unit being filled by `send`; publishes what it holds (an empty unit
/// simply stays free) when dropped, including on a panic in the caller's
/// iterator.
struct Fill<'a, T> {
    producer: &'a mut Producer<T>,
    idx: u32,
    unit: *mut Unit,
    n: usize,
}

impl<T> Drop for Fill<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.n != 0 {
            // SAFETY: the unit from `next_unit`, exclusively ours, its first
            // `n` slots are initialised.
            unsafe { self.producer.publish(self.idx, self.unit, self.n) }
        }
    }
}

impl<T: Send> Producer<T> {
    /// Moves items from `items` into units (up to `burst` per unit, one CAS per
    /// unit) while this producer has fewer than its capacity in the queue;
    /// pulls an item only when it has room for it, so on a full queue the
    /// rest stay in the iterator (handed back to the caller). Returns how
    /// many were taken.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tqfwd::queue::{self, GlobalMemory};
    ///
    /// // One producer that may hold 8 items in the queue.
    /// let (mut txs, mut rx) = queue::channel::<String>(1, 8, 4, Arc::new(GlobalMemory))?;
    /// let mut items = (0..10).map(|i| i.to_string());
    /// assert_eq!(txs[0].send(&mut items), 8); // full: two items stay behind
    /// assert_eq!(items.next().as_deref(), Some("8"));
    ///
    /// let mut got = Vec::new();
    /// assert_eq!(rx.recv(3, |s| got.push(s)), 3);
    /// assert_eq!(got, ["0", "1", "2"]);
    /// # Ok::<(), tqfwd::queue::QueueError>(())
    /// ```
    #[inline]
    pub fn send<I: Iterator<Item = T>>(&mut self, items: &mut I) -> usize {
        // Coalescing: what the open unit holds was sent first, so it goes first.
        self.flush();
        let burst = self.burst;
        let items_offset = self.items_offset;
        let mut taken = 0;
        loop {
            let limit = self.room(1).min(burst);
            if limit == 0 {
                break; // full
            }
            let (idx, unit) = self.next_unit();
            let mut fill = Fill {
                producer: self,
                idx,
                unit,
                n: 0,
            };
            while fill.n < limit {
                let Some(item) = items.next() else { break };
                // SAFETY: the unit is exclusively ours and `n < burst`, so the
                // slot is inside it; the slot holds no live item (free units
                // are empty).
                unsafe {
                    (*unit)
                        .track
                        .write(|| ptr::write(slot::<T>(unit, items_offset, fill.n), item))
                };
                fill.n += 1;
            }
            let n = fill.n;
            drop(fill); // publishes (n > 0) or leaves the unit free (n == 0)
            taken += n;
            if n < limit {
                break; // iterator exhausted
            }
        }
        taken
    }

    /// Copies a prefix of `items` into units and returns its length: all of
    /// `items` unless that would put more than this producer's capacity in
    /// the queue. All the units it fills are linked into one chain and
    /// published with **one** CAS (a Treiber push of a pre-linked segment),
    /// so a caller handing over several bursts at once pays for one
    /// contended RMW, not one per unit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tqfwd::queue::{self, GlobalMemory};
    ///
    /// let (mut txs, mut rx) = queue::channel::<u32>(1, 16, 4, Arc::new(GlobalMemory))?;
    /// let items: Vec<u32> = (0..20).collect();
    /// assert_eq!(txs[0].send_slice(&items), 16); // a prefix: the queue holds 16
    /// assert_eq!(txs[0].send_slice(&items[16..]), 0); // full until the consumer reads
    ///
    /// let mut out = [0u32; 16];
    /// assert_eq!(rx.recv_slice(&mut out), 16);
    /// assert_eq!(out[..], items[..16]);
    /// assert_eq!(txs[0].send_slice(&items[16..]), 4); // room again
    /// # Ok::<(), tqfwd::queue::QueueError>(())
    /// ```
    #[inline]
    pub fn send_slice(&mut self, items: &[T]) -> usize
    where
        T: Copy,
    {
        // Coalescing: what the open unit holds was sent first, so it goes first.
        self.flush();
        let take = items.len().min(self.room(items.len()));
        if take == 0 {
            return 0; // nothing to send, or full
        }
        let single = self.shared.single;
        let (mut newest, mut oldest) = (ptr::null_mut::<Unit>(), ptr::null_mut::<Unit>());
        let mut done = 0;
        while done < take {
            let (idx, unit) = self.next_unit();
            let n = (take - done).min(self.burst);
            // SAFETY: the unit is free, so exclusively ours; `n <= burst`
            // slots fit in it, and `items[done..done + n]` is in bounds;
            // `T: Copy`, so the copies need no drop bookkeeping. The Release
            // CAS in `push` publishes these writes.
            unsafe {
                let dst = slot::<T>(unit, self.items_offset, 0);
                (*unit)
                    .track
                    .write(|| ptr::copy_nonoverlapping(items.as_ptr().add(done), dst, n));
                self.seal(idx, unit, n);
                if single {
                    // Oldest first: the unit filled before this one links
                    // to it; the last one links to nothing (yet).
                    (*unit).next.store(ptr::null_mut(), Ordering::Relaxed);
                    if !newest.is_null() {
                        (*newest).next.store(unit, Ordering::Relaxed);
                    }
                } else {
                    // Newest first: this unit links to the one filled
                    // before it (the oldest one's link is set by `push`).
                    (*unit).next.store(newest, Ordering::Relaxed);
                }
            }
            if oldest.is_null() {
                oldest = unit;
            }
            newest = unit;
            done += n;
        }
        // SAFETY: oldest → … → newest (one producer) or newest → … →
        // oldest is a chain of our filled units.
        unsafe {
            if single {
                self.append(oldest, newest);
            } else {
                push(&self.shared.head, newest, oldest);
            }
        }
        done
    }

    /// In place (see `burst`): lends the slots of one free unit, at most
    /// `max`, `burst` and the room left in this producer's budget, to
    /// `fill`, and publishes the prefix it says it wrote, as one unit.
    /// `None` when the budget is spent (`fill` is not called); `Some(0)`
    /// when `fill` wrote nothing (the unit stays free).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tqfwd::queue::{self, GlobalMemory};
    ///
    /// let (mut txs, mut rx) = queue::channel::<u64>(1, 64, 32, Arc::new(GlobalMemory))?;
    /// // Write straight into one unit's slots (as RX receives into them).
    /// let sent = txs[0].send_with(32, |slots| {
    ///     for (i, s) in slots.iter_mut().take(5).enumerate() {
    ///         *s = 100 + i as u64;
    ///     }
    ///     5 // the prefix written: published as one unit
    /// });
    /// assert_eq!(sent, Some(5));
    ///
    /// let mut sum = 0;
    /// assert_eq!(rx.recv_with(32, |items| { sum = items.iter().sum(); items.len() }), 5);
    /// assert_eq!(sum, 100 + 101 + 102 + 103 + 104);
    /// # Ok::<(), tqfwd::queue::QueueError>(())
    /// ```
    #[inline]
    pub fn send_with(&mut self, max: usize, fill: impl FnOnce(&mut [T]) -> usize) -> Option<usize>
    where
        T: Plain,
    {
        let limit = self.room(1).min(self.burst).min(max);
        if limit == 0 {
            return if max == 0 { Some(0) } else { None };
        }
        let (idx, unit) = self.next_unit();
        // SAFETY: the unit is free, so exclusively ours until published;
        // slots `0..limit` (limit <= burst) lie inside it, and hold valid
        // `T`s: the arena was zeroed and slots are only ever written with
        // `T`s, and every bit pattern is a `T` (`Plain`). No item in them is
        // live (free units hold none), so overwriting needs no drop.
        let n = unsafe {
            (*unit).track.write(|| {
                let slots =
                    std::slice::from_raw_parts_mut(slot::<T>(unit, self.items_offset, 0), limit);
                fill(slots).min(limit)
            })
        };
        if n != 0 {
            // SAFETY: unit `idx` from `next_unit`, exclusively ours, its
            // first `n` slots written by `fill`.
            unsafe { self.publish(idx, unit, n) };
        }
        Some(n)
    }

    /// In place and coalescing: as [`send_with`](Self::send_with), but a
    /// unit is published only once its slots are full; one that is not
    /// stays open, unseen by the consumer, and the next `send_coalesced`
    /// fills it further, until [`flush`](Self::flush) (or a `send`,
    /// `send_slice`, or dropping the producer) publishes it. A stage that
    /// scatters bursts over several queues sends each a fraction of a
    /// burst: coalescing, each queue still gets whole units, so the
    /// consumer follows one unit's header, link and return per `burst`
    /// items instead of one per send. The caller bounds how long items
    /// wait by flushing (the forwarder: when its input runs dry, and every
    /// few polls). A run is never split over two units: an open unit with
    /// fewer free slots than the run could take (at most `max`, `burst`
    /// and the budget's room) is published as it is first, and the run
    /// goes into a fresh one. A round-trip queue does not coalesce (its
    /// take-back is proven for units published by every send): there it
    /// is `send_with`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tqfwd::queue::{self, GlobalMemory};
    ///
    /// let (mut txs, mut rx) = queue::channel::<u64>(1, 64, 8, Arc::new(GlobalMemory))?;
    /// let tx = &mut txs[0];
    /// assert_eq!(tx.send_coalesced(8, |s| { s[..3].copy_from_slice(&[1, 2, 3]); 3 }), Some(3));
    /// assert_eq!(rx.recv_slice(&mut [0; 8]), 0); // the unit is open: nothing published yet
    /// // A run of at most 5 fits the open unit's 5 free slots.
    /// assert_eq!(tx.send_coalesced(5, |s| { s.copy_from_slice(&[4, 5, 6, 7, 8]); 5 }), Some(5));
    /// let mut out = [0u64; 8];
    /// assert_eq!(rx.recv_slice(&mut out), 8); // the unit filled up: published
    /// assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
    /// assert_eq!(tx.send_coalesced(8, |s| { s[0] = 9; 1 }), Some(1));
    /// // A run of up to 8 would not fit the 7 slots left: the open unit
    /// // goes out as it is, and the run gets a fresh one.
    /// assert_eq!(tx.send_coalesced(8, |s| { s[0] = 10; 1 }), Some(1));
    /// assert_eq!(rx.recv_slice(&mut out), 1);
    /// assert_eq!(tx.flush(), 1);
    /// assert_eq!(rx.recv_slice(&mut out), 1);
    /// assert_eq!(out[0], 10);
    /// # Ok::<(), tqfwd::queue::QueueError>(())
    /// ```
    #[inline]
    pub fn send_coalesced(
        &mut self,
        max: usize,
        fill: impl FnOnce(&mut [T]) -> usize,
    ) -> Option<usize>
    where
        T: Plain,
    {
        if self.shared.round_trip {
            return self.send_with(max, fill);
        }
        self.send_open(max, fill)
    }

    /// Coalescing: lends the open unit's free slots (or a free unit's), at
    /// most `max` and the budget's room, to `fill`, counts what it wrote
    /// in flight, and publishes the unit once it is full.
    #[inline]
    fn send_open(&mut self, max: usize, fill: impl FnOnce(&mut [T]) -> usize) -> Option<usize>
    where
        T: Plain,
    {
        let limit = self.room(1).min(self.burst).min(max);
        if limit == 0 {
            return if max == 0 { Some(0) } else { None };
        }
        if self.open != NONE && self.burst - (self.open_n as usize) < limit {
            self.flush();
        }
        let (idx, unit, from) = if self.open != NONE {
            let unit = self.shared.unit(self.id as usize, self.open as usize);
            (self.open, unit, self.open_n as usize)
        } else {
            let (idx, unit) = self.next_unit();
            (idx, unit, 0)
        };
        // SAFETY: the unit is free or our open unit, exclusively ours
        // until published; slots `from..from + limit` lie inside it
        // (`from + limit <= burst`, above) and hold valid `T`s that are
        // not live items (zeroed, or items that already left; `Plain`), so
        // overwriting needs no drop.
        let n = unsafe {
            (*unit).track.write(|| {
                let slots =
                    std::slice::from_raw_parts_mut(slot::<T>(unit, self.items_offset, from), limit);
                fill(slots).min(limit)
            })
        };
        if n == 0 {
            return Some(0);
        }
        if from == 0 {
            // SAFETY: unit `idx` from `next_unit`, nothing taken since.
            unsafe { self.claim(idx, unit) };
            self.open = idx;
        }
        self.count_sent(n);
        self.open_n = (from + n) as u32;
        if from + n == self.burst {
            self.flush();
        }
        Some(n)
    }

    /// Round trip ([`round_trip`](super::round_trip)): lends the items
    /// the consumer handed back and this producer has not taken back yet,
    /// at most `max` and one unit's, oldest first (publish order), to
    /// `take`, which returns how many of them (a prefix) it took; those
    /// leave the queue and count against the budget no more. The rest stay
    /// first in line with whatever values `take` left in them. Returns that
    /// count; 0 without calling `take` when nothing came back (one load of
    /// the `returned` count when the last one showed nothing more).
    #[inline]
    pub fn take_back_with(&mut self, max: usize, take: impl FnOnce(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        debug_assert!(self.shared.round_trip);
        if self.back == NONE || max == 0 {
            return 0;
        }
        let mut ready = self.items_back.wrapping_sub(self.taken);
        if ready == 0 {
            self.reclaim();
            ready = self.items_back.wrapping_sub(self.taken);
            if ready == 0 {
                return 0;
            }
        }
        let idx = self.back;
        let unit = self.shared.unit(self.id as usize, idx as usize);
        let from = self.back_off as usize;
        // SAFETY: unit `idx` is in flight and its items were handed back
        // (the Acquire load in `reclaim` read a count including them):
        // the consumer no longer reads or writes its header or slots; we
        // wrote the header at `seal` and only read it here.
        let count = unsafe { (*unit).track.read(|| (*unit).count) } as usize;
        if from == 0 {
            // The consumer's core read the slots last, so their lines may
            // have moved there: ask for all of them at once, and for the
            // next unit's when its items are back too.
            prefetch_unit(unit, self.shared.geo.stride);
            let next = self.book[idx as usize];
            if ready as usize > count && next != NONE {
                prefetch_unit(
                    self.shared.unit(self.id as usize, next as usize),
                    self.shared.geo.stride,
                );
            }
        }
        let n = (count - from).min(ready as usize).min(max);
        // SAFETY: slots `from..from + n` (`from + n <= count <= burst`)
        // hold items handed back and not yet taken back, valid `T`s; the
        // consumer no longer touches them (above), so the slice is ours.
        let used = unsafe {
            (*unit).track.write(|| {
                let items =
                    std::slice::from_raw_parts_mut(slot::<T>(unit, self.items_offset, from), n);
                take(items).min(n)
            })
        };
        self.taken = self.taken.wrapping_add(used as u32);
        self.in_flight -= used;
        if from + used == count {
            self.back_off = 0;
            self.units_done = self.units_done.wrapping_add(1);
            // The unit published after it, if any (`seal` sets `back`
            // otherwise).
            self.back = self.book[idx as usize];
        } else {
            self.back_off = (from + used) as u32;
        }
        used
    }

    /// Round trip: items published and not yet taken back (0: the queue
    /// holds nothing of this producer's, and nothing is on its way back).
    pub fn outstanding(&self) -> usize {
        self.in_flight
    }

    /// Units of this producer's pool not in flight: its pool minus the
    /// units published and not yet returned. A snapshot (the consumer may
    /// return more right after). The queue is full by items, not units
    /// ([`capacity`](Self::capacity)): `units() - free_units()` is at most
    /// the items in flight.
    pub fn free_units(&self) -> usize {
        // The low half: units.
        let returned = self.shared.pools[self.id as usize]
            .returned
            .load(Ordering::Acquire) as u32;
        self.shared.geo.units - self.seq.wrapping_sub(returned) as usize
    }

    /// Units in this producer's pool (as many as its capacity in items).
    pub fn units(&self) -> usize {
        self.shared.geo.units
    }

    /// Items this producer may have in the queue at once, whatever the sizes
    /// of its sends (its share of the queue's depth, [`items_per_producer`](super::items_per_producer)).
    pub fn capacity(&self) -> usize {
        self.budget
    }

    /// Items per unit.
    pub fn burst(&self) -> usize {
        self.burst
    }

    /// This producer's index (0-based, in the order `channel` returned them).
    pub fn id(&self) -> usize {
        self.id as usize
    }
}

// Internal helpers need no `T: Send` (the `Fill` guard's `Drop` uses them).
impl<T> Producer<T> {
    /// Producer `id` of the queue `shared` (built by `channel`), with every
    /// unit of its pool free and none used yet.
    pub(super) fn new(id: u32, shared: Arc<Shared<T>>) -> Self {
        let (budget, burst) = (shared.budget, shared.geo.burst);
        Producer {
            in_flight: 0,
            published: 0,
            budget,
            free: NONE,
            oldest: NONE,
            newest: NONE,
            warm: 0,
            // The pool a stream of full units needs: what the producer puts
            // in use before it looks for returned units first.
            warm_limit: (budget / burst).max(1) as u32,
            book: vec![NONE; shared.geo.units].into_boxed_slice(),
            tail: shared.stub,
            returned_seen: 0,
            back: NONE,
            back_off: 0,
            units_done: 0,
            taken: 0,
            items_back: 0,
            seq: 0,
            open: NONE,
            open_n: 0,
            id,
            burst,
            items_offset: shared.geo.items_offset,
            shared,
        }
    }

    /// Items that may still be sent, by the cached in-flight count; reloads
    /// the shared `returned` count only when that shows fewer than `wanted`.
    #[inline]
    fn room(&mut self, wanted: usize) -> usize {
        let room = self.budget - self.in_flight;
        if room >= wanted {
            return room;
        }
        self.reclaim();
        self.budget - self.in_flight
    }

    /// Loads the `returned` count and takes back the units it newly counts:
    /// the oldest ones in flight (the consumer returns them in publish
    /// order). They go on top of the free stack as one batch, still in
    /// publish order: the latest batch is reused first, and within it the
    /// oldest unit first, so a steady stream reuses units in the order it
    /// used them (ascending addresses, as the consumer read them) rather
    /// than reversed.
    #[inline(always)]
    fn reclaim(&mut self) {
        // Acquire: the consumer's reads of the returned units happen before
        // our refill (its Release store, see the module doc).
        let returned = self.shared.pools[self.id as usize]
            .returned
            .load(Ordering::Acquire);
        let mut back = (returned as u32).wrapping_sub(self.returned_seen);
        if self.shared.round_trip {
            // Items stay in flight until taken back (`take_back_with`),
            // and a unit is free once it is returned and emptied too: both
            // are prefixes of the publish order.
            self.items_back = (returned >> 32) as u32;
            back = back.min(self.units_done.wrapping_sub(self.returned_seen));
        } else {
            // The high half: items counted back (with one producer, a
            // unit's items may come back before the unit itself).
            self.in_flight = self.published.wrapping_sub((returned >> 32) as u32) as usize;
        }
        // The low half: units.
        if back == 0 {
            return;
        }
        self.returned_seen = self.returned_seen.wrapping_add(back);
        // The batch is the FIFO's prefix `first ..= last`, already linked
        // in publish order: splice it onto the stack.
        let first = self.oldest;
        let mut last = first;
        for _ in 1..back {
            last = self.book[last as usize];
        }
        self.oldest = self.book[last as usize];
        self.book[last as usize] = self.free;
        self.free = first;
    }

    /// The unit the next publish fills (it stays free until `seal`): the top
    /// of the free stack; else a fresh one while fewer than
    /// `warm_limit` are in use; else, after reloading the `returned`
    /// count, a returned one if any, or a fresh one.
    ///
    /// The caller has room for at least one more item (`room`), so a unit
    /// is always free: every unit in flight holds at least one item and
    /// there are as many units as items of budget.
    #[inline(always)]
    fn next_unit(&mut self) -> (u32, *mut Unit) {
        if self.free == NONE && self.warm >= self.warm_limit {
            self.reclaim();
        }
        let idx = if self.free != NONE {
            self.free
        } else {
            // Not a debug assertion: a miscount here would index past the arena.
            assert!(
                (self.warm as usize) < self.shared.geo.units,
                "TransferQueue: no free unit with room in the budget"
            );
            self.warm
        };
        (idx, self.shared.unit(self.id as usize, idx as usize))
    }

    /// Takes unit `idx` (from `next_unit`) off the free units, writes its
    /// header (count, seq) and records it in flight with `n` items; the
    /// caller then publishes it.
    ///
    /// # Safety
    /// `unit` is unit `idx` of this producer's arena, the one `next_unit`
    /// returned (nothing taken since), exclusively owned, whose first `n`
    /// slots (`1 <= n <= burst`) hold initialised items.
    #[inline(always)]
    unsafe fn seal(&mut self, idx: u32, unit: *mut Unit, n: usize) {
        // SAFETY: the caller's contract.
        unsafe { self.claim(idx, unit) };
        self.count_sent(n);
        // SAFETY: exclusively owned unit (caller's contract); the caller's
        // Release publish makes the count visible with the items.
        unsafe { (*unit).track.write(|| (*unit).count = n as u32) };
    }

    /// Takes unit `idx` (from `next_unit`) off the free units, puts it in
    /// flight as the newest unit (the FIFO the returns pop) and writes its
    /// `seq`; its count is written when it is published.
    ///
    /// # Safety
    /// `unit` is unit `idx` of this producer's arena, the one `next_unit`
    /// returned (nothing taken since), exclusively owned; it gets at least
    /// one item before it is published.
    #[inline(always)]
    unsafe fn claim(&mut self, idx: u32, unit: *mut Unit) {
        // Fresh units (`idx == warm`) are never on the free stack.
        if idx == self.free {
            self.free = self.book[idx as usize];
        } else {
            debug_assert_eq!(idx, self.warm);
            self.warm += 1;
        }
        let seq = self.seq;
        if seq == self.returned_seen {
            self.oldest = idx; // nothing else in flight
        } else {
            self.book[self.newest as usize] = idx;
        }
        if self.back == NONE {
            self.back = idx; // round trip: nothing else to take back
        }
        self.newest = idx;
        self.book[idx as usize] = NONE;
        self.seq = seq.wrapping_add(1);
        // SAFETY: exclusively owned unit (caller's contract); published
        // later by a Release store or CAS.
        unsafe { (*unit).track.write(|| (*unit).seq = seq) };
    }

    /// `n` more items in flight and sent.
    #[inline(always)]
    fn count_sent(&mut self, n: usize) {
        self.in_flight += n;
        // For `Probe`: one plain store to a line only this producer writes
        // (kept from a local copy, so no load), before the Release publish
        // of the unit.
        self.published = self.published.wrapping_add(n as u32);
        self.shared.pools[self.id as usize]
            .published
            .store(self.published, Ordering::Relaxed);
    }

    /// Coalescing ([`send_coalesced`](Self::send_coalesced)): publishes
    /// the open unit, if any, as it is; returns how many items it held (0:
    /// none was open).
    #[inline]
    pub fn flush(&mut self) -> usize {
        if self.open == NONE {
            return 0;
        }
        let (idx, n) = (self.open, self.open_n);
        self.open = NONE;
        self.open_n = 0;
        let unit = self.shared.unit(self.id as usize, idx as usize);
        // SAFETY: the open unit is claimed, exclusively ours and holds `n
        // >= 1` items in its first slots; linking it publishes it.
        unsafe {
            (*unit).track.write(|| (*unit).count = n);
            self.link(unit);
        }
        n as usize
    }

    /// # Safety
    /// As [`Producer::seal`].
    #[inline]
    unsafe fn publish(&mut self, idx: u32, unit: *mut Unit, n: usize) {
        // SAFETY: as `seal`'s contract (ours).
        unsafe {
            self.seal(idx, unit, n);
            self.link(unit);
        }
    }

    /// Publishes `unit` alone: linked after the unit published last (one
    /// producer) or pushed on the list head.
    ///
    /// # Safety
    /// `unit` is one of ours, claimed, its count and items written.
    #[inline(always)]
    unsafe fn link(&mut self, unit: *mut Unit) {
        // SAFETY: the caller's contract; `unit` alone is a chain.
        unsafe {
            if self.shared.single {
                (*unit).next.store(ptr::null_mut(), Ordering::Relaxed);
                self.append(unit, unit);
            } else {
                push(&self.shared.head, unit, unit);
            }
        }
    }

    /// One producer: links the chain `first → … → last` (oldest first,
    /// `last.next` null) after the unit published last, with one Release
    /// store and no read-modify-write (see *Single producer*).
    ///
    /// # Safety
    /// The chain's units are filled, sealed and exclusively ours; the queue
    /// has one producer (this one).
    #[inline(always)]
    unsafe fn append(&mut self, first: *mut Unit, last: *mut Unit) {
        debug_assert!(self.shared.single);
        // Release: publishes the chain's items, headers and links. `tail`
        // stays ours to link from until this store makes the consumer able
        // to move past it (it never returns the unit it would move from
        // before reading a non-null `next`).
        // SAFETY: `tail` is the stub or our last published unit, which the
        // consumer cannot have returned: nothing was linked after it yet.
        unsafe { (*self.tail).next.store(first, Ordering::Release) };
        self.tail = last;
    }
}

// ---------------------------------------------------------------------------
// Backend-neutral traits (module `burst`)
// ---------------------------------------------------------------------------

impl<T: Copy + Send> BurstSender<T> for Producer<T> {
    #[inline]
    fn send_burst(&mut self, items: &[T]) -> usize {
        self.send_slice(items)
    }

    #[inline]
    fn send_with(&mut self, max: usize, fill: &mut dyn FnMut(&mut [T]) -> usize) -> Option<usize>
    where
        T: Plain,
    {
        Producer::send_with(self, max, fill)
    }

    #[inline]
    fn take_back_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        if !self.shared.round_trip {
            return 0;
        }
        Producer::take_back_with(self, max, take)
    }

    fn outstanding(&self) -> usize {
        if self.shared.round_trip {
            self.in_flight
        } else {
            0
        }
    }

    #[inline]
    fn send_coalesced(
        &mut self,
        max: usize,
        _may_wait: bool,
        fill: &mut dyn FnMut(&mut [T]) -> usize,
    ) -> Option<usize>
    where
        T: Plain,
    {
        Producer::send_coalesced(self, max, fill)
    }

    #[inline]
    fn flush(&mut self) -> usize {
        Producer::flush(self)
    }
}
