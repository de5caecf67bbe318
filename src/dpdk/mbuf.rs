//! Mbuf handles and fixed-size bursts of them.
//!
//! [`MbufPtr`] is an *owned reference* to one live mbuf: the pipeline moves
//! it (RX → hand-off queue → worker → hand-off queue → TX), never keeps a
//! copy after moving it on, and ends its life exactly once — transmitted
//! (the PMD frees it) or freed here. Only `rx_burst` (see `port.rs`) makes
//! new ones. Per-packet accessors read the `rte_mbuf` fields directly in
//! Rust (no out-of-line call per packet).
//!
//! [`Packet`] is what crosses cores: the mbuf handle plus the few header
//! facts the worker and TX stages need (its length, its input port, a
//! chain mark and a latency-sample mark; the frame starts at a fixed
//! offset), read once on the RX lcore while the header is in its cache,
//! all in one 8-byte word (the address bits an mbuf leaves free hold the
//! facts). Downstream lcores then never read the mbuf header, so its cache
//! lines stay with the lcore that allocates, transmits and frees the mbuf,
//! and a hand-off moves 8 bytes per packet, as a queue of bare mbuf
//! pointers would: half the lines of a 16-byte record.
//!
//! Multi-segment frames (a chain of mbufs, as RX scatter or a PMD's jumbo
//! path builds them): a [`Packet`] notes at RX that its mbuf is a chain;
//! only then do [`Packet::head`], [`Packet::pkt_len`] and
//! [`Packet::write_at`] read the headers of the segments (one predictable
//! branch on a single-segment frame). Freeing the first segment frees the
//! chain (`rte_pktmbuf_free`, `rte_pktmbuf_free_bulk`).
//!
//! [`Burst`] is a fixed array of [`MAX_BURST`] handles plus a length
//! ([`MbufBurst`] for the PMDs, `Burst<Packet>` between stages): no
//! allocation on the data path.
//!
//! # Why safe code cannot duplicate or double-free a handle
//!
//! - [`MbufPtr`] and [`Packet`] are neither `Copy` nor `Clone`, and no safe
//!   function builds one from a pointer: new handles come only from a PMD
//!   (`Port::rx_burst`) and from a packet hand-off queue (module
//!   `packet_queue`), and `Packet::from_rx`/`Packet::into_mbuf` move one
//!   into the other. Every function that ends a handle's life (free,
//!   transmit, send, push) takes it by value, or takes it out of a
//!   [`Burst`] and forgets it there.
//! - What is copied bit for bit is the plain-data *raw* form of a handle
//!   (`RawMbuf`, `RawPacket`, private to `dpdk`): the slots of a [`Burst`]
//!   and the items of the hand-off queues. No public function returns a
//!   raw value of a live mbuf (only the dangling `BurstItem::EMPTY`), and
//!   none turns a raw value into a handle except inside `dpdk`: a burst
//!   reads back only the slots it filled, and a packet receiver only items
//!   from the one queue it was built with, whose only producers are the
//!   packet senders built with it (`packet_queue` builds both ends at once,
//!   so no safe code holds a raw end of such a queue). The queues return
//!   each item once (their own contract, loom- and Miri-checked for the
//!   TransferQueue; DPDK's for `rte_ring`).
//! - A burst dropped while holding mbufs frees them (and asserts in debug
//!   builds, because the pipeline counts before it drops); a handle itself
//!   has no destructor, so a handle dropped by mistake leaks (safe, and
//!   caught by the end-of-run "0 mbufs in use" checks) but is never freed
//!   twice.
//!
//! ```compile_fail,E0382
//! // A packet is moved, not copied: after pushing it into a burst it is gone.
//! use tqfwd::dpdk::{Burst, Packet};
//! fn hand_on(burst: &mut Burst<Packet>, mut p: Packet) {
//!     let _ = burst.push_or_free(p);
//!     p.data_mut()[0] = 0; // error[E0382]: borrow of moved value: `p`
//! }
//! ```
//!
//! ```compile_fail,E0382
//! // Packet is not Copy: a second owner cannot be made by assignment.
//! use tqfwd::dpdk::Packet;
//! fn twins(p: Packet) -> (Packet, Packet) {
//!     (p, p) // error[E0382]: use of moved value: `p`
//! }
//! ```
//!
//! ```compile_fail,E0599
//! // ...nor Clone.
//! use tqfwd::dpdk::MbufPtr;
//! fn twin(m: &MbufPtr) -> MbufPtr {
//!     m.clone() // error[E0599]: no method named `clone`
//! }
//! ```
//!
//! ```compile_fail,E0382
//! // A sent packet is gone too: `send` takes the burst's packets.
//! use tqfwd::dpdk::{Burst, Packet};
//! use tqfwd::dpdk::packet_queue::PacketSender;
//! fn send(tx: &mut PacketSender, mut burst: Burst<Packet>, p: Packet) {
//!     let _ = burst.push_or_free(p);
//!     tx.send(&mut burst);
//!     let _ = p.len(); // error[E0382]: borrow of moved value: `p`
//! }
//! ```

