//! Transfer units and the lists they travel on: the size of a unit and
//! of a producer's arena (`Geometry`; the public sizing functions read it),
//! the unit header (`Unit`) and its slots, and the list operations of the
//! design (module doc of `queue`): the producers' publish CAS (`push`), the
//! consumer's `detach` and `reverse`, and `prefetch_unit`.
//!
//! Promise: every size is computed here, checked for overflow; each list
//! operation uses the orderings the module doc argues for (*Memory
//! orderings*) and touches only units its caller owns.

use core::alloc::Layout;
use core::mem::{align_of, size_of};
use core::ptr;

use super::sync::{AtomicPtr, Ordering, Track};

/// Alignment (and stride granularity) of transfer units, in bytes. Raised to
/// `align_of::<T>()` for over-aligned item types.
pub const UNIT_ALIGN: usize = 64;

// ---------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------

/// Items one producer may have in a queue of `depth` items shared by
/// `producers` producers: `max(1, depth / producers)` (so the queue holds at
/// most `depth` items, and every producer at least one). A zero `producers`
/// is treated as 1 here; [`channel`](super::channel) rejects it.
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

/// Total bytes of transfer units that [`channel`](super::channel) allocates for these
/// parameters (all producers' arenas). Saturates at `usize::MAX`.
pub fn queue_bytes<T>(producers: usize, depth: usize, burst: usize) -> usize {
    unit_stride::<T>(burst)
        .saturating_mul(units_per_producer(producers, depth, burst))
        .saturating_mul(producers)
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) burst: usize,
    pub(super) units: usize,
    /// Offset of slot 0 from the start of a unit.
    pub(super) items_offset: usize,
    /// Distance between consecutive units in an arena.
    pub(super) stride: usize,
    /// Layout of one producer's arena.
    pub(super) arena: Layout,
}

impl Geometry {
    pub(super) fn new<T>(units: usize, burst: usize) -> Option<Geometry> {
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
pub(super) struct Unit {
    /// Link in the list the unit is on while published (consumer head, then
    /// the consumer's local chain). Written only by the unit's owner: the
    /// producer before publishing, the consumer when it reverses the chain.
    pub(super) next: AtomicPtr<Unit>,
    /// Items in the slots (1..=burst while published).
    pub(super) count: u32,
    /// Per-producer sequence number of the unit (wrapping).
    pub(super) seq: u32,
    /// Index of the producer owning the arena this unit lives in.
    pub(super) producer: u32,
    /// Reserved, 0.
    flags: u32,
    /// Race detector for the unit's contents under loom; ZST otherwise.
    pub(super) track: Track,
}

impl Unit {
    pub(super) fn new(producer: u32) -> Unit {
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
pub(super) unsafe fn slot<T>(unit: *mut Unit, items_offset: usize, i: usize) -> *mut T {
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
pub(super) unsafe fn push(head: &AtomicPtr<Unit>, first: *mut Unit, last: *mut Unit) {
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
pub(super) fn detach(head: &AtomicPtr<Unit>) -> *mut Unit {
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
pub(super) fn prefetch_unit(unit: *const Unit, stride: usize) {
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

/// Asks for the header line of one unit (its `next` link, count and
/// owner): the line a single producer writes when it links the next unit
/// after it. A hint only, as [`prefetch_unit`].
#[inline(always)]
pub(super) fn prefetch_header(unit: *const Unit) {
    prefetch_unit(unit, 1);
}

/// Reverses a detached chain in place and returns its new first unit,
/// prefetching each unit (`stride` bytes) as soon as its address is known,
/// so that its lines travel while the walk waits for the next link.
///
/// # Safety
/// `list` is null or a chain of valid units owned by the caller.
pub(super) unsafe fn reverse(mut list: *mut Unit, stride: usize) -> *mut Unit {
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
