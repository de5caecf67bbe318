//! Synchronisation shim: `std` atomics and `Arc` normally, loom's models under
//! `--cfg loom`, so the same queue code is model-checked.
//!
//! [`Track`] stands for "the contents of one transfer unit" (its header
//! fields other than `next`, and its item slots). Under loom it is a
//! `loom::cell::UnsafeCell<()>` and every access to a unit's contents is
//! wrapped in it, so loom reports any producer/consumer access that is not
//! ordered by happens-before (a data race on the unit). The slots themselves
//! live in raw arena memory whose size is only known at run time, so they
//! cannot each be a loom cell; one cell per unit checks the same protocol at
//! unit granularity, which is the granularity of ownership in this queue.
//! Without loom it is a zero-sized no-op.

#[cfg(loom)]
pub(super) use ::loom::sync::{
    atomic::{AtomicPtr, AtomicU32, Ordering},
    Arc,
};
#[cfg(not(loom))]
pub(super) use std::sync::{
    atomic::{AtomicPtr, AtomicU32, Ordering},
    Arc,
};

/// A count written by one thread only (wrapping), read by others for
/// monitoring ([`super::Probe`]): a load and a store, the same code as a
/// plain counter on x86. Under loom it counts nothing (it orders nothing
/// the queue relies on), so the model checks only the queue's protocol.
#[cfg(not(loom))]
pub(super) struct Tally(AtomicU32);

#[cfg(not(loom))]
impl Tally {
    pub(super) const fn new() -> Self {
        Tally(AtomicU32::new(0))
    }
    /// Adds `n`; only the tally's one writer calls it.
    #[inline(always)]
    pub(super) fn add(&self, n: u32, order: Ordering) {
        self.0
            .store(self.0.load(Ordering::Relaxed).wrapping_add(n), order);
    }
    pub(super) fn get(&self, order: Ordering) -> u32 {
        self.0.load(order)
    }
}

/// A monitoring count: nothing under loom (see the other definition).
#[cfg(loom)]
pub(super) struct Tally;

#[cfg(loom)]
impl Tally {
    pub(super) fn new() -> Self {
        Tally
    }
    pub(super) fn add(&self, _n: u32, _order: Ordering) {}
    pub(super) fn get(&self, _order: Ordering) -> u32 {
        0
    }
}

/// Access tracker for one unit's contents (see the module doc).
#[cfg(loom)]
pub(super) struct Track(::loom::cell::UnsafeCell<()>);

#[cfg(loom)]
impl Track {
    pub(super) fn new() -> Self {
        Track(::loom::cell::UnsafeCell::new(()))
    }
    /// Runs `f`, recording a write (exclusive) access to the unit's contents.
    #[inline]
    pub(super) fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.with_mut(|_| f())
    }
    /// Runs `f`, recording a read (shared) access to the unit's contents.
    #[inline]
    pub(super) fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.with(|_| f())
    }
}

/// Access tracker for one unit's contents: zero-sized no-op without loom.
#[cfg(not(loom))]
pub(super) struct Track;

#[cfg(not(loom))]
impl Track {
    #[inline(always)]
    pub(super) const fn new() -> Self {
        Track
    }
    #[inline(always)]
    pub(super) fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }
    #[inline(always)]
    pub(super) fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }
}