use super::error::DpdkError;
use super::sys;
use std::ffi::CString;
use std::ptr::NonNull;

/// Largest burst tqfwd handles anywhere (RX, hand-off, TX).
pub use crate::queue::MAX_BURST;

/// `RTE_MBUF_F_RX_RSS_HASH` (checked against DPDK's value in the tests below).
pub const MBUF_F_RX_RSS_HASH: u64 = 1 << 1;

/// The plain-data forms of the handles, private to `dpdk` (module doc):
/// what burst slots and hand-off queues copy.
mod raw {
    use super::sys;
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
}

pub(super) use raw::{RawMbuf, RawPacket};

/// An owned reference to one mbuf (see the module doc): neither `Copy` nor
/// `Clone`.
#[derive(PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct MbufPtr(RawMbuf);

impl MbufPtr {
    #[inline]
    pub(super) fn raw(&self) -> *mut sys::rte_mbuf {
        self.0 .0.as_ptr()
    }

    /// The first segment's data (the whole frame for single-segment mbufs).
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: self is a live, owned mbuf (module invariant); buf_addr +
        // data_off .. + data_len lies inside its data room by DPDK's
        // invariants.
        unsafe {
            let m = &*self.raw();
            std::slice::from_raw_parts(
                (m.buf_addr as *const u8).add(m.data_off as usize),
                m.data_len as usize,
            )
        }
    }

    /// The first segment's data, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as data(); the handle is owned, so nobody else accesses
        // the data while we hold &mut self.
        unsafe {
            let m = &*self.raw();
            std::slice::from_raw_parts_mut(
                (m.buf_addr as *mut u8).add(m.data_off as usize),
                m.data_len as usize,
            )
        }
    }

    /// Total packet length over all segments.
    #[inline]
    pub fn pkt_len(&self) -> u32 {
        // SAFETY: live owned mbuf.
        unsafe { (*self.raw()).pkt_len }
    }

    /// Copies the frame's first `out.len()` bytes (fewer when the frame is
    /// shorter) into `out`, following the segment chain; returns how many.
    pub fn read_into(&self, out: &mut [u8]) -> usize {
        let mut done = 0;
        let mut seg = self.raw() as *const sys::rte_mbuf;
        // At most nb_segs segments, and never past a null `next`.
        // SAFETY: live owned mbuf.
        let mut segs = unsafe { (*seg).nb_segs };
        while done < out.len() && segs != 0 && !seg.is_null() {
            // SAFETY: `seg` is the owned head or a segment chained to it
            // (the chain is owned with its head); its data room holds
            // data_len bytes at buf_addr + data_off.
            unsafe {
                let m = &*seg;
                let n = (m.data_len as usize).min(out.len() - done);
                std::ptr::copy_nonoverlapping(
                    (m.buf_addr as *const u8).add(m.data_off as usize),
                    out.as_mut_ptr().add(done),
                    n,
                );
                done += n;
                seg = m.next;
            }
            segs -= 1;
        }
        done
    }

    /// Writes `bytes` at `offset` from the frame start, following the
    /// segment chain; returns false, writing nothing, when the frame (as
    /// its segments hold it) is shorter than `offset + bytes.len()`.
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> bool {
        let Some(end) = offset.checked_add(bytes.len()) else {
            return false;
        };
        // Check first, so that nothing is written to a frame too short.
        let mut held = 0usize;
        let mut seg = self.raw() as *const sys::rte_mbuf;
        // SAFETY: live owned mbuf.
        let nb_segs = unsafe { (*seg).nb_segs };
        let mut segs = nb_segs;
        while held < end && segs != 0 && !seg.is_null() {
            // SAFETY: as in read_into.
            unsafe {
                held += (*seg).data_len as usize;
                seg = (*seg).next;
            }
            segs -= 1;
        }
        if held < end {
            return false;
        }
        let mut seg = self.raw();
        let mut seg_start = 0usize; // frame offset of this segment's data
        let mut segs = nb_segs;
        while seg_start < end && segs != 0 && !seg.is_null() {
            // SAFETY: as in read_into; the chain is owned through &mut self,
            // so nobody else accesses its data.
            unsafe {
                let m = &*seg;
                let len = m.data_len as usize;
                let lo = offset.max(seg_start);
                let hi = end.min(seg_start + len);
                if lo < hi {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr().add(lo - offset),
                        (m.buf_addr as *mut u8).add(m.data_off as usize + (lo - seg_start)),
                        hi - lo,
                    );
                }
                seg_start += len;
                seg = m.next;
            }
            segs -= 1;
        }
        true
    }

    /// Input port, as set by the PMD at RX.
    #[inline]
    pub fn port(&self) -> u16 {
        // SAFETY: live owned mbuf.
        unsafe { (*self.raw()).port }
    }

    /// The RSS hash the NIC computed, when it did.
    #[inline]
    pub fn rss_hash(&self) -> Option<u32> {
        // SAFETY: live owned mbuf; the hash union is read as `rss` only when
        // the PMD flagged it valid.
        unsafe {
            let m = &*self.raw();
            if m.ol_flags & MBUF_F_RX_RSS_HASH != 0 {
                Some(m.__bindgen_anon_2.hash.rss)
            } else {
                None
            }
        }
    }

    /// Reads an 8-byte dynamic field.
    #[inline]
    pub fn field(&self, f: U64Field) -> u64 {
        // SAFETY: live owned mbuf; `f.offset` came from
        // rte_mbuf_dynfield_register for an 8-byte, 8-aligned field inside
        // struct rte_mbuf.
        unsafe { ((self.raw() as *const u8).add(f.offset) as *const u64).read() }
    }

    /// Writes an 8-byte dynamic field.
    #[inline]
    pub fn set_field(&mut self, f: U64Field, v: u64) {
        // SAFETY: as field(); the handle is owned, nobody else writes it.
        unsafe { ((self.raw() as *mut u8).add(f.offset) as *mut u64).write(v) }
    }

    /// Hints the CPU to fetch the start of the frame (reads the header).
    #[inline]
    pub fn prefetch_data(&self) {
        // SAFETY: live owned mbuf; computing the data address reads the
        // header only; the prefetch itself never faults.
        let p = unsafe {
            let m = &*self.raw();
            (m.buf_addr as *const u8).wrapping_add(m.data_off as usize)
        };
        prefetch(p);
    }
}

