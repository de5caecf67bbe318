//! Mbuf handles and fixed-size bursts of them.
//!
//! [`MbufPtr`] is an *owned reference* to one live mbuf: the pipeline moves
//! it (RX → hand-off queue → worker → hand-off queue → TX), never keeps a
//! copy after moving it on, and ends its life exactly once — transmitted
//! (the PMD frees it) or freed here. Only `rx_burst` (see `port.rs`) makes
//! new ones. Per-packet accessors read the `rte_mbuf` fields directly in
//! Rust (no out-of-line call per packet).
//!
//! [`MbufBurst`] is a fixed array of [`MAX_BURST`] handles plus a length:
//! no allocation on the data path.

use super::{sys, DpdkError};
use std::ffi::CString;
use std::ptr::NonNull;

/// Largest burst tqfwd handles anywhere (RX, hand-off, TX).
pub const MAX_BURST: usize = 256;

/// `RTE_MBUF_F_RX_RSS_HASH` (checked against DPDK's value in tests).
pub const MBUF_F_RX_RSS_HASH: u64 = 1 << 1;

/// An owned reference to one mbuf (see the module doc).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct MbufPtr(NonNull<sys::rte_mbuf>);

// SAFETY: an mbuf may be handed from one lcore to another; ownership moves
// with the handle (module doc), so no two threads use it at once.
unsafe impl Send for MbufPtr {}

impl MbufPtr {
    /// A placeholder that is never dereferenced: fills unused burst slots.
    const EMPTY: MbufPtr = MbufPtr(NonNull::dangling());

    #[inline]
    fn raw(self) -> *mut sys::rte_mbuf {
        self.0.as_ptr()
    }

    /// The first segment's data (the whole frame for single-segment mbufs).
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: self is a live, owned mbuf (module invariant); buf_addr +
        // data_off .. + data_len lies inside its data room by DPDK's
        // invariants.
        unsafe {
            let m = &*self.raw();
            std::slice::from_raw_parts((m.buf_addr as *const u8).add(m.data_off as usize), m.data_len as usize)
        }
    }

    /// The first segment's data, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as data(); the handle is owned, so nobody else accesses
        // the data while we hold &mut self.
        unsafe {
            let m = &*self.raw();
            std::slice::from_raw_parts_mut((m.buf_addr as *mut u8).add(m.data_off as usize), m.data_len as usize)
        }
    }

    /// Total packet length over all segments.
    #[inline]
    pub fn pkt_len(&self) -> u32 {
        // SAFETY: live owned mbuf.
        unsafe { (*self.raw()).pkt_len }
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

    /// Hints the CPU to fetch the mbuf header (first cache line).
    #[inline]
    pub fn prefetch_header(&self) {
        prefetch(self.raw() as *const u8);
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

    /// The mbuf's pointer value, for opaque carriers (rings).
    #[inline]
    pub fn as_ptr(self) -> *mut std::ffi::c_void {
        self.raw() as *mut std::ffi::c_void
    }
}

#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: prefetch is a hint; it never faults, whatever the address.
        unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
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
            return Err(DpdkError { call: "rte_mbuf_dynfield_register".into(), code: libc::EINVAL, text: "name too long".into() });
        }
        for (d, b) in desc.name.iter_mut().zip(bytes) {
            *d = *b as std::os::raw::c_char;
        }
        desc.size = 8;
        desc.align = 8;
        // SAFETY: valid descriptor; returns the offset or -1 with rte_errno.
        let off = unsafe { sys::rte_mbuf_dynfield_register(&desc) };
        if off < 0 {
            return Err(DpdkError::from_errno(format!("rte_mbuf_dynfield_register({name})")));
        }
        let offset = off as usize;
        if offset + 8 > std::mem::size_of::<sys::rte_mbuf>() || offset % 8 != 0 {
            return Err(DpdkError { call: "rte_mbuf_dynfield_register".into(), code: libc::EINVAL, text: format!("bad offset {offset}") });
        }
        Ok(U64Field { offset })
    }
}

