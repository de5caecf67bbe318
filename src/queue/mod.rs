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
//!   two producers, prefixes consumed); preemption bound 3
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
mod round_robin;
mod sync;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom;

use core::alloc::Layout;
use core::fmt;
use core::marker::PhantomData;
use core::mem::{align_of, size_of};
use core::ptr::{self, NonNull};

use crossbeam_utils::CachePadded;

use self::sync::{Arc, AtomicPtr, AtomicU32, AtomicU64, Ordering, Track};
pub use burst::{BurstReceiver, BurstSender, Plain};
pub use round_robin::RoundRobin;

/// Largest `burst` (items per transfer unit) accepted by [`channel`].
pub const MAX_BURST: usize = 256;

/// Alignment (and stride granularity) of transfer units, in bytes. Raised to
/// `align_of::<T>()` for over-aligned item types.
pub const UNIT_ALIGN: usize = 64;

/// Largest arena (one producer's transfer units) [`channel`] builds: 1 GiB.
/// A bigger one is a mistaken `depth`/`burst`, not a queue anyone needs.
pub const MAX_ARENA_BYTES: usize = 1 << 30;

// ---------------------------------------------------------------------------
// Memory provider
// ---------------------------------------------------------------------------

/// Where the queue's arenas come from (one allocation per producer, at
/// construction only).
pub trait UnitMemory: Send + Sync {
    /// Zeroed memory for `layout`, or None when the provider is out of memory.
    fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>>;
    /// Returns memory to the provider.
    ///
    /// # Safety
    /// `ptr` came from `alloc_zeroed` of this provider with the same layout,
    /// and is not used afterwards.
    unsafe fn free(&self, ptr: NonNull<u8>, layout: Layout);
}

/// [`UnitMemory`] backed by the Rust global allocator (`std::alloc`).
#[derive(Debug, Default, Clone, Copy)]
pub struct GlobalMemory;

impl UnitMemory for GlobalMemory {
    fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        if layout.size() == 0 {
            return None;
        }
        // SAFETY: `layout` has a non-zero size (checked above).
        NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
    }

    unsafe fn free(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from `alloc_zeroed` above
        // with this `layout`, i.e. from `std::alloc::alloc_zeroed(layout)`.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why [`channel`] could not build a queue.
#[derive(Debug)]
pub enum QueueError {
    /// `burst` is 0 or above [`MAX_BURST`].
    BadBurst(usize),
    /// `depth` is not a power of two (0 included).
    BadDepth(usize),
    /// `producers` is 0.
    NoProducers,
    /// One producer's arena would exceed [`MAX_ARENA_BYTES`]: `bytes` for
    /// `depth` items (split over the producers) at `burst` slots per unit.
    TooLarge {
        depth: usize,
        burst: usize,
        bytes: usize,
    },
    /// The [`UnitMemory`] could not provide the arenas (`bytes` in all).
    OutOfMemory { bytes: usize },
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::BadBurst(b) => write!(
                f,
                "transfer-queue burst {b} is out of range: use 1..={MAX_BURST} items per transfer unit"
            ),
            QueueError::BadDepth(d) => write!(
                f,
                "transfer-queue depth {d} is not a power of two: use a power of two >= 1 (e.g. 4096)"
            ),
            QueueError::NoProducers => {
                write!(f, "a transfer queue needs at least one producer: pass producers >= 1")
            }
            QueueError::TooLarge {
                depth,
                burst,
                bytes,
            } => write!(
                f,
                "transfer-queue depth {depth} at burst {burst} needs {bytes} bytes of transfer \
                 units per producer, above the {MAX_ARENA_BYTES}-byte limit: lower the depth or \
                 the burst (each producer has depth/producers units of burst item slots)"
            ),
            QueueError::OutOfMemory { bytes } => write!(
                f,
                "could not allocate {bytes} bytes of transfer units: lower the depth or burst, \
                 or give the memory provider more memory (e.g. more hugepages on that NUMA node)"
            ),
        }
    }
}