#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: prefetch is a hint; it never faults, whatever the address.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// An mbuf on its way through the pipeline, with the header facts the
/// later stages need (see the module doc), in 8 bytes: the mbuf address
/// and, in the bits an address leaves free, the first segment's length,
/// the input port and three flags. Owned like [`MbufPtr`]: moved, never
/// duplicated (neither `Copy` nor `Clone`), ended once.
///
/// Layout of the word: bits 6..47 are the mbuf address (mbufs are 64-byte
/// aligned and below 2^47, which [`Mempool`](super::mempool::Mempool)
/// checks for every mbuf of its pools at creation), bits 0..6 the flags
/// (`SAMPLED`, `MULTI_SEG`, `FAR`), bits 47..59 the first segment's
/// length, bits 59..64 the input port. A packet whose frame does not start
/// at the usual place ([`STD_FRAME_OFFSET`] bytes from the mbuf, as every
/// PMD tqfwd uses puts it), whose first segment is longer than 4095 bytes
/// or whose port id is above 31 is `FAR`: its length, start and port are
/// read from the header instead.
///
/// Valid while nobody changes the mbuf's data offset or length between RX
/// and the later reader (tqfwd never does).
#[derive(PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Packet(RawPacket);

/// Where a frame starts in an mbuf of tqfwd's pools, from the mbuf's own
/// address: the header, no private area, the default headroom.
pub const STD_FRAME_OFFSET: usize =
    std::mem::size_of::<sys::rte_mbuf>() + sys::RTE_PKTMBUF_HEADROOM as usize;

/// The address bits of a [`Packet`] word: an mbuf is 64-byte aligned and
/// below 2^47 (x86-64 user space).
pub(super) const PACKET_ADDR_MASK: u64 = 0x0000_7fff_ffff_ffc0;

const _: () = assert!(std::mem::size_of::<Packet>() == 8);
const _: () = assert!(std::mem::size_of::<RawPacket>() == 8);
const _: () = assert!(std::mem::align_of::<Packet>() == std::mem::align_of::<RawPacket>());
const _: () = assert!(std::mem::size_of::<MbufPtr>() == std::mem::size_of::<RawMbuf>());
const _: () = assert!(std::mem::align_of::<sys::rte_mbuf>() >= 64);

impl Packet {
    /// Flag: this packet carries an RX timestamp (latency sample).
    const SAMPLED: u64 = 1;
    /// Flag: the mbuf is a chain of several segments.
    const MULTI_SEG: u64 = 2;
    /// Flag: length, frame start and port are read from the header.
    const FAR: u64 = 4;
    const LEN_SHIFT: u32 = 47;
    const LEN_MAX: u64 = (1 << 12) - 1;
    const PORT_SHIFT: u32 = 59;
    const PORT_MAX: u64 = (1 << 5) - 1;

