//! [`Burst`]: a fixed array of [`MAX_BURST`] owned handles and a length
//! (no allocation on the data path), and [`BurstItem`], what it can hold.
//!
//! Promise: the first `len` slots hold live handles in raw form, each read
//! back once; every handle leaves by being moved out, transmitted, sent or
//! freed, and a burst dropped with handles inside frees them.

use super::handle::MbufPtr;
use super::packet::{Packet, PACKET_ADDR_MASK};
use super::raw::{RawMbuf, RawPacket};
use crate::dpdk::sys;
use crate::queue::MAX_BURST;

/// What a [`Burst`] can hold: an owned mbuf handle, plain ([`MbufPtr`]) or
/// with facts ([`Packet`]). Sealed: only these two, since only `dpdk` can
/// implement `RawForm`, which it requires.
// The seal: outside `dpdk` the bound cannot be named, so neither can a
// handle's raw form nor the conversions to and from it (private_bounds
// warns exactly of that).
#[allow(private_bounds)]
pub trait BurstItem: RawForm {}

impl BurstItem for MbufPtr {}
impl BurstItem for Packet {}

/// A handle's plain-data form, same layout (module doc of `mbuf`), and the
/// conversions between the two: private to `dpdk`, so no code outside it
/// can turn a handle into a raw value or an mbuf address, nor the reverse.
pub(in crate::dpdk) trait RawForm: Sized {
    /// The handle's plain-data form.
    type Raw: Copy;
    /// Fills unused slots; never dereferenced.
    const EMPTY: Self::Raw;
    /// The mbuf address a raw item holds.
    fn raw_mbuf(item: &Self::Raw) -> *mut sys::rte_mbuf;
    /// The raw form; the handle is consumed (the raw copy now owns the
    /// mbuf). Field by field, so a burst slot is written directly (a copy
    /// through memory of a different shape stalls store forwarding).
    fn into_raw(self) -> Self::Raw;
    /// The handle a raw item stands for.
    ///
    /// # Safety
    /// `raw` came from `into_raw` of a live handle (possibly through a
    /// queue) and no other handle is made from it.
    unsafe fn from_raw(raw: Self::Raw) -> Self;
    /// Frees the mbufs of `items` with `rte_pktmbuf_free_bulk`.
    ///
    /// # Safety
    /// Every item owns a live mbuf, and the caller forgets the items after.
    unsafe fn free_bulk(items: &mut [Self::Raw]);
}

impl RawForm for MbufPtr {
    type Raw = RawMbuf;
    const EMPTY: RawMbuf = RawMbuf::EMPTY;
    #[inline]
    fn raw_mbuf(item: &RawMbuf) -> *mut sys::rte_mbuf {
        item.0.as_ptr()
    }
    #[inline(always)]
    fn into_raw(self) -> RawMbuf {
        self.0
    }
    #[inline(always)]
    unsafe fn from_raw(raw: RawMbuf) -> MbufPtr {
        MbufPtr(raw)
    }
    #[inline]
    unsafe fn free_bulk(items: &mut [RawMbuf]) {
        // SAFETY: live owned mbufs (caller's contract); RawMbuf is
        // repr(transparent) over a non-null `*mut rte_mbuf`.
        unsafe {
            sys::rte_pktmbuf_free_bulk(
                items.as_mut_ptr() as *mut *mut sys::rte_mbuf,
                items.len() as u32,
            )
        }
    }
}

impl RawForm for Packet {
    type Raw = RawPacket;
    const EMPTY: RawPacket = RawPacket::EMPTY;
    #[inline]
    fn raw_mbuf(item: &RawPacket) -> *mut sys::rte_mbuf {
        (item.0 & PACKET_ADDR_MASK) as *mut sys::rte_mbuf
    }
    #[inline(always)]
    fn into_raw(self) -> RawPacket {
        self.0
    }
    #[inline(always)]
    unsafe fn from_raw(raw: RawPacket) -> Packet {
        Packet(raw)
    }
    #[inline]
    unsafe fn free_bulk(items: &mut [RawPacket]) {
        // Gathers the addresses a chunk at a time (the PMD-facing array must
        // be contiguous `rte_mbuf *`).
        let mut raw = [std::ptr::null_mut::<sys::rte_mbuf>(); 64];
        for chunk in items.chunks(raw.len()) {
            for (r, p) in raw.iter_mut().zip(chunk) {
                *r = Self::raw_mbuf(p);
            }
            // SAFETY: the first chunk.len() entries are live owned mbufs
            // (caller's contract).
            unsafe { sys::rte_pktmbuf_free_bulk(raw.as_mut_ptr(), chunk.len() as u32) };
        }
    }
}

/// A fixed-capacity burst of owned mbufs (plain handles or [`Packet`]s).
/// The first `len` slots hold live handles in raw form; the burst owns them.
pub struct Burst<T: BurstItem> {
    slots: [T::Raw; MAX_BURST],
    len: usize,
    _owns: std::marker::PhantomData<T>,
}

/// The burst the PMDs fill and drain.
pub type MbufBurst = Burst<MbufPtr>;

impl<T: BurstItem> Default for Burst<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: BurstItem> Burst<T> {
    /// A handle and its raw form have the same layout.
    const LAYOUT: () = assert!(
        std::mem::size_of::<T>() == std::mem::size_of::<T::Raw>()
            && std::mem::align_of::<T>() == std::mem::align_of::<T::Raw>()
    );

    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::LAYOUT;
        Burst {
            slots: [T::EMPTY; MAX_BURST],
            len: 0,
            _owns: std::marker::PhantomData,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn room(&self) -> usize {
        MAX_BURST - self.len
    }

    #[inline]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` slots hold live handles in raw form, same
        // layout as T (LAYOUT); shared borrow of the burst.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr() as *const T, self.len) }
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as as_slice(); a handle can be changed in place or swapped
        // with another, never copied.
        unsafe { std::slice::from_raw_parts_mut(self.slots.as_mut_ptr() as *mut T, self.len) }
    }