impl std::error::Error for QueueError {}

// ---------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------

/// Items one producer may have in a queue of `depth` items shared by
/// `producers` producers: `max(1, depth / producers)` (so the queue holds at
/// most `depth` items, and every producer at least one). A zero `producers`
/// is treated as 1 here; [`channel`] rejects it.
pub fn items_per_producer(producers: usize, depth: usize) -> usize {
    (depth / producers.max(1)).max(1)
}

/// Transfer units per producer: as many as its item budget
/// ([`items_per_producer`]), so that the budget can be reached by sends of
/// one item each (every send publishes at least one unit), plus one for a
/// single-producer queue (its consumer keeps the last unit it read until
/// the next one is linked to it, see *Single producer*). `burst` sets the
/// size of a unit ([`unit_stride`]), not how many there are.
pub fn units_per_producer(producers: usize, depth: usize, _burst: usize) -> usize {
    items_per_producer(producers, depth) + usize::from(producers == 1)
}

/// Bytes of one transfer unit holding `burst` items of `T` (header + slots,
/// rounded up to [`UNIT_ALIGN`]). Saturates at `usize::MAX` on overflow.
pub fn unit_stride<T>(burst: usize) -> usize {
    Geometry::new::<T>(1, burst).map_or(usize::MAX, |g| g.stride)
}

/// Total bytes of transfer units that [`channel`] allocates for these
/// parameters (all producers' arenas). Saturates at `usize::MAX`.
pub fn queue_bytes<T>(producers: usize, depth: usize, burst: usize) -> usize {
    unit_stride::<T>(burst)
        .saturating_mul(units_per_producer(producers, depth, burst))
        .saturating_mul(producers)
}

#[derive(Clone, Copy, Debug)]
struct Geometry {
    burst: usize,
    units: usize,
    /// Offset of slot 0 from the start of a unit.
    items_offset: usize,
    /// Distance between consecutive units in an arena.
    stride: usize,
    /// Layout of one producer's arena.
    arena: Layout,
}

impl Geometry {
    fn new<T>(units: usize, burst: usize) -> Option<Geometry> {
        let align = UNIT_ALIGN.max(align_of::<T>()).max(align_of::<Unit>());
        let items_offset = size_of::<Unit>().checked_next_multiple_of(align_of::<T>())?;
        let bytes = size_of::<T>()
            .checked_mul(burst)?
            .checked_add(items_offset)?;
        let stride = bytes.checked_next_multiple_of(align)?;
        let arena = Layout::from_size_align(stride.checked_mul(units)?, align).ok()?;
        Some(Geometry {
            burst,
            units,
            items_offset,
            stride,
            arena,
        })
    }
}

// ---------------------------------------------------------------------------
// Units and lists
// ---------------------------------------------------------------------------

/// Header of a transfer unit; `burst` item slots follow at
/// `Geometry::items_offset`.
#[repr(C)]
struct Unit {
    /// Link in the list the unit is on while published (consumer head, then
    /// the consumer's local chain). Written only by the unit's owner: the
    /// producer before publishing, the consumer when it reverses the chain.
    next: AtomicPtr<Unit>,
    /// Items in the slots (1..=burst while published).
    count: u32,
    /// Per-producer sequence number of the unit (wrapping).
    seq: u32,
    /// Index of the producer owning the arena this unit lives in.
    producer: u32,
    /// Reserved, 0.
    flags: u32,
    /// Race detector for the unit's contents under loom; ZST otherwise.
    track: Track,
}

impl Unit {
    fn new(producer: u32) -> Unit {
        Unit {
            next: AtomicPtr::new(ptr::null_mut()),
            count: 0,
            seq: 0,
            producer,
            flags: 0,
            track: Track::new(),
        }
    }
}

