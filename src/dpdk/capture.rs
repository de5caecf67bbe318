//! Frame copies for `--capture`: the RX lcore copies received frames
//! (`rte_pktmbuf_copy`, whole chains) into a capture-only mempool and
//! enqueues them, with their RX TSC, on a bounded `rte_ring`; a thread
//! that does not forward dequeues them, reads each frame out and frees
//! the copy. The originals are only read: they go on through the pipeline
//! untouched, and nothing here allocates on the heap per packet.
//!
//! A copy that finds the pool empty or the ring full is not made (or freed
//! at once) and reported as dropped; the original is never affected.

use super::error::DpdkError;
use super::mbuf::MbufPtr;
use super::mbuf::RawMbuf;
use super::mempool::Mempool;
use super::ring::{Ring, RingItem, RingReceiver, RingSender};
use super::sys;
use crate::queue::{BurstReceiver, BurstSender, MAX_BURST};
use std::ptr::NonNull;
use std::sync::Arc;

/// One copy on its way to the writer: the copy (owned by the ring while
/// enqueued) and the TSC read when the original was received.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct CaptureItem {
    mbuf: RawMbuf,
    tsc: u64,
}

impl CaptureItem {
    const EMPTY: CaptureItem = CaptureItem {
        mbuf: RawMbuf::EMPTY,
        tsc: 0,
    };
}

// SAFETY: 16 bytes of plain data (checked below), Copy, no Drop; the ring
// only hands back what a CaptureSender enqueued.
unsafe impl RingItem for CaptureItem {}
const _: () = assert!(std::mem::size_of::<CaptureItem>() == 16);

/// Builds the copy pool and ring of one capture: `slots` ring slots and a
/// pool of `mbufs` mbufs on `socket`; `producers` senders (one per RX
/// lcore) and the one receiver.
pub fn capture_channel(
    label: &str,
    slots: u32,
    mbufs: u32,
    socket: i32,
    producers: usize,
) -> Result<(Vec<CaptureSender>, CaptureReceiver), DpdkError> {
    let pool = Arc::new(Mempool::create(&format!("cap_{label}"), mbufs, 0, socket)?);
    let (senders, receiver) = Ring::<CaptureItem>::mpsc(label, slots, socket, producers, false)?;
    Ok((
        senders
            .into_iter()
            .map(|ring| CaptureSender {
                ring,
                pool: pool.clone(),
            })
            .collect(),
        CaptureReceiver {
            ring: receiver,
            pool,
        },
    ))
}

/// The RX lcore's end: copies frames and enqueues the copies.
pub struct CaptureSender {
    ring: RingSender<CaptureItem>,
    pool: Arc<Mempool>,
}

impl CaptureSender {
    /// Copies every frame of `frames` (whole chains) with their RX time
    /// `tsc` and enqueues the copies. Returns how many copies were lost
    /// (pool empty or ring full); those are freed here.
    pub fn copy_burst(&mut self, frames: &[MbufPtr], tsc: u64) -> usize {
        let mut items = [CaptureItem::EMPTY; MAX_BURST];
        let mut n = 0;
        let pool = self.pool.raw();
        for m in frames.iter().take(MAX_BURST) {
            // SAFETY: `m` is a live mbuf owned by the caller's burst, only
            // read here; `pool` is a valid pktmbuf pool kept alive by
            // self.pool; the copy (or NULL) is a new mbuf nobody else owns.
            let copy = unsafe { sys::rte_pktmbuf_copy(m.raw(), pool, 0, u32::MAX) };
            if let Some(c) = NonNull::new(copy) {
                items[n] = CaptureItem {
                    mbuf: RawMbuf(c),
                    tsc,
                };
                n += 1;
            }
        }
        let lost = frames.len().min(MAX_BURST) - n;
        let sent = self.ring.send_burst(&items[..n]);
        for item in &items[sent..n] {
            // SAFETY: a copy made above that the ring refused: still owned
            // here, freed once.
            unsafe { sys::rte_pktmbuf_free(item.mbuf.0.as_ptr()) };
        }
        lost + (n - sent)
    }
}

/// The writer's end: dequeues copies, shows each frame, frees it.
pub struct CaptureReceiver {
    ring: RingReceiver<CaptureItem>,
    pool: Arc<Mempool>,
}

impl CaptureReceiver {
    /// Dequeues up to one burst of copies; for each, calls `f(frame, tsc)`
    /// with the whole frame (chains read into `buf`) and then frees the
    /// copy. Returns how many were dequeued.
    pub fn drain(&mut self, buf: &mut Vec<u8>, mut f: impl FnMut(&[u8], u64)) -> usize {
        let mut items = [CaptureItem::EMPTY; MAX_BURST];
        let n = self.ring.recv_burst(&mut items);
        for item in &items[..n] {
            let m = item.mbuf.0.as_ptr();
            buf.clear();
            // SAFETY: `m` is a copy made by a CaptureSender and dequeued
            // once from its ring: a live mbuf owned here. Each segment of
            // its chain holds data_len bytes at buf_addr + data_off.
            unsafe {
                buf.reserve((*m).pkt_len as usize);
                let mut seg = m as *const sys::rte_mbuf;
                let mut segs = (*m).nb_segs;
                while segs != 0 && !seg.is_null() {
                    let s = &*seg;
                    buf.extend_from_slice(std::slice::from_raw_parts(
                        (s.buf_addr as *const u8).add(s.data_off as usize),
                        s.data_len as usize,
                    ));
                    seg = s.next;
                    segs -= 1;
                }
            }
            f(buf, item.tsc);
            // SAFETY: the copy is owned here and freed once, after its last
            // read above.
            unsafe { sys::rte_pktmbuf_free(m) };
        }
        n
    }

    /// Copies still allocated from the capture pool (0 once every copy
    /// was dequeued and freed, and no sender is copying).
    pub fn in_use(&self) -> u32 {
        self.pool.in_use()
    }
}
