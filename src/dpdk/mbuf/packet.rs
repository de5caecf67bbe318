//! [`Packet`]: an mbuf with the header facts the later stages need, in
//! one 8-byte word (module doc of `mbuf`), read once on the RX lcore.
//!
//! Promise: a packet reads the mbuf header only where its word cannot say
//! (a far frame, a chain, the RSS hash, a dynamic field), and is owned
//! like [`MbufPtr`]: moved, never duplicated.

use super::dynfield::U64Field;
use super::handle::{prefetch, MbufPtr};
use super::raw::{RawMbuf, RawPacket};
use crate::dpdk::sys;
use std::ptr::NonNull;

/// An mbuf on its way through the pipeline, with the header facts the
/// later stages need (see the module doc), in 8 bytes: the mbuf address
/// and, in the bits an address leaves free, the first segment's length,
/// the input port and three flags. Owned like [`MbufPtr`]: moved, never
/// duplicated (neither `Copy` nor `Clone`), ended once.
///
/// Layout of the word: bits 6..47 are the mbuf address (mbufs are 64-byte
/// aligned and below 2^47, which [`Mempool`](crate::dpdk::mempool::Mempool)
/// checks for every mbuf of its pools at creation), bits 0..6 the flags
/// (`SAMPLED`, `MULTI_SEG`, `FAR`, and the NIC's IPv4 checksum verdict
/// `IP_CKSUM_GOOD` / `IP_CKSUM_BAD`), bits 47..59 the first segment's
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
pub struct Packet(pub(super) RawPacket);

/// Where a frame starts in an mbuf of tqfwd's pools, from the mbuf's own
/// address: the header, no private area, the default headroom.
pub const STD_FRAME_OFFSET: usize =
    std::mem::size_of::<sys::rte_mbuf>() + sys::RTE_PKTMBUF_HEADROOM as usize;

/// The address bits of a [`Packet`] word: an mbuf is 64-byte aligned and
/// below 2^47 (x86-64 user space).
pub(in crate::dpdk) const PACKET_ADDR_MASK: u64 = 0x0000_7fff_ffff_ffc0;

const _: () = assert!(std::mem::size_of::<Packet>() == 8);
const _: () = assert!(std::mem::size_of::<RawPacket>() == 8);
const _: () = assert!(std::mem::align_of::<Packet>() == std::mem::align_of::<RawPacket>());
const _: () = assert!(std::mem::size_of::<MbufPtr>() == std::mem::size_of::<RawMbuf>());
const _: () = assert!(std::mem::align_of::<sys::rte_mbuf>() >= 64);

/// The panic of [`Packet::from_rx`], out of its loop.
#[cold]
#[inline(never)]
fn unfit_address(addr: u64) -> ! {
    panic!("mbuf address {addr:#x} does not fit a packet handle")
}

impl Packet {
    /// Flag: this packet carries an RX timestamp (latency sample).
    const SAMPLED: u64 = 1;
    /// Flag: the mbuf is a chain of several segments.
    const MULTI_SEG: u64 = 2;
    /// Flag: length, frame start and port are read from the header.
    const FAR: u64 = 4;
    /// Flag: the NIC found the IPv4 header checksum good
    /// (`RTE_MBUF_F_RX_IP_CKSUM_GOOD`, or `_NONE`: the header's integrity
    /// was verified).
    const IP_CKSUM_GOOD: u64 = 8;
    /// Flag: the NIC found the IPv4 header checksum bad
    /// (`RTE_MBUF_F_RX_IP_CKSUM_BAD` alone).
    const IP_CKSUM_BAD: u64 = 16;
    const LEN_SHIFT: u32 = 47;
    const LEN_MAX: u64 = (1 << 12) - 1;
    const PORT_SHIFT: u32 = 59;
    const PORT_MAX: u64 = (1 << 5) - 1;

    /// Reads the header facts of a freshly received mbuf (on the RX lcore)
    /// that arrived on `port` (the polled queue's port, which the PMD also
    /// writes into the header: a burst's packets share it, so the caller
    /// passes it and the header's copy is not read).
    ///
    /// Panics if the mbuf's address does not fit the packet word (not
    /// 64-byte aligned, or above 2^47): never for an mbuf of tqfwd's pools,
    /// which are checked when created.
    #[inline]
    pub fn from_rx(m: MbufPtr, port: u16) -> Packet {
        let addr = m.raw() as u64;
        if addr & !PACKET_ADDR_MASK != 0 {
            unfit_address(addr);
        }
        let port = u64::from(port);
        // SAFETY: live owned mbuf; plain field reads (one cache line).
        let (start, len, segs, ol) = unsafe {
            let h = &*m.raw();
            (
                (h.buf_addr as usize).wrapping_add(h.data_off as usize),
                u64::from(h.data_len),
                h.nb_segs,
                h.ol_flags,
            )
        };
        let cksum = Self::ip_cksum_flags(ol);
        // Runs for every received frame: the usual one (one segment, the
        // frame where the pools put it, a short length, a low port) takes
        // one branch on the tests combined with a bitwise `&`; the rest,
        // and the panic, are out of line.
        let fits = (start.wrapping_sub(addr as usize) == STD_FRAME_OFFSET)
            & (len <= Self::LEN_MAX)
            & (port <= Self::PORT_MAX);
        if fits & (segs == 1) {
            return Packet(RawPacket(
                addr | len << Self::LEN_SHIFT | port << Self::PORT_SHIFT | cksum,
            ));
        }
        Self::from_rx_unusual(addr | cksum, fits, len, port, segs)
    }