/// Pointer to slot `i` of `unit`.
///
/// # Safety
/// `unit` points to a unit of an arena built with `items_offset`, and
/// `i <= burst`.
#[inline(always)]
unsafe fn slot<T>(unit: *mut Unit, items_offset: usize, i: usize) -> *mut T {
    // SAFETY: slot 0 is `items_offset` bytes into the unit and slots
    // 0..=burst stay inside (or one past) the unit's stride, in the same
    // allocation (caller's contract).
    unsafe { unit.cast::<u8>().add(items_offset).cast::<T>().add(i) }
}

/// Pushes the chain `first` → … → `last` (linked through `next`, newest
/// first) on the lock-free list at `head` with one CAS on success; a single
/// unit is the chain `first == last`.
///
/// # Safety
/// The chain's units are valid and owned exclusively by the caller, `first`
/// reaches `last` through their `next` links; ownership passes to whoever
/// detaches the list.
#[inline]
unsafe fn push(head: &AtomicPtr<Unit>, first: *mut Unit, last: *mut Unit) {
    // SAFETY: `last` is valid (caller's contract); `next` is an atomic, so a
    // shared reference to it is fine even once the unit changes hands.
    let next = unsafe { &(*last).next };
    // The first guess of the head. Under loom the guess is null and the CAS
    // itself reads the head: the ordering properties are the same (either way
    // `cur` comes from a Relaxed read and is only stored into our own unit),
    // but loom's DPOR tracks only the *last* access to an atomic, so a plain
    // load right before the CAS hides the other side's earlier accesses and
    // prunes the interleavings this model exists to check.
    #[cfg(not(loom))]
    let mut cur = head.load(Ordering::Relaxed);
    #[cfg(loom)]
    let mut cur = ptr::null_mut();
    loop {
        next.store(cur, Ordering::Relaxed);
        // Release: publishes everything written to the unit (see module doc).
        // Relaxed failure: `cur` is only stored into our own unit.
        match head.compare_exchange_weak(cur, first, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(actual) => cur = actual,
        }
    }
}

/// Detaches the whole list at `head` (newest first) if it is non-empty; never
/// swaps an empty head. Only the list's single owner may call it.
#[inline]
fn detach(head: &AtomicPtr<Unit>) -> *mut Unit {
    if head.load(Ordering::Relaxed).is_null() {
        return ptr::null_mut();
    }
    head.swap(ptr::null_mut(), Ordering::Acquire)
}

/// Asks for the cache lines of one unit (`stride` bytes from `unit`): a
/// unit the consumer just detached was written by another core, and its
/// header, link and items would otherwise arrive one dependent miss after
/// another (link, then header, then items). A hint only: no memory is
/// accessed, nothing happens under loom or Miri.
#[inline(always)]
fn prefetch_unit(unit: *const Unit, stride: usize) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    {
        let base = unit.cast::<u8>();
        let mut off = 0;
        while off < stride {
            // SAFETY: prefetch is a hint that never faults; the address
            // (inside the unit's arena) is only computed, not dereferenced.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    base.wrapping_add(off).cast(),
                )
            };
            off += UNIT_ALIGN;
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = (unit, stride);
}

/// Reverses a detached chain in place and returns its new first unit,
/// prefetching each unit (`stride` bytes) as soon as its address is known,
/// so that its lines travel while the walk waits for the next link.
///
/// # Safety
/// `list` is null or a chain of valid units owned by the caller.
unsafe fn reverse(mut list: *mut Unit, stride: usize) -> *mut Unit {
    let mut prev = ptr::null_mut();
    while !list.is_null() {
        prefetch_unit(list, stride);
        // SAFETY: every unit on the chain is valid and owned by the caller.
        let next_field = unsafe { &(*list).next };
        let next = next_field.load(Ordering::Relaxed);
        next_field.store(prev, Ordering::Relaxed);
        prev = list;
        list = next;
    }
    prev
}