    /// Appends one handle. There must be room (asserted in debug builds);
    /// if there is none the mbuf is freed and false returned: the caller
    /// counts it as a drop. Nothing is ever discarded silently.
    #[inline]
    #[must_use = "a false return is a freed mbuf the caller must count"]
    pub fn push_or_free(&mut self, m: T) -> bool {
        let Some(slot) = self.slots.get_mut(self.len) else {
            debug_assert!(false, "push into a full burst");
            Self::free_cold(m);
            return false;
        };
        // Converted straight into the slot: no aggregate on the stack.
        *slot = m.into_raw();
        self.len += 1;
        true
    }

    #[cold]
    #[inline(never)]
    fn free_cold(m: T) {
        let mut raw = m.into_raw();
        // SAFETY: `raw` is the raw form of a live handle that nobody else
        // holds (into_raw consumed it).
        unsafe { T::free_bulk(std::slice::from_mut(&mut raw)) };
    }

    /// The raw forms of the held handles (for a hand-off sender, which
    /// then calls [`consume_front`](Self::consume_front)).
    #[inline]
    pub(in crate::dpdk) fn raw_slice(&self) -> &[T::Raw] {
        &self.slots[..self.len]
    }

    /// Appends raw items produced by `fill` into the free tail (at most
    /// `max`); `fill` writes items into the slice it gets and returns how
    /// many. Only for hand-off receivers: every item written must be the
    /// raw form of a live handle that nobody else holds.
    #[inline]
    pub(in crate::dpdk) fn fill_with(
        &mut self,
        max: usize,
        fill: impl FnOnce(&mut [T::Raw]) -> usize,
    ) -> usize {
        let end = (self.len + max).min(MAX_BURST);
        let n = fill(&mut self.slots[self.len..end]).min(end - self.len);
        self.len += n;
        n
    }

    /// Forgets the first `n` handles: they were moved on (sent to a queue or
    /// transmitted); the rest move to the front.
    #[inline]
    pub(in crate::dpdk) fn consume_front(&mut self, n: usize) {
        if n >= self.len {
            self.len = 0;
            return;
        }
        self.slots.copy_within(n..self.len, 0);
        self.len -= n;
    }

    /// Moves every handle out, in order, into `f`; the burst is empty after.
    /// The loop the stages run per packet: a plain walk over the slots, no
    /// iterator state. Should `f` panic, the handles not yet moved leak
    /// (they are never owned twice).
    #[inline(always)]
    pub fn move_each(&mut self, mut f: impl FnMut(T)) {
        // Forgotten first: each slot below is turned into a handle once.
        let len = std::mem::take(&mut self.len);
        for raw in &self.slots[..len] {
            // SAFETY: slots < len held live handles in raw form that the
            // burst has just forgotten; each is read once.
            f(unsafe { T::from_raw(*raw) });
        }
    }

    /// Frees every mbuf in the burst (`rte_pktmbuf_free_bulk`) and empties it.
    #[inline]
    pub fn free_all(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the first `len` slots are live, owned mbufs (type
        // invariant); after the call the burst forgets them.
        unsafe { T::free_bulk(&mut self.slots[..self.len]) };
        self.len = 0;
    }

    /// Keeps the mbufs for which `keep` returns true, in order, and frees the
    /// others; returns how many were freed.
    #[inline]
    pub fn retain_or_free(&mut self, mut keep: impl FnMut(&mut T) -> bool) -> usize {
        let mut kept = 0;
        let mut freed = 0;
        // Forgotten while `keep` runs: should it panic, the burst leaks its
        // mbufs rather than free a slot twice.
        let len = std::mem::take(&mut self.len);
        for i in 0..len {
            // SAFETY: slot i < len holds a live handle in raw form (same
            // layout as T); the reference ends before the slot is moved.
            let m = unsafe { &mut *(&mut self.slots[i] as *mut T::Raw as *mut T) };
            if keep(m) {
                self.slots[kept] = self.slots[i];
                kept += 1;
            } else {
                // SAFETY: a live, owned mbuf that this burst forgets now.
                unsafe { sys::rte_pktmbuf_free(T::raw_mbuf(&self.slots[i])) };
                freed += 1;
            }
        }
        self.len = kept;
        freed
    }
}

impl Burst<MbufPtr> {
    pub(in crate::dpdk) fn raw_tail(&mut self) -> (*mut *mut sys::rte_mbuf, usize) {
        // SAFETY: pointer arithmetic inside the slots array (len <= MAX_BURST).
        let p = unsafe { self.slots.as_mut_ptr().add(self.len) } as *mut *mut sys::rte_mbuf;
        (p, MAX_BURST - self.len)
    }

    pub(in crate::dpdk) fn raw_head(&mut self) -> *mut *mut sys::rte_mbuf {
        self.slots.as_mut_ptr() as *mut *mut sys::rte_mbuf
    }

    pub(in crate::dpdk) fn grow(&mut self, n: usize) {
        self.len = (self.len + n).min(MAX_BURST);
    }
}

impl<T: BurstItem> Drop for Burst<T> {
    fn drop(&mut self) {
        // Nothing is lost silently: a burst dropped with mbufs inside frees
        // them. The pipeline drains and counts before this happens.
        debug_assert!(
            self.len == 0,
            "MbufBurst dropped holding {} mbufs",
            self.len
        );
        self.free_all();
    }
}
