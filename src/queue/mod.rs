//! # TransferQueue: burst hand-off between cores through linked transfer units
//!
//! ## What it owns and promises
//!
//! A TransferQueue moves values of type `T` (in the forwarder: mbuf pointers)
//! from one or more [`Producer`]s to one [`Consumer`]. It owns:
//!
//! * one **arena** per producer, allocated once through the caller's
//!   [`UnitMemory`] (DPDK `rte_zmalloc_socket` on the consumer's NUMA node in
//!   the forwarder, [`GlobalMemory`] in tests), holding that producer's
//!   fixed pool of **transfer units**;
//! * per producer, its own bookkeeping of those units (which are free,
//!   which are in flight and with how many items), allocated once at
//!   construction and touched by that producer only;
//! * the items while they are inside the queue. It does not own what the
//!   items point to: it moves references, never the packet buffers.
//!
//! Promises: a queue of `depth` items holds `depth` items, split over its
//! producers (each has a **budget** of [`items_per_producer`] =
//! `max(1, depth / producers)`), **whatever the sizes of the sends**, like
//! a ring of `depth` slots: never fewer (a send of one item costs one item
//! of budget, not a unit of `burst`), never more (the forwarder sizes its
//! mbuf pool from it). Nothing is allocated, logged or formatted on the data path
//! (`send*`/`recv*`); every item sent is handed out exactly once, or dropped
//! exactly once when the last handle goes; every arena is returned to the
//! [`UnitMemory`] that gave it when the last handle (producer, consumer or
//! [`Probe`]) is dropped.
//!
//! ## Transfer units
//!
//! A unit is a cache-line-aligned record: a header (`next` link, `count`,
//! per-producer `seq`uence number, `producer` index, reserved `flags`)
//! followed by `burst` item slots. `burst` is chosen at run time
//! (1..=[`MAX_BURST`]), so units are variable-size: the stride is
//! `round_up(header + burst * size_of::<T>(), 64)` ([`unit_stride`]) and all
//! of one producer's units live in one arena of `units * stride` bytes.
//! `producer` is a `u32` rather than a `u16` so that the producer count
//! needs no extra limit; the header is 24 bytes either way.
//! The alignment is 64 B ([`UNIT_ALIGN`]), not 128: a unit is owned by one
//! side at a time and most of it is written or read as a whole, so the
//! only sharing left is an adjacent-line-prefetch effect at unit
//! boundaries, while 128 would waste up to 127 B per unit of the memory
//! the queue touches (the write-up's bigger-is-slower knee).
//!
//! ## Algorithm
//!
//! * **Send.** A producer takes up to its budget minus its items in flight
//!   (see *Full*). For each unit's worth it takes a free unit (see *Reuse*),
//!   moves up to `burst` items into it, writes
//!   `count`/`seq`, and publishes it by pushing it on the consumer's list head
//!   with one CAS (Treiber push; no ABA problem because a push never
//!   dereferences the head it replaces). One CAS per unit, not per item;
//!   `send_slice` with more than `burst` items links the units it fills
//!   (newest first, as the list is) and pushes the whole segment with one
//!   CAS.
//! * **Receive.** The consumer does a relaxed load of the head and, only if it
//!   is non-null, detaches the whole list with one `swap(null)` (an empty head
//!   is never swapped, so an idle consumer keeps the head line shared instead
//!   of stealing it from producers). The detached chain is newest-first; the
//!   consumer reverses it (restoring per-producer FIFO) and keeps it as a local
//!   chain, handing items out of it across as many `recv` calls as needed
//!   (a unit may be split: the read offset is remembered).
//! * **Return.** A unit whose last item was handed out goes back to its
//!   producer by one plain `Release` store: the consumer bumps that
//!   producer's `returned` count (only the consumer writes it). Because the
//!   consumer takes each producer's units in publish order (the FIFO
//!   guarantee below), "n more units returned" names exactly which units are
//!   back — the n oldest in flight — so no return list is needed: the
//!   producer keeps its own FIFO of the units it published, and when the
//!   count has grown by n it pops the n oldest and frees them; the same
//!   store counts the unit's items back (see *Counts*).
//!   The producer caches the count and reloads it (`Acquire`) only when
//!   its cached state says it is short: of budget, or of warm units (see
//!   *Reuse*); with full units that is about once per `depth / burst` units,
//!   as often as a pool of that many units in a fixed cycle would.
//!   (Returning units by a CAS push on a per-producer return list instead
//!   cost, in the forwarder, a locked RMW per unit on the consumer and, on
//!   the producer, a swap plus a dependent miss on each unit's link, all on
//!   lines the other core had just written: tq forwarded 0.84 × ring with
//!   it, 0.97 × with the count, in one alternated run.)
//! * **Full.** Items in flight (published and not yet known returned) equal
//!   to the budget means the queue is full for this producer: `send` stops
//!   pulling items and returns how many it took; the rest stay with the
//!   caller (back-pressure, no spin inside). Items of a partly read unit
//!   count until its last one is read (the unit comes back whole). Each
//!   producer has its own budget and pool, so one stalled producer cannot
//!   starve the others.
//! * **Units.** Every send publishes at least one unit however few items it
//!   carries, so the budget can only be reached with one-item units if there
//!   are as many units as items of budget ([`units_per_producer`]); each
//!   still has `burst` slots. A unit in flight holds at least one item, so
//!   while the budget has room a unit is free: fullness is by items only.
//! * **Reuse.** Free units are reused LIFO by return: a producer-local stack
//!   onto which each reload puts the units it found returned, as one batch
//!   in publish order; the latest batch is reused first, and within it the
//!   oldest unit first, so a steady stream reuses its units in the order it
//!   used them (reusing a batch newest-first instead reversed the order
//!   the consumer reads the units in, and cost 1.3-2.1 × the cycles per
//!   item at burst 32, depth 4096 and 16384, and 1.2-2.4 × at burst 1, in
//!   one alternated run of the queue bench). Units never used
//!   are taken in index order, and only while fewer than
//!   `max(1, budget / burst)` are in use (the pool a stream of full units
//!   needs); past that the producer first reloads the count and reuses a
//!   returned unit if there is one. So the memory the queue touches follows
//!   what is in flight, not the pool (which is `burst` times larger than a
//!   full-unit stream needs): at full rate with full units it touches the
//!   same `depth / burst` units as a pool of that size, in the same order,
//!   and a stream of small sends that the consumer keeps up with touches no
//!   more; only a backlog of many small units warms more.
//! * **Empty.** `recv` returns 0 after one relaxed load when nothing is
//!   published and the local chain is spent.
//! * **Single producer.** A queue with one producer (every queue of the
//!   sharded topology) publishes without a read-modify-write, as rte_ring's
//!   SP/SC path does: units are linked **oldest first** from a stub unit
//!   (count 0, no producer's), the producer remembers the unit it published
//!   last (its *tail*) and publishes a chain by one `Release` store of the
//!   chain's first unit into the tail's `next`; the consumer follows `next`
//!   links with `Acquire` loads, so there is no list head, no swap and no
//!   reversal. The consumer returns a unit only once a unit is linked after
//!   it (the producer may still write the tail's `next`), so it keeps the
//!   last unit it read; it counts that unit's *items* back at once (the
//!   high half of `returned`, see *Counts*), so the producer's budget does
//!   not wait for the next publish, and the pool holds one unit more than
//!   the budget ([`units_per_producer`]) so that a unit is free whenever
//!   the budget has room. A locked RMW waits for every store before it,
//!   the unit's slots included, to reach the cache (on lines the consumer
//!   just read: a cross-core miss each); a plain store does not. When the
//!   consumer is dropped it stores the last unit it read into the (unused)
//!   list head, and the queue's final drop drops what was linked after it.
//! * **Counts: one store per unit.** A producer stores the items it
//!   published so far (from a local copy, so no load) into its pool, on a
//!   line only it writes, for [`Probe`]; the consumer's one store per
//!   returned unit carries the unit in the low half of the `returned`
//!   count and its items in the high half (with one producer, the last
//!   unit's items may come back in a store of their own, before the unit).
//!   The producer's items in flight are its items published minus the
//!   items returned; a probe reads the same difference.
//!
//! * **Round trip** ([`round_trip`], [`round_trip_sharded`]). The
//!   consumer works on the items where they lie (`recv_with`; *consumed*
//!   means processed) and hands them back to their producer with their
//!   unit, by the same one store per unit (*Return*, *Counts*); the
//!   producer takes them back oldest first (`Producer::take_back_with`,
//!   a prefix at a time), so a stage that both sends and takes back (an
//!   lcore that receives and transmits) reads lines its own core wrote,
//!   and the consumer writes no second queue. The producer's budget counts
//!   an item until it is taken back (so `depth` bounds the whole trip, and
//!   items in flight are a producer-local count: no reload for room), and
//!   a unit is free once both returned and emptied, both prefixes of the
//!   publish order, hence the smaller of the two counts. The high half of
//!   `returned` (items handed back) tells the producer what it may take
//!   back; with one producer the consumer hands a unit's items back
//!   before the unit (it keeps its last unit), so the producer may read
//!   those slots while the consumer still holds the unit: after handing
//!   the items back the consumer reads only the unit's `next` link, never
//!   its slots or its owner (the owner of a one-producer queue is 0).
//!   Items are [`Plain`]: nothing is dropped in place.
//!
//! ## Ordering guarantee
//!
//! FIFO per producer: items of one producer come out in the order that
//! producer sent them (units are pushed in order, a detach takes a prefix of
//! each producer's pushes, and the reversal restores push order). There is no
//! order across producers. [`ShardedConsumer`] preserves the same per-producer
//! FIFO (one queue per producer).
//!
//! ## Progress guarantee
//!
//! * A single producer is wait-free (one store publishes). Several
//!   producers are lock-free: the only loop is the publish CAS, which fails
//!   only if the head changed since it was read, i.e. another producer
//!   published or the consumer detached; each failure means another thread made
//!   progress. (`compare_exchange_weak` may also fail spuriously on LL/SC
//!   machines; on x86 it does not.) Taking a unit is wait-free (at most one
//!   load of the `returned` count, then producer-local list steps, one per
//!   unit that came back).
//! * The consumer's detach is wait-free (one load, at most one swap; with
//!   one producer, one `Acquire` load per unit), and so is returning a
//!   unit (one load of its own count, one store).
//! * Nobody ever waits for another thread inside the queue: full and empty are
//!   reported to the caller.
//!
//! ## Memory orderings, and why each is enough
//!
//! * **Publish: CAS `Release` on success.** The producer's plain writes to the
//!   slots and header (and the Relaxed `next` store) happen before its Release
//!   CAS. **Detach: swap `Acquire`.** The swap reads the value written by the
//!   latest RMW on the head; every publish CAS is an RMW, so it continues the
//!   release sequence of every earlier publish, and the Acquire swap
//!   synchronises with *every* producer whose unit is in the detached chain.
//!   Hence all items, counts and links of the chain are visible.
//! * **CAS failure: `Relaxed`.** On failure the producer only stores the
//!   observed head into its own unit's `next` and retries; it never
//!   dereferences that pointer.
//! * **Pre-check: `Relaxed` load** of the head (consumer) is a hint only: a
//!   stale null means the items are seen on the next poll; a non-null leads
//!   to the Acquire swap, which does the synchronisation. Only the consumer
//!   swaps the head, so a non-null it sees stays non-null until its swap.
//! * **Return: store `Release`; producer's reload: load `Acquire`.** The
//!   consumer's reads of a unit's slots (moving items out) happen before the
//!   Release store that counts it returned, and the producer puts a unit
//!   back on its free stack (and later refills it) only after an Acquire
//!   load that read a count including it, so a refill never races with a
//!   read (checked by loom, see `sync::Track`). The producer's bookkeeping
//!   (FIFO, free stack, items in flight) is its own, read and written by
//!   it alone, so it needs no ordering. The consumer's own Relaxed load of
//!   the count reads its own last store (sole writer).
//! * **`next` links: `Relaxed`.** A unit's `next` is only written by the
//!   producer before its Release publish, and only read after the Acquire
//!   detach (by the consumer, which then owns the chain). **One producer:
//!   the link is the publish**: the tail's `next` is stored `Release` after
//!   the chain's slots, headers and inner links (Relaxed), and the consumer
//!   loads every `next` `Acquire` before reading the unit it names. A unit
//!   is reused only after the consumer counted it returned, which it does
//!   only after it read a non-null `next` from it: from then on neither
//!   side touches that unit's `next` until the producer resets it (before
//!   its next Release publish).
//! * **Items published: `Relaxed`**, stored before the Release publish of
//!   the unit (only the producer writes it, from its own copy).
//!   A [`Probe`] loads `returned` (Acquire) before `published`, so it never
//!   sees more items returned than published.
//! * **Teardown:** `Arc`'s Release decrement / Acquire fence before the last
//!   drop makes every handle's writes visible to the final drop.
//!
//! ## Memory footprint
//!
//! Per producer: `units * unit_stride::<T>(burst)` bytes, one arena, where
//! `units = max(1, depth / producers)` ([`units_per_producer`], the item
//! budget), so `depth` is the queue's capacity in items at any send size,
//! split across producers. One producer's arena above [`MAX_ARENA_BYTES`]
//! (1 GiB) is refused ([`QueueError::TooLarge`]): that is a mistaken
//! `depth`/`burst`. Plus one `CachePadded` head and one `CachePadded`
//! `returned` count and one `CachePadded` `published` count per
//! producer, and per producer 8 bytes of bookkeeping
//! per unit (ordinary heap, touched only for units in use). Example:
//! 8-byte mbuf pointers, burst 32: 24 + 256 = 280 → 320 B per unit; depth
//! 16384 with 4 producers → 4096 units × 320 B = 1.25 MiB per producer,
//! 5 MiB in all ([`queue_bytes`]), of which a full-unit stream touches the
//! 128 units (40 KiB) per producer it needs (see *Reuse*).
//!
//! ## Teardown
//!
//! Shared state lives in an `Arc`. Dropping the [`Consumer`] drops the items in
//! its local chain and in the list published at that moment, and returns those
//! units to their producers; producers may keep sending afterwards into a
//! queue nobody reads (it fills up, `send` returns 0). When the last handle is
//! dropped, every item still published is dropped and every arena is freed
//! through the [`UnitMemory`]. A panic in `send`'s iterator publishes the items
//! already taken; a panic in `recv`'s sink loses nothing (the read offset is
//! advanced before each item is handed out).
//!
//! ## Files
//!
//! * `unit.rs`: a unit's layout (`Geometry`, `Unit`; [`unit_stride`] and
//!   the other sizes) and the list operations (`push`, `detach`,
//!   `reverse`, unit prefetch).
//! * `producer.rs`: [`Producer`], its bookkeeping of its pool, send and
//!   publish.
//! * `consumer.rs`: [`Consumer`] (receive, return) and
//!   [`ShardedConsumer`].
//! * `probe.rs`: [`Probe`], occupancy read from any thread.
//! * `shared.rs`: [`UnitMemory`], the pools and the state the handles
//!   share, and the final drop.
//! * `construct.rs`: [`channel`], [`sharded`], the size limits and
//!   [`QueueError`].
//! * `burst.rs` (the backend-neutral traits), `round_robin.rs` (one poll
//!   over several receivers), `sync.rs` (std or loom atomics).
//!
//! ## Tests
//!
//! * `queue::tests` (`cargo test --lib queue`): unit tests, stress with real
//!   threads (3 producers × 200 000 items, tiny depth forcing the full path,
//!   sharded), drop counting, panic safety; every unit back in its pool at the
//!   end; `depth` items held at send sizes 1, mixed and large, exactly `k`
//!   more after `k` received, split over producers; reuse touching only the
//!   warm units (arena headers never written stay zero). Counts are reduced
//!   under `cfg(miri)`.
//! * `queue::loom` (`scripts/loom.sh`: this module built as a crate of its
//!   own, `crates/queue-loom`, under `--cfg loom`): 2 producers + 1
//!   consumer (the list head), and with one producer (the Release link):
//!   unit return and reuse, full queue, one-item sends full by budget with
//!   LIFO reuse, items counted back before their unit (a budget of one),
//!   drain at shutdown, sharded, in place (`send_with`/`recv_with`, one and
//!   two producers, prefixes consumed), round trip (one and two producers,
//!   a unit refilled only once returned and taken back); preemption bound 3
//!   (`LOOM_MAX_PREEMPTIONS` overrides). Loom checks unit contents through one
//!   `loom::cell::UnsafeCell` per unit (`sync::Track`), the atomics with its
//!   C11 model, the FIFO self-check and `Arc` leaks. Under loom `push` starts
//!   its CAS from a null guess instead of a Relaxed load (see `push`): loom's
//!   DPOR only remembers the last access to an atomic, and the load would hide
//!   the interleavings that matter. Each weakened ordering (publish, detach,
//!   return store, producer's reload made Relaxed) was checked to fail the
//!   suite.
//! * Miri (`cargo +nightly miri test --lib queue`, needs the nightly `miri`
//!   and `rust-src` components): the same unit and stress tests, with Stacked
//!   and Tree Borrows, and Miri's data-race detector on the threaded tests.
//! * `tests/queue_api.rs`: the public API from outside the crate.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod burst;
mod construct;
mod consumer;
mod probe;
mod producer;
mod round_robin;
mod shared;
mod sync;
mod unit;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom;

pub use burst::{BurstReceiver, BurstSender, Plain};
pub use construct::{
    channel, round_trip, round_trip_sharded, sharded, QueueError, MAX_ARENA_BYTES, MAX_BURST,
};
pub use consumer::{Consumer, ShardedConsumer};
pub use probe::Probe;
pub use producer::Producer;
pub use round_robin::RoundRobin;
pub use shared::{GlobalMemory, UnitMemory};
pub use unit::{items_per_producer, queue_bytes, unit_stride, units_per_producer, UNIT_ALIGN};