// ---------------------------------------------------------------------------
// Shared state
// ---------------------------------------------------------------------------

/// One producer's pool: its arena, and how many of its units and items
/// the producer published and the consumer returned so far.
struct Pool {
    /// Units (low 32 bits) and their items (high 32 bits) returned by the
    /// consumer since the start, each half wrapping on its own. Written
    /// only by the consumer (Release), in one store per unit (see
    /// `Consumer::give_back`); the producer reads it (Acquire) only when
    /// its cached state says it is short of budget or of warm units; a
    /// [`Probe`] reads the items (Acquire, so the `published` it reads next
    /// counts them).
    returned: CachePadded<AtomicU64>,
    /// Items this producer published since the start (wrapping). Written
    /// only by the producer (Relaxed, before the Release publish of the
    /// unit that carries them), read only by [`Probe`]; on a line of its
    /// own, so it stays in the producer's cache between scrapes.
    published: CachePadded<AtomicU32>,
    arena: NonNull<u8>,
}

struct Shared<T> {
    /// Several producers: the consumer's list of published units (newest
    /// first). One producer: null until the consumer is dropped, then the
    /// last unit it read, from which the final drop finds the units
    /// published after it.
    head: CachePadded<AtomicPtr<Unit>>,
    /// One producer: units are linked in publish order from this unit
    /// (count 0, owned by no producer), the consumer's starting point;
    /// allocated at construction, freed with the queue. Unused with
    /// several producers.
    stub: *mut Unit,
    /// One producer: the list protocol of *Single producer*.
    single: bool,
    /// Items each producer may have in the queue.
    budget: usize,
    pools: Vec<Pool>,
    geo: Geometry,
    mem: std::sync::Arc<dyn UnitMemory>,
    _items: PhantomData<T>,
}

// SAFETY: `Shared` hands `T` values between threads (hence `T: Send`); its raw
// pointers are arenas and units whose every access is ordered by the list
// protocol described in the module doc; `mem` is `Send + Sync`.
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: through `&Shared` only atomics and immutable fields are reachable;
// item slots are only touched by the exclusive owner of their unit. No `&T` is
// ever shared, so `T: Sync` is not needed.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    fn unit(&self, producer: usize, i: usize) -> *mut Unit {
        debug_assert!(i < self.geo.units);
        // SAFETY: `i < units`, so the offset stays inside the arena.
        unsafe {
            self.pools[producer]
                .arena
                .as_ptr()
                .add(i * self.geo.stride)
                .cast::<Unit>()
        }
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // Items still published (the consumer is gone, or it never detached
        // them). Free (returned or never used) units hold no items:
        // the consumer's local chain was emptied by `Consumer::drop`, and a
        // producer only holds a filled unit inside `send` (published by its
        // guard even on panic).
        let mut unit = self.head.swap(ptr::null_mut(), Ordering::Acquire);
        if self.single && !unit.is_null() {
            // The consumer dropped every item up to and including its last
            // unit (`head`); what follows was published after that.
            // SAFETY: a unit of the chain (or the stub) that nobody else can
            // reach any more: we hold the last handle.
            unit = unsafe { (*unit).next.load(Ordering::Acquire) };
        }
        while !unit.is_null() {
            // SAFETY: `unit` was published (Acquire-visible) and nobody else
            // can reach it any more: we hold the last handle. Its `count`
            // first slots hold initialised items that no one moved out.
            unsafe {
                let next = (*unit).next.load(Ordering::Relaxed);
                let count = (*unit).track.read(|| (*unit).count) as usize;
                let items = slot::<T>(unit, self.geo.items_offset, 0);
                (*unit)
                    .track
                    .write(|| ptr::drop_in_place(ptr::slice_from_raw_parts_mut(items, count)));
                unit = next;
            }
        }
        for p in 0..self.pools.len() {
            for i in 0..self.geo.units {
                // SAFETY: every unit header was written by `build` and is
                // dropped exactly once here.
                unsafe { ptr::drop_in_place(self.unit(p, i)) };
            }
            // SAFETY: the arena came from `self.mem.alloc_zeroed(self.geo.arena)`
            // and nothing points into it any more.
            unsafe { self.mem.free(self.pools[p].arena, self.geo.arena) };
        }
        // SAFETY: the stub came from `Box::into_raw` in `build` and nothing
        // points to it any more.
        drop(unsafe { Box::from_raw(self.stub) });
    }
}

