//! The plain-data forms of the handles, private to `dpdk` (module doc of
//! `mbuf`): what burst slots and hand-off queues copy.

use crate::dpdk::sys;
use std::ptr::NonNull;

/// An mbuf address; owns nothing by itself.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct RawMbuf(pub(in crate::dpdk) NonNull<sys::rte_mbuf>);

// SAFETY: a plain address; whoever turns it back into a handle owns the
// mbuf, and ownership moves between lcores with it (module doc).
unsafe impl Send for RawMbuf {}

impl RawMbuf {
    /// Fills unused burst slots; never dereferenced.
    pub(in crate::dpdk) const EMPTY: RawMbuf = RawMbuf(NonNull::dangling());
}

/// [`super::Packet`]'s plain-data form: the mbuf address with the
/// packet's facts in the bits an address leaves free (see `Packet`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct RawPacket(pub(in crate::dpdk) u64);

impl RawPacket {
    pub(in crate::dpdk) const EMPTY: RawPacket = RawPacket(0);
}

// SAFETY: one u64 (repr(transparent)): Copy, no Drop, every bit
// pattern a value. What a value *means* (an owned mbuf) is kept by
// `dpdk` alone: only it turns one into a handle (module doc).
unsafe impl crate::queue::Plain for RawPacket {}
