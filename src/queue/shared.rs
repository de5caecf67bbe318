//! What a queue's handles share: the provider its arenas come from
//! ([`UnitMemory`]), each producer's pool (its arena and the two counts the
//! producer and the consumer exchange) and the queue's state behind one
//! `Arc` (`Shared`).
//!
//! Promise: the last handle's drop drops every item still published, drops
//! every unit header once, and returns each arena to the provider that
//! gave it.

use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use crossbeam_utils::CachePadded;

use super::sync::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use super::unit::{slot, Geometry, Unit};

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
// Shared state
// ---------------------------------------------------------------------------

/// One producer's pool: its arena, and how many of its units and items
/// the producer published and the consumer returned so far.
pub(super) struct Pool {
    /// Units (low 32 bits) and their items (high 32 bits) returned by the
    /// consumer since the start, each half wrapping on its own. Written
    /// only by the consumer (Release), in one store per unit (see
    /// `Consumer::give_back`); the producer reads it (Acquire) only when
    /// its cached state says it is short of budget or of warm units; a
    /// [`Probe`](super::Probe) reads the items (Acquire, so the `published` it reads next
    /// counts them).
    pub(super) returned: CachePadded<AtomicU64>,
    /// Items this producer published since the start (wrapping). Written
    /// only by the producer (Relaxed, before the Release publish of the
    /// unit that carries them), read only by [`Probe`](super::Probe); on a line of its
    /// own, so it stays in the producer's cache between scrapes.
    pub(super) published: CachePadded<AtomicU32>,
    pub(super) arena: NonNull<u8>,
}

pub(super) struct Shared<T> {
    /// Several producers: the consumer's list of published units (newest
    /// first). One producer: null until the consumer is dropped, then the
    /// last unit it read, from which the final drop finds the units
    /// published after it.
    pub(super) head: CachePadded<AtomicPtr<Unit>>,
    /// One producer: units are linked in publish order from this unit
    /// (count 0, owned by no producer), the consumer's starting point;
    /// allocated at construction, freed with the queue. Unused with
    /// several producers.
    pub(super) stub: *mut Unit,
    /// One producer: the list protocol of *Single producer*.
    pub(super) single: bool,
    /// A round-trip queue (*Round trip*): the consumer hands each unit's
    /// items back to their producer, which takes them back
    /// (`Producer::take_back_with`) before it reuses the unit. Items are
    /// [`Plain`](super::Plain) then: nothing is ever dropped in place.
    pub(super) round_trip: bool,
    /// Items each producer may have in the queue.
    pub(super) budget: usize,
    pub(super) pools: Vec<Pool>,
    pub(super) geo: Geometry,
    pub(super) mem: std::sync::Arc<dyn UnitMemory>,
    pub(super) _items: PhantomData<T>,
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
    pub(super) fn unit(&self, producer: usize, i: usize) -> *mut Unit {
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