// ---------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------

/// Builds a TransferQueue with `producers` producers and one consumer.
///
/// `depth` is the capacity in items (a power of two >= 1), split across the
/// producers: each may have [`items_per_producer`]`(producers, depth)` items
/// in the queue, whatever the sizes of its sends, in as many units of
/// `burst` item slots (1..=[`MAX_BURST`]). Arenas come from `mem`; one
/// above [`MAX_ARENA_BYTES`] is refused ([`QueueError::TooLarge`]).
pub fn channel<T: Send>(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
) -> Result<(Vec<Producer<T>>, Consumer<T>), QueueError> {
    let budget = check::<T>(producers, depth, burst)?;
    build(producers, budget, burst, mem)
}

/// Builds the sharded topology: one single-producer queue per producer, all
/// read by one [`ShardedConsumer`]. Parameters mean the same as for
/// [`channel`] (`depth` is the total capacity, so each shard holds
/// `items_per_producer(producers, depth)` items and the footprint equals the
/// shared-queue one).
pub fn sharded<T: Send>(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
) -> Result<(Vec<Producer<T>>, ShardedConsumer<T>), QueueError> {
    let budget = check::<T>(producers, depth, burst)?;
    let mut txs = Vec::with_capacity(producers);
    let mut rxs = Vec::with_capacity(producers);
    for _ in 0..producers {
        let (mut tx, rx) = build(1, budget, burst, mem.clone())?;
        txs.push(tx.pop().expect("build returns one producer"));
        rxs.push(rx);
    }
    Ok((txs, ShardedConsumer::new(rxs)))
}

/// Validates the parameters of [`channel`]/[`sharded`]; returns the item
/// budget (and unit count) per producer.
fn check<T>(producers: usize, depth: usize, burst: usize) -> Result<usize, QueueError> {
    if burst == 0 || burst > MAX_BURST {
        return Err(QueueError::BadBurst(burst));
    }
    if !depth.is_power_of_two() {
        return Err(QueueError::BadDepth(depth));
    }
    if producers == 0 {
        return Err(QueueError::NoProducers);
    }
    let budget = items_per_producer(producers, depth);
    let bytes = unit_stride::<T>(burst).saturating_mul(units_per_producer(producers, depth, burst));
    if bytes > MAX_ARENA_BYTES {
        return Err(QueueError::TooLarge {
            depth,
            burst,
            bytes,
        });
    }
    Ok(budget)
}

