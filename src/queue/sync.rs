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
    atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering},
    Arc,
};
#[cfg(not(loom))]
pub(super) use std::sync::{
    atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering},
    Arc,
};

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