/// A fixed-capacity burst of owned mbufs.
pub struct MbufBurst {
    slots: [MbufPtr; MAX_BURST],
    len: usize,
}

impl Default for MbufBurst {
    fn default() -> Self {
        Self::new()
    }
}

impl MbufBurst {
    pub const fn new() -> Self {
        MbufBurst { slots: [MbufPtr::EMPTY; MAX_BURST], len: 0 }
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
    pub fn as_slice(&self) -> &[MbufPtr] {
        &self.slots[..self.len]
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [MbufPtr] {
        &mut self.slots[..self.len]
    }

    /// Appends one mbuf; returns it back when the burst is full.
    #[inline]
    pub fn push(&mut self, m: MbufPtr) -> Result<(), MbufPtr> {
        if self.len == MAX_BURST {
            return Err(m);
        }
        self.slots[self.len] = m;
        self.len += 1;
        Ok(())
    }

    /// Appends mbufs produced by `fill` into the free tail (at most `max`);
    /// `fill` writes handles into the slice it gets and returns how many.
    /// Used by hand-off receivers.
    #[inline]
    pub fn fill_with(&mut self, max: usize, fill: impl FnOnce(&mut [MbufPtr]) -> usize) -> usize {
        let end = (self.len + max).min(MAX_BURST);
        let n = fill(&mut self.slots[self.len..end]).min(end - self.len);
        self.len += n;
        n
    }

    /// Forgets the first `n` mbufs: they were moved on (sent to a queue or
    /// transmitted); the rest move to the front.
    #[inline]
    pub fn consume_front(&mut self, n: usize) {
        if n >= self.len {
            self.len = 0;
            return;
        }
        self.slots.copy_within(n..self.len, 0);
        self.len -= n;
    }

    /// Frees every mbuf in the burst (`rte_pktmbuf_free_bulk`) and empties it.
    #[inline]
    pub fn free_all(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the first `len` slots are live, owned mbufs (module
        // invariant); MbufPtr is repr(transparent) over a non-null
        // `*mut rte_mbuf`; after the call the burst forgets them.
        unsafe {
            sys::rte_pktmbuf_free_bulk(self.slots.as_mut_ptr() as *mut *mut sys::rte_mbuf, self.len as u32);
        }
        self.len = 0;
    }

    /// Keeps the mbufs for which `keep` returns true, in order, and frees the
    /// others; returns how many were freed.
    #[inline]
    pub fn retain_or_free(&mut self, mut keep: impl FnMut(&mut MbufPtr) -> bool) -> usize {
        let mut kept = 0;
        let mut freed = 0;
        for i in 0..self.len {
            let mut m = self.slots[i];
            if keep(&mut m) {
                self.slots[kept] = m;
                kept += 1;
            } else {
                // SAFETY: a live, owned mbuf that this burst forgets now.
                unsafe { sys::rte_pktmbuf_free(m.raw()) };
                freed += 1;
            }
        }
        self.len = kept;
        freed
    }

    pub(crate) fn raw_tail(&mut self) -> (*mut *mut sys::rte_mbuf, usize) {
        // SAFETY: pointer arithmetic inside the slots array (len <= MAX_BURST).
        let p = unsafe { self.slots.as_mut_ptr().add(self.len) } as *mut *mut sys::rte_mbuf;
        (p, MAX_BURST - self.len)
    }

    pub(crate) fn raw_head(&mut self) -> *mut *mut sys::rte_mbuf {
        self.slots.as_mut_ptr() as *mut *mut sys::rte_mbuf
    }

    pub(crate) fn grow(&mut self, n: usize) {
        self.len = (self.len + n).min(MAX_BURST);
    }
}

impl Drop for MbufBurst {
    fn drop(&mut self) {
        // Nothing is lost silently: a burst dropped with mbufs inside frees
        // them. The pipeline drains and counts before this happens.
        debug_assert!(self.len == 0, "MbufBurst dropped holding {} mbufs", self.len);
        self.free_all();
    }
}
