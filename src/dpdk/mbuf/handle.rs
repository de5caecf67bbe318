//! [`MbufPtr`]: the owned reference to one mbuf (module doc of `mbuf`),
//! and what reads and writes its frame and header in Rust, with no call
//! out of line per packet: data, length, port, RSS hash, dynamic fields,
//! the segment chain.
//!
//! Promise: every access stays inside the mbuf (or chain) the handle owns,
//! within the lengths its headers give.

use super::dynfield::U64Field;
use super::raw::RawMbuf;
use crate::dpdk::sys;

/// `RTE_MBUF_F_RX_RSS_HASH` (checked against DPDK's value in `tests.rs`).
pub const MBUF_F_RX_RSS_HASH: u64 = 1 << 1;

/// An owned reference to one mbuf (see the module doc): neither `Copy` nor
/// `Clone`.
#[derive(PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct MbufPtr(pub(super) RawMbuf);

impl MbufPtr {
    #[inline]
    pub(in crate::dpdk) fn raw(&self) -> *mut sys::rte_mbuf {
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
pub(super) fn prefetch(p: *const u8) {
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

/// As [`prefetch`], in exclusive state (PREFETCHW): for a line about to be
/// written.
#[inline(always)]
pub(in crate::dpdk) fn prefetch_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: a prefetch is a hint: it never faults and changes no
        // memory, whatever the address.
        unsafe {
            std::arch::asm!("prefetchw [{}]", in(reg) p, options(nostack, readonly, preserves_flags));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