    /// Reads the header facts of a freshly received mbuf (on the RX lcore).
    ///
    /// Panics if the mbuf's address does not fit the packet word (not
    /// 64-byte aligned, or above 2^47): never for an mbuf of tqfwd's pools,
    /// which are checked when created.
    #[inline]
    pub fn from_rx(m: MbufPtr) -> Packet {
        let addr = m.raw() as u64;
        assert!(
            addr & !PACKET_ADDR_MASK == 0,
            "mbuf address {addr:#x} does not fit a packet handle"
        );
        // SAFETY: live owned mbuf; plain field reads.
        let (start, len, port, segs) = unsafe {
            let h = &*m.raw();
            (
                (h.buf_addr as usize).wrapping_add(h.data_off as usize),
                u64::from(h.data_len),
                u64::from(h.port),
                h.nb_segs,
            )
        };
        let mut word = addr;
        if segs > 1 {
            word |= Self::MULTI_SEG;
        }
        if start.wrapping_sub(addr as usize) == STD_FRAME_OFFSET
            && len <= Self::LEN_MAX
            && port <= Self::PORT_MAX
        {
            word |= len << Self::LEN_SHIFT | port << Self::PORT_SHIFT;
        } else {
            word |= Self::FAR;
        }
        Packet(RawPacket(word))
    }

    #[inline(always)]
    fn raw(&self) -> *mut sys::rte_mbuf {
        (self.0 .0 & PACKET_ADDR_MASK) as *mut sys::rte_mbuf
    }

    #[inline(always)]
    fn is_far(&self) -> bool {
        self.0 .0 & Self::FAR != 0
    }

    /// The mbuf as a handle for the duration of `f` (to read its header
    /// or chain). The view is not a second owner: it cannot leave `f`, and
    /// handles have no destructor.
    #[inline]
    fn with_mbuf<R>(&self, f: impl FnOnce(&MbufPtr) -> R) -> R {
        // SAFETY: the word holds a live mbuf's address (non-null: from_rx
        // took it from a handle).
        let view = MbufPtr(RawMbuf(unsafe { NonNull::new_unchecked(self.raw()) }));
        f(&view)
    }

    /// As [`with_mbuf`](Self::with_mbuf), to write the frame's chain.
    #[inline]
    fn with_mbuf_mut<R>(&mut self, f: impl FnOnce(&mut MbufPtr) -> R) -> R {
        // SAFETY: as with_mbuf; `&mut self` makes the view the only access.
        let mut view = MbufPtr(RawMbuf(unsafe { NonNull::new_unchecked(self.raw()) }));
        f(&mut view)
    }

    /// The mbuf itself, to transmit or free it; the packet is gone.
    #[inline]
    pub fn into_mbuf(self) -> MbufPtr {
        // SAFETY: as with_mbuf; the packet is consumed, so the handle is
        // the one owner.
        MbufPtr(RawMbuf(unsafe { NonNull::new_unchecked(self.raw()) }))
    }

    /// Input port, as the PMD set it at RX.
    #[inline]
    pub fn port(&self) -> u16 {
        if self.is_far() {
            return self.with_mbuf(|m| m.port());
        }
        (self.0 .0 >> Self::PORT_SHIFT) as u16
    }

    /// Length of the first segment (the whole frame unless
    /// [`is_multi_seg`](Self::is_multi_seg)).
    #[inline]
    pub fn len(&self) -> usize {
        if self.is_far() {
            // SAFETY: live owned mbuf; a plain field read.
            return unsafe { (*self.raw()).data_len as usize };
        }
        ((self.0 .0 >> Self::LEN_SHIFT) & Self::LEN_MAX) as usize
    }

    /// The mbuf is a chain of several segments.
    #[inline]
    pub fn is_multi_seg(&self) -> bool {
        self.0 .0 & Self::MULTI_SEG != 0
    }

    /// Frame length over all segments (reads the mbuf header only for a
    /// chain).
    #[inline]
    pub fn pkt_len(&self) -> usize {
        if self.is_multi_seg() {
            self.with_mbuf(|m| m.pkt_len() as usize)
        } else {
            self.len()
        }
    }

    /// The RSS hash the NIC computed, when it did (reads the header).
    #[inline]
    pub fn rss_hash(&self) -> Option<u32> {
        self.with_mbuf(|m| m.rss_hash())
    }

    /// Reads an 8-byte dynamic field (reads the header).
    #[inline]
    pub fn field(&self, f: U64Field) -> u64 {
        self.with_mbuf(|m| m.field(f))
    }