/// Builds a queue whose producers each have `budget` items and as many
/// units (`budget <= MAX_ARENA_BYTES / 64`, checked by `check`, so unit
/// indices and item counts fit in `u32`).
fn build<T: Send>(
    producers: usize,
    budget: usize,
    burst: usize,
    mem: std::sync::Arc<dyn UnitMemory>,
) -> Result<(Vec<Producer<T>>, Consumer<T>), QueueError> {
    // One producer: one more unit than items (the consumer's last unit,
    // see *Single producer*).
    let single = producers == 1;
    let units = budget + usize::from(single);
    let geo =
        Geometry::new::<T>(units, burst).ok_or(QueueError::OutOfMemory { bytes: usize::MAX })?;
    let total = geo.arena.size().saturating_mul(producers);
    if u32::try_from(producers).is_err() || u32::try_from(units).is_err() {
        return Err(QueueError::OutOfMemory { bytes: total });
    }
    let stub = Box::into_raw(Box::new(Unit::new(u32::MAX)));
    let mut shared = Shared::<T> {
        head: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
        stub,
        single,
        budget,
        pools: Vec::with_capacity(producers),
        geo,
        mem,
        _items: PhantomData,
    };
    for p in 0..producers {
        // On failure `shared` is dropped, freeing the arenas made so far.
        let arena = shared
            .mem
            .alloc_zeroed(geo.arena)
            .ok_or(QueueError::OutOfMemory { bytes: total })?;
        for i in 0..units {
            // SAFETY: unit `i` lies inside the fresh arena and is aligned for
            // `Unit` (stride and arena alignment are multiples of its align).
            unsafe {
                ptr::write(
                    arena.as_ptr().add(i * geo.stride).cast::<Unit>(),
                    Unit::new(p as u32),
                )
            };
        }
        shared.pools.push(Pool {
            returned: CachePadded::new(AtomicU64::new(0)),
            published: CachePadded::new(AtomicU32::new(0)),
            arena,
        });
    }
    let shared = Arc::new(shared);
    let mut txs = Vec::with_capacity(producers);
    for p in 0..producers {
        txs.push(Producer {
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
            book: vec![NONE; units].into_boxed_slice(),
            tail: stub,
            returned_seen: 0,
            seq: 0,
            id: p as u32,
            burst,
            items_offset: geo.items_offset,
            shared: shared.clone(),
        });
    }
    let rx = Consumer {
        // One producer: the consumer starts at the stub (count 0).
        cur: if single { stub } else { ptr::null_mut() },
        count: 0,
        offset: 0,
        // The stub has no items to count back.
        items_back: single,
        items_offset: geo.items_offset,
        #[cfg(any(debug_assertions, loom))]
        expect_seq: vec![0; producers],
        shared,
    };
    Ok((txs, rx))
}