    /// The word's checksum flags for an mbuf's `ol_flags`: bit 4 of
    /// `ol_flags` is `RTE_MBUF_F_RX_IP_CKSUM_BAD`, bit 7 `_GOOD` (both:
    /// `_NONE`, counted good; neither: `_UNKNOWN`, no flag).
    #[inline(always)]
    fn ip_cksum_flags(ol: u64) -> u64 {
        let good = (ol >> 7) & 1;
        let bad = (ol >> 4) & 1 & !good;
        (good * Self::IP_CKSUM_GOOD) | (bad * Self::IP_CKSUM_BAD)
    }

    /// [`from_rx`](Self::from_rx) for a chain, or a frame whose start,
    /// length or port does not fit the word (`!fits`: `FAR`).
    #[inline(never)]
    fn from_rx_unusual(addr: u64, fits: bool, len: u64, port: u64, segs: u16) -> Packet {
        let facts = if fits {
            len << Self::LEN_SHIFT | port << Self::PORT_SHIFT
        } else {
            Self::FAR
        };
        Packet(RawPacket(
            addr | facts | (u64::from(segs > 1) * Self::MULTI_SEG),
        ))
    }

    #[inline(always)]
    fn raw(&self) -> *mut sys::rte_mbuf {
        (self.0 .0 & PACKET_ADDR_MASK) as *mut sys::rte_mbuf
    }

    #[inline(always)]
    pub(super) fn is_far(&self) -> bool {
        self.0 .0 & Self::FAR != 0
    }

    /// The mbuf as a handle for the duration of `f` (to read its header
    /// or chain). The view is not a second owner: it cannot leave `f`, and
    /// handles have no destructor.
    #[inline]
    pub(super) fn with_mbuf<R>(&self, f: impl FnOnce(&MbufPtr) -> R) -> R {
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

    /// Sets the port the packet leaves by (L3 forwarding: the route's),
    /// which the later stages then read as [`port`](Self::port): in the
    /// word, or for a port the word cannot hold, in the mbuf header (the
    /// packet becomes `FAR`, its length and start read from the header,
    /// which still holds them).
    #[inline]
    pub fn set_port(&mut self, port: u16) {
        if !self.is_far() && u64::from(port) <= Self::PORT_MAX {
            let w = self.0 .0 & !(Self::PORT_MAX << Self::PORT_SHIFT);
            self.0 .0 = w | u64::from(port) << Self::PORT_SHIFT;
            return;
        }
        self.set_port_far(port);
    }

    #[inline(never)]
    fn set_port_far(&mut self, port: u16) {
        // SAFETY: live owned mbuf (`&mut self`: the only access); a plain
        // field write.
        unsafe { (*self.raw()).port = port };
        self.0 .0 |= Self::FAR;
    }

    /// The NIC's verdict on the IPv4 header checksum, where it gave one
    /// (`Some(true)`: good, `Some(false)`: bad), read at RX.
    #[inline]
    pub fn ip_checksum_verdict(&self) -> Option<bool> {
        let w = self.0 .0;
        if w & Self::IP_CKSUM_GOOD != 0 {
            Some(true)
        } else if w & Self::IP_CKSUM_BAD != 0 {
            Some(false)
        } else {
            None
        }
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

    /// Makes the packet a latency sample: `now` into its RX-timestamp
    /// field, and the mark.
    #[inline]
    pub fn stamp(&mut self, field: U64Field, now: u64) {
        self.with_mbuf_mut(|m| m.set_field(field, now));
        self.set_sampled();
    }

    /// Unmarks a latency sample (its stamp has been read).
    #[inline]
    pub fn clear_sampled(&mut self) {
        self.0 .0 &= !Self::SAMPLED;
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

    /// Hints the CPU to fetch the mbuf header's two lines (what a PMD's
    /// TX free reads).
    #[inline]
    pub fn prefetch_header(&self) {
        prefetch(self.raw() as *const u8);
        prefetch((self.raw() as *const u8).wrapping_add(64));
    }
}