    /// The frame's first bytes, for a parser, and the frame length: the
    /// first segment when it holds at least `min(N, frame length)` bytes
    /// (always so for a single segment: no copy), else the first
    /// `min(N, frame length)` bytes copied from the chain into `scratch`.
    #[inline]
    pub fn head<'a, const N: usize>(&'a self, scratch: &'a mut [u8; N]) -> (&'a [u8], usize) {
        if !self.is_multi_seg() {
            let d = self.data();
            return (d, d.len());
        }
        self.head_of_chain(scratch)
    }

    #[inline(never)]
    fn head_of_chain<'a, const N: usize>(&'a self, scratch: &'a mut [u8; N]) -> (&'a [u8], usize) {
        let pkt_len = self.pkt_len();
        if self.len() >= N.min(pkt_len) {
            return (self.data(), pkt_len);
        }
        let n = self.with_mbuf(|m| m.read_into(&mut scratch[..N.min(pkt_len)]));
        (&scratch[..n], pkt_len)
    }

    /// Writes `bytes` at `offset` from the frame start, across segments
    /// if need be; false (nothing written) when the frame is too short.
    #[inline]
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> bool {
        let Some(end) = offset.checked_add(bytes.len()) else {
            return false;
        };
        if end <= self.len() {
            self.data_mut()[offset..end].copy_from_slice(bytes);
            return true;
        }
        self.is_multi_seg() && self.with_mbuf_mut(|m| m.write_at(offset, bytes))
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Marks the packet as a latency sample (its timestamp field is set).
    #[inline]
    pub fn set_sampled(&mut self) {
        self.0 .0 |= Self::SAMPLED;
    }

    #[inline]
    pub fn is_sampled(&self) -> bool {
        self.0 .0 & Self::SAMPLED != 0
    }

    #[inline]
    fn frame_start(&self) -> *mut u8 {
        if !self.is_far() {
            // Where the header says (from_rx checked): no header read.
            (self.raw() as *mut u8).wrapping_add(STD_FRAME_OFFSET)
        } else {
            // SAFETY: live owned mbuf; plain field reads.
            unsafe {
                let h = &*self.raw();
                (h.buf_addr as *mut u8).wrapping_add(h.data_off as usize)
            }
        }
    }

    /// The frame (first segment), without touching the mbuf header.
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: the packet owns a live mbuf whose first segment holds
        // `len` bytes at frame_start() (read from its header at RX; nobody
        // changed data_off/data_len since, type invariant).
        unsafe { std::slice::from_raw_parts(self.frame_start(), self.len()) }
    }

    /// The frame, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as data(); owned, so nobody else accesses the frame while
        // we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.frame_start(), self.len()) }
    }

    /// Hints the CPU to fetch the start of the frame (no header read).
    #[inline]
    pub fn prefetch_data(&self) {
        prefetch(self.frame_start());
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::MbufPtr {}
    impl Sealed for super::Packet {}
}

/// What a [`Burst`] can hold: an owned mbuf handle, plain ([`MbufPtr`]) or
/// with facts ([`Packet`]). Sealed: only these two.
pub trait BurstItem: sealed::Sealed + Sized {
    /// The handle's plain-data form, same layout (module doc).
    #[doc(hidden)]
    type Raw: Copy;
    /// Fills unused slots; never dereferenced.
    #[doc(hidden)]
    const EMPTY: Self::Raw;
    /// The mbuf address a raw item holds.
    #[doc(hidden)]
    fn raw_mbuf(item: &Self::Raw) -> *mut sys::rte_mbuf;
    /// The raw form; the handle is consumed (the raw copy now owns the
    /// mbuf). Field by field, so a burst slot is written directly (a copy
    /// through memory of a different shape stalls store forwarding).
    #[doc(hidden)]
    fn into_raw(self) -> Self::Raw;
    /// The handle a raw item stands for.
    ///
    /// # Safety
    /// `raw` came from `into_raw` of a live handle (possibly through a
    /// queue) and no other handle is made from it.
    #[doc(hidden)]
    unsafe fn from_raw(raw: Self::Raw) -> Self;
    /// Frees the mbufs of `items` with `rte_pktmbuf_free_bulk`.
    ///
    /// # Safety
    /// Every item owns a live mbuf, and the caller forgets the items after.
    #[doc(hidden)]
    unsafe fn free_bulk(items: &mut [Self::Raw]);
}

