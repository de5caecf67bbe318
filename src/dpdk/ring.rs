//! `rte_ring` as a hand-off queue: the backend tqfwd compares its
//! TransferQueue against. SP/SC rings for the sharded topology (one ring per
//! producer→consumer pair), MP/SC for shared (one ring per consumer), created
//! on the consumer's NUMA socket with `RING_F_EXACT_SZ` so a ring of depth N
//! holds exactly N mbufs.

use super::mbuf::MbufPtr;
use super::{sys, DpdkError};
use crate::queue::{BurstReceiver, BurstSender};
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

static RING_SEQ: AtomicU32 = AtomicU32::new(0);

/// An `rte_ring` of mbuf handles; freed when the last handle drops (which
/// must happen before `rte_eal_cleanup`).
pub struct Ring {
    raw: *mut sys::rte_ring,
    pub capacity: u32,
}

// SAFETY: rte_ring is built for concurrent producers/consumers within the
// sync mode it was created with; the pipeline gives a single-producer ring
// exactly one sender and every ring exactly one receiver.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    /// Creates a ring holding exactly `depth` handles on `socket`.
    /// `multi_producer` selects MP enqueue; dequeue is always SC.
    pub fn create(label: &str, depth: u32, socket: i32, multi_producer: bool) -> Result<Arc<Ring>, DpdkError> {
        let seq = RING_SEQ.fetch_add(1, Ordering::Relaxed);
        // RTE_RING_NAMESIZE is 29 bytes incl. NUL.
        let mut name = format!("tq{seq}_{label}");
        name.truncate(28);
        let cname = CString::new(name.clone()).expect("ring name has no NUL");
        let mut flags = sys::RING_F_SC_DEQ | sys::RING_F_EXACT_SZ;
        if !multi_producer {
            flags |= sys::RING_F_SP_ENQ;
        }
        // SAFETY: valid C name; returns NULL with rte_errno on failure.
        let raw = unsafe { sys::rte_ring_create(cname.as_ptr(), depth, socket, flags) };
        if raw.is_null() {
            return Err(DpdkError::from_errno(format!("rte_ring_create({name}, {depth} slots, socket {socket})")));
        }
        Ok(Arc::new(Ring { raw, capacity: depth }))
    }

    pub fn count(&self) -> u32 {
        // SAFETY: valid ring for self's lifetime.
        unsafe { sys::rte_ring_count(self.raw) }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: created by us, freed once, nobody holds a handle any more.
        unsafe { sys::rte_ring_free(self.raw) };
    }
}

/// The enqueue side of a ring.
pub struct RingSender(pub Arc<Ring>);
/// The dequeue side of a ring (one per ring: SC).
pub struct RingReceiver(pub Arc<Ring>);

impl BurstSender<MbufPtr> for RingSender {
    #[inline]
    fn send_burst(&mut self, items: &[MbufPtr]) -> usize {
        // SAFETY: `items` is a slice of pointer-sized handles
        // (MbufPtr is repr(transparent) over a pointer); the ring copies the
        // accepted prefix.
        unsafe {
            sys::rte_ring_enqueue_burst(
                self.0.raw,
                items.as_ptr() as *const *mut c_void,
                items.len() as u32,
                std::ptr::null_mut(),
            ) as usize
        }
    }
}

impl BurstReceiver<MbufPtr> for RingReceiver {
    #[inline]
    fn recv_burst(&mut self, out: &mut [MbufPtr]) -> usize {
        // SAFETY: `out` has out.len() writable pointer-sized slots; the ring
        // only ever holds MbufPtr values enqueued by RingSender, so what it
        // writes are valid MbufPtr (non-null) handles.
        unsafe {
            sys::rte_ring_dequeue_burst(self.0.raw, out.as_mut_ptr() as *mut *mut c_void, out.len() as u32, std::ptr::null_mut())
                as usize
        }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        // SAFETY: valid ring.
        unsafe { sys::rte_ring_empty(self.0.raw) != 0 }
    }
}