// ---------------------------------------------------------------------------
// Producer
// ---------------------------------------------------------------------------

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
    warm: u32,
    /// Units put in use before the producer reloads the `returned` count to
    /// look for returned ones instead (`max(1, budget / burst)`).
    warm_limit: u32,
    /// Per unit, the next unit on the list it is on: the in-flight FIFO
    /// (the unit published after it) or the free stack (the unit to be
    /// reused after it); `NONE` at the end (allocated at construction).
    book: Box<[u32]>,
    /// One producer: the unit published last (the stub before the first
    /// publish), whose `next` links the following publish.
    tail: *mut Unit,
    /// The pool's `returned` count as last loaded (Acquire).
    returned_seen: u32,
    /// Units published so far (wrapping); also the next unit's `seq`.
    seq: u32,
    id: u32,
    burst: usize,
    items_offset: usize,
    shared: Arc<Shared<T>>,
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
    #[inline]
    pub fn send<I: Iterator<Item = T>>(&mut self, items: &mut I) -> usize {
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
    #[inline]
    pub fn send_slice(&mut self, items: &[T]) -> usize
    where
        T: Copy,
    {
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
    /// of its sends (its share of the queue's depth, [`items_per_producer`]).
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
    fn reclaim(&mut self) {
        // Acquire: the consumer's reads of the returned units happen before
        // our refill (its Release store, see the module doc).
        let returned = self.shared.pools[self.id as usize]
            .returned
            .load(Ordering::Acquire);
        // The high half: items counted back (with one producer, a unit's
        // items may come back before the unit itself).
        self.in_flight = self.published.wrapping_sub((returned >> 32) as u32) as usize;
        // The low half: units.
        let returned = returned as u32;
        let back = returned.wrapping_sub(self.returned_seen);
        if back == 0 {
            return;
        }
        self.returned_seen = returned;
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
    #[inline]
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
    #[inline]
    unsafe fn seal(&mut self, idx: u32, unit: *mut Unit, n: usize) {
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
        self.newest = idx;
        self.book[idx as usize] = NONE;
        self.in_flight += n;
        // For `Probe`: one plain store to a line only this producer writes
        // (kept from a local copy, so no load), before the Release publish
        // of the unit.
        self.published = self.published.wrapping_add(n as u32);
        self.shared.pools[self.id as usize]
            .published
            .store(self.published, Ordering::Relaxed);
        self.seq = seq.wrapping_add(1);
        // SAFETY: exclusively owned unit (caller's contract); the caller's
        // Release CAS in `push` publishes these writes with the items.
        unsafe {
            (*unit).track.write(|| {
                (*unit).count = n as u32;
                (*unit).seq = seq;
            })
        };
    }

    /// # Safety
    /// As [`Producer::seal`].
    #[inline]
    unsafe fn publish(&mut self, idx: u32, unit: *mut Unit, n: usize) {
        // SAFETY: as `seal`'s contract (ours); `unit` alone is a chain.
        unsafe {
            self.seal(idx, unit, n);
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
    #[inline]
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
// Consumer
// ---------------------------------------------------------------------------

/// Receiving end of a TransferQueue (exactly one). `Send`, not `Sync`.
pub struct Consumer<T> {
    /// First unit of the local (detached, FIFO) chain, or null.
    cur: *mut Unit,
    /// `count` of `cur`.
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
    /// is waiting. A panic in `take` consumes nothing.
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
    /// Makes `cur` a unit with unread items, detaching the published list when
    /// the local chain is spent. False when nothing is available.
    #[inline]
    fn ready(&mut self) -> bool {
        loop {
            if !self.cur.is_null() {
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
    #[inline]
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
    #[inline]
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
    #[inline]
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
            // SAFETY: `cur` is a valid unit we hold: read its owner before
            // giving it away.
            let producer = unsafe { (*unit).track.read(|| (*unit).producer) };
            let items = if self.items_back {
                0
            } else {
                self.count as u32
            };
            self.give_back(producer, 1, items);
        }
        self.cur = next;
        self.items_back = false;
        if next.is_null() {
            self.count = 0;
            self.offset = 0;
        } else {
            self.enter();
        }
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

    /// Drops the unread items of `cur` (non-null).
    fn drop_unread(&mut self) {
        let unit = self.cur;
        let (from, n) = (self.offset, self.count - self.offset);
        self.offset = self.count; // mark read before dropping
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
// Probe
// ---------------------------------------------------------------------------

/// How full a queue is, read from any thread (monitoring): per producer,
/// the items it published minus the items the consumer returned, counts
/// the two sides keep anyway (see *Counts a Probe reads* in the module
/// doc). A handle like the others: the queue's memory lives until the last
/// of its producers, consumer and probes is dropped.
pub struct Probe<T> {
    shared: Arc<Shared<T>>,
}

impl<T> fmt::Debug for Probe<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probe")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl<T> Probe<T> {
    /// Items in the queue: published and in units not yet returned (as for
    /// the budget, a partly read unit counts whole until its last item is
    /// read). A snapshot, at most [`capacity`](Self::capacity).
    pub fn len(&self) -> usize {
        let budget = self.shared.budget;
        self.shared
            .pools
            .iter()
            .map(|p| {
                // Acquire: every unit counted returned was published, with
                // its `published` store, before this load; so the load
                // below reads at least as many items (never "negative").
                let gone = (p.returned.load(Ordering::Acquire) >> 32) as u32;
                let published = p.published.load(Ordering::Relaxed);
                // More than the budget only when the producer published
                // again between the two loads.
                (published.wrapping_sub(gone) as usize).min(budget)
            })
            .sum()
    }

    /// True when [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items the queue holds at most: the producers' budgets summed
    /// ([`items_per_producer`] each).
    pub fn capacity(&self) -> usize {
        self.shared.budget * self.shared.pools.len()
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
}

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