impl BurstItem for MbufPtr {
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

impl BurstItem for Packet {
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

/// An 8-byte mbuf dynamic field registered with `rte_mbuf_dynfield_register`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U64Field {
    offset: usize,
}

impl U64Field {
    /// Registers (or looks up) the 8-byte field `name`.
    pub fn register(name: &str) -> Result<U64Field, DpdkError> {
        let mut desc = sys::rte_mbuf_dynfield::default();
        let cname = CString::new(name).expect("field name has no NUL");
        let bytes = cname.as_bytes_with_nul();
        if bytes.len() > desc.name.len() {
            return Err(DpdkError {
                call: "rte_mbuf_dynfield_register".into(),
                code: libc::EINVAL,
                text: "name too long".into(),
            });
        }
        for (d, b) in desc.name.iter_mut().zip(bytes) {
            *d = *b as std::os::raw::c_char;
        }
        desc.size = 8;
        desc.align = 8;
        // SAFETY: valid descriptor; returns the offset or -1 with rte_errno.
        let off = unsafe { sys::rte_mbuf_dynfield_register(&desc) };
        if off < 0 {
            return Err(DpdkError::from_errno(format!(
                "rte_mbuf_dynfield_register({name})"
            )));
        }
        let offset = off as usize;
        if offset + 8 > std::mem::size_of::<sys::rte_mbuf>() || offset % 8 != 0 {
            return Err(DpdkError {
                call: "rte_mbuf_dynfield_register".into(),
                code: libc::EINVAL,
                text: format!("bad offset {offset}"),
            });
        }
        Ok(U64Field { offset })
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
    pub(super) fn raw_slice(&self) -> &[T::Raw] {
        &self.slots[..self.len]
    }

    /// Appends raw items produced by `fill` into the free tail (at most
    /// `max`); `fill` writes items into the slice it gets and returns how
    /// many. Only for hand-off receivers: every item written must be the
    /// raw form of a live handle that nobody else holds.
    #[inline]
    pub(super) fn fill_with(
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
    pub(super) fn consume_front(&mut self, n: usize) {
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
    pub(super) fn raw_tail(&mut self) -> (*mut *mut sys::rte_mbuf, usize) {
        // SAFETY: pointer arithmetic inside the slots array (len <= MAX_BURST).
        let p = unsafe { self.slots.as_mut_ptr().add(self.len) } as *mut *mut sys::rte_mbuf;
        (p, MAX_BURST - self.len)
    }

    pub(super) fn raw_head(&mut self) -> *mut *mut sys::rte_mbuf {
        self.slots.as_mut_ptr() as *mut *mut sys::rte_mbuf
    }

    pub(super) fn grow(&mut self, n: usize) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::NonNull;

    /// A zeroed, 64-byte-aligned rte_mbuf followed by a data room, built
    /// by hand: `Packet` only reads plain header fields, so no EAL needed.
    #[repr(C, align(64))]
    struct FakeMbuf {
        hdr: sys::rte_mbuf,
        room: [u8; 512],
    }

    fn fake(data_off: u16, len: u16, port: u16) -> Box<FakeMbuf> {
        // SAFETY: rte_mbuf is plain C data; all-zero is a valid value.
        let mut f: Box<FakeMbuf> = Box::new(unsafe { std::mem::zeroed() });
        f.hdr.buf_addr = f.room.as_mut_ptr() as *mut std::ffi::c_void;
        f.hdr.data_off = data_off;
        f.hdr.data_len = len;
        f.hdr.port = port;
        for (i, b) in f.room.iter_mut().enumerate() {
            *b = i as u8;
        }
        f
    }

    fn mb(hdr: &mut sys::rte_mbuf) -> MbufPtr {
        MbufPtr(RawMbuf(NonNull::from(hdr)))
    }

    fn handle(f: &mut FakeMbuf) -> MbufPtr {
        mb(&mut f.hdr)
    }

    #[test]
    fn rss_hash_flag_is_dpdks() {
        // SAFETY: reads a const defined in shim.c (DPDK's value).
        assert_eq!(MBUF_F_RX_RSS_HASH, unsafe { sys::tqfwd_mbuf_f_rx_rss_hash });
    }

    #[test]
    fn bursts_move_handles_in_order() {
        let mut fakes: Vec<Box<FakeMbuf>> = (0..4).map(|i| fake(0, 10 + i, i)).collect();
        let mut b: Burst<Packet> = Burst::new();
        let mut out: Burst<Packet> = Burst::new();
        for f in fakes.iter_mut() {
            assert!(b.push_or_free(Packet::from_rx(handle(f))));
        }
        assert_eq!(b.len(), 4);
        b.consume_front(1);
        let ports: Vec<u16> = b.as_slice().iter().map(|p| p.port()).collect();
        assert_eq!(ports, [1, 2, 3]);
        let mut lens = Vec::new();
        b.move_each(|p| {
            lens.push(p.len());
            assert!(out.push_or_free(p));
        });
        assert_eq!(lens, [11, 12, 13]);
        assert!(b.is_empty());
        assert_eq!(out.len(), 3);
        out.consume_front(3); // fakes: nothing to free
    }

    #[test]
    fn packet_reads_frame_without_header_when_offset_fits() {
        let headroom = STD_FRAME_OFFSET - std::mem::size_of::<sys::rte_mbuf>();
        let mut f = fake(headroom as u16, 60, 3);
        let mut p = Packet::from_rx(handle(&mut f));
        assert!(!p.is_far() && !p.is_multi_seg());
        assert_eq!((p.port(), p.len(), p.pkt_len()), (3, 60, 60));
        assert_eq!(p.data(), &f.room[headroom..headroom + 60]);
        // The header no longer matters: the packet kept what it needs.
        f.hdr.data_off = 0;
        f.hdr.data_len = 7;
        f.hdr.port = 9;
        assert_eq!(p.data()[0], headroom as u8);
        assert_eq!((p.port(), p.len()), (3, 60));
        p.data_mut()[0] = 0xee;
        assert_eq!(f.room[headroom], 0xee);
        assert!(!p.is_sampled());
        p.set_sampled();
        assert!(p.is_sampled());
        assert_eq!((p.port(), p.len()), (3, 60), "the flag leaves the facts");
        assert_eq!(p.into_mbuf(), handle(&mut f));
    }

    #[test]
    fn packet_word_holds_the_largest_length_and_port() {
        let headroom = STD_FRAME_OFFSET - std::mem::size_of::<sys::rte_mbuf>();
        #[repr(C, align(64))]
        struct Big {
            hdr: sys::rte_mbuf,
            room: [u8; 8192],
        }
        // SAFETY: plain data; all-zero is valid.
        let mut b: Box<Big> = Box::new(unsafe { std::mem::zeroed() });
        b.hdr.buf_addr = b.room.as_mut_ptr() as *mut std::ffi::c_void;
        b.hdr.data_off = headroom as u16;
        for (len, port, far) in [
            (4095u16, 31u16, false),
            (0, 0, false),
            (4096, 0, true),
            (60, 32, true),
            (6000, 40, true),
        ] {
            b.hdr.data_len = len;
            b.hdr.port = port;
            b.hdr.nb_segs = 1;
            let mut p = Packet::from_rx(mb(&mut b.hdr));
            p.set_sampled();
            assert_eq!(p.is_far(), far, "len {len} port {port}");
            assert_eq!((p.len(), p.port()), (len as usize, port), "far {far}");
            assert_eq!(p.data().as_ptr(), b.room[headroom..].as_ptr());
            assert!(p.is_sampled() && !p.is_multi_seg());
            let raw = p.into_raw();
            assert_eq!(Packet::raw_mbuf(&raw), &mut b.hdr as *mut sys::rte_mbuf);
        }
    }

    #[test]
    fn packet_falls_back_to_header_for_far_or_preceding_buffers() {
        // One allocation: the mbuf header in the middle, "external" data
        // buffers 64 KiB before it and 80 KiB after it: the frame is not
        // where the pools put it, so the header is read.
        #[repr(C, align(64))]
        struct Arena {
            before: [u8; 65_536],
            hdr: sys::rte_mbuf,
            after: [u8; 81_920],
        }
        // SAFETY: plain data; all-zero is valid.
        let mut a: Box<Arena> = Box::new(unsafe { std::mem::zeroed() });
        for (i, b) in a.before.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        for (i, b) in a.after.iter_mut().enumerate() {
            *b = (i % 241) as u8;
        }
        a.hdr.data_off = 10;
        a.hdr.data_len = 20;
        a.hdr.port = 5;
        for (buf, expect) in [
            (a.before.as_mut_ptr(), 0usize),
            (a.after[80_000..].as_mut_ptr(), 1),
        ] {
            a.hdr.buf_addr = buf as *mut std::ffi::c_void;
            let p = Packet::from_rx(mb(&mut a.hdr));
            assert!(p.is_far());
            let want: Vec<u8> = if expect == 0 {
                a.before[10..30].to_vec()
            } else {
                a.after[80_010..80_030].to_vec()
            };
            assert_eq!(p.data(), &want[..]);
            assert_eq!((p.len(), p.port()), (20, 5));
        }
    }

    /// Three fake segments holding `frame` split at `cuts` (first segment
    /// `cuts.0` bytes, second `cuts.1`, third the rest), chained.
    /// Boxed: each header's buf_addr points into its own box.
    #[allow(clippy::vec_box)]
    fn chain(frame: &[u8], cuts: (usize, usize)) -> Vec<Box<FakeMbuf>> {
        let parts = [
            &frame[..cuts.0],
            &frame[cuts.0..cuts.0 + cuts.1],
            &frame[cuts.0 + cuts.1..],
        ];
        let mut segs: Vec<Box<FakeMbuf>> = parts
            .iter()
            .map(|part| {
                let mut f = fake(64, part.len() as u16, 1);
                f.room[64..64 + part.len()].copy_from_slice(part);
                f
            })
            .collect();
        segs[0].hdr.nb_segs = 3;
        segs[0].hdr.pkt_len = frame.len() as u32;
        for i in (0..2).rev() {
            let next: *mut sys::rte_mbuf = &mut segs[i + 1].hdr;
            segs[i].hdr.next = next;
        }
        segs
    }

    fn udp_436() -> Vec<u8> {
        let f = crate::testkit::gen::udp_frame(
            &crate::testkit::gen::Flow::nth(5),
            5,
            1,
            440,
            crate::testkit::gen::DEFAULT_SRC_MAC,
            crate::testkit::gen::DEFAULT_DST_MAC,
        );
        assert_eq!(f.len(), 436);
        f
    }

    #[test]
    fn chain_head_is_copied_only_when_the_first_segment_is_short() {
        use crate::wire::{self, FrameClass, PARSE_HEAD_LEN};
        let frame = udp_436();
        let whole = wire::parse(&frame);
        assert_eq!(whole.class, FrameClass::Udp);
        // First segment shorter than the Ethernet header, the IP header,
        // the UDP header, the parse head; and one long enough.
        for first in [1, 10, 13, 20, 40, 100, 127, 128, 300] {
            let mut segs = chain(&frame, (first, 100));
            let p = Packet::from_rx(mb(&mut segs[0].hdr));
            assert!(p.is_multi_seg());
            assert_eq!((p.len(), p.pkt_len()), (first, frame.len()));
            let mut scratch = [0u8; PARSE_HEAD_LEN];
            let (head, len) = p.head(&mut scratch);
            assert_eq!(len, frame.len());
            if first >= PARSE_HEAD_LEN {
                assert_eq!(head.as_ptr(), p.data().as_ptr(), "no copy");
            }
            assert_eq!(head, &frame[..head.len()]);
            assert!(head.len() >= PARSE_HEAD_LEN);
            assert_eq!(wire::parse_head(head, len), whole, "first segment {first}");
        }
        // A chain shorter than the parse head is copied whole.
        let small = &frame[..90];
        let mut segs = chain(small, (5, 30));
        segs[0].hdr.pkt_len = 90;
        let p = Packet::from_rx(mb(&mut segs[0].hdr));
        let mut scratch = [0u8; PARSE_HEAD_LEN];
        let (head, len) = p.head(&mut scratch);
        assert_eq!((head, len), (small, 90));
        // A single segment is never copied.
        let mut f = fake(0, 300, 0);
        let p = Packet::from_rx(handle(&mut f));
        assert!(!p.is_multi_seg());
        assert_eq!(p.pkt_len(), 300);
        let (head, len) = p.head(&mut scratch);
        assert_eq!((head.as_ptr(), len), (p.data().as_ptr(), 300));
    }

    #[test]
    fn writes_across_segments() {
        let frame = udp_436();
        let mut segs = chain(&frame, (4, 5));
        let mut p = Packet::from_rx(mb(&mut segs[0].hdr));
        let macs: Vec<u8> = (0xa0..0xac).collect();
        assert!(p.write_at(0, &macs[..6]));
        assert!(p.write_at(6, &macs[6..]));
        let mut out = vec![0u8; frame.len()];
        assert_eq!(p.with_mbuf(|m| m.read_into(&mut out)), frame.len());
        assert_eq!(&out[..12], &macs[..]);
        assert_eq!(&out[12..], &frame[12..]);
        assert_eq!(&segs[0].room[64..68], &macs[..4]);
        assert_eq!(&segs[1].room[64..69], &macs[4..9]);
        assert_eq!(&segs[2].room[64..67], &macs[9..12]);
        // Past the end: nothing written.
        let before = segs[2].room;
        assert!(!p.write_at(frame.len() - 2, &[0xff; 4]));
        assert_eq!(segs[2].room, before);
        assert!(p.write_at(frame.len() - 4, &[0xff; 4]));
        // A single segment never writes past its data.
        let mut f = fake(0, 20, 0);
        let mut p = Packet::from_rx(handle(&mut f));
        assert!(!p.write_at(18, &[1, 2, 3]));
        assert!(p.write_at(17, &[1, 2, 3]));
        assert_eq!(&f.room[17..21], &[1, 2, 3, 20]);
    }
}
