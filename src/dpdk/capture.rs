//! Frame copies for `--capture`: each RX lcore copies the bytes of the
//! frames it captures, with their RX TSC, into a byte ring of its own
//! (one per capture and RX lcore: single producer, single consumer), and
//! a thread that does not forward reads them out of the rings. The
//! originals are only read: they go on through the pipeline untouched, and
//! nothing is allocated per packet.
//!
//! ## Why a byte ring, not mbuf copies
//!
//! A copy into an mbuf (`rte_pktmbuf_copy` into a capture pool, as
//! `rte_pdump` does) takes an mbuf from a pool the writer puts back into
//! from its own core: per copy a compare-and-swap on the pool's ring
//! head, a read of its tail, and the mbuf's header lines, all last
//! written by the writer's core, and a ring enqueue besides. Here a copy
//! is the frame's bytes and a 16-byte header written at the producer's
//! position, lines the writer read last, one after the other (the
//! hardware prefetcher follows), and one `Release` store of the position
//! per burst.
//!
//! ## The ring
//!
//! `size` bytes (a power of two) from the hugepage heap on the RX lcore's
//! socket, and two positions that only grow: `head` (bytes published,
//! written by the producer) and `tail` (bytes consumed, written by the
//! consumer), each on its own cache line. A record is 16 bytes of header
//! (RX TSC, the frame's length, the bytes captured) and the captured
//! bytes, padded to 16; a record never wraps: where one would not fit
//! before the end, a wrap marker (captured length `u32::MAX`) fills the
//! rest and the record starts at offset 0.
//!
//! The producer keeps its own `head` and a cached `tail`, and reloads
//! `tail` (`Acquire`) only when the cached value says the record does not
//! fit; it publishes a burst's records with one `Release` store of
//! `head`. The consumer loads `head` (`Acquire`), reads the records up to
//! it, and stores `tail` (`Release`) once per pass. A record the ring has
//! no room for is not copied: it is counted as dropped (the caller adds it
//! to `capture_dropped`), so a writer that falls behind costs the RX
//! lcore one compare per frame and a reload of `tail` per burst.
//!
//! The writer may share a CPU with an RX lcore: neither side ever waits
//! for the other (no lock, no spin), so a preempted writer only lets its
//! ring fill.

use super::mbuf::{prefetch_write, MbufPtr};
use super::memory::SocketMemory;
use crate::queue::UnitMemory;
use crossbeam_utils::CachePadded;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of one record's header: RX TSC (8), frame length (4), captured
/// length (4).
const HEADER: usize = 16;

/// Captured length of a wrap marker: the rest of the ring is padding.
const WRAP: u32 = u32::MAX;

/// Bytes of one capture's ring per RX lcore (one 2 MiB huge page): 26
/// thousand 64-byte frames, 1300 of 1514 bytes, waiting for the writer.
pub const RING_BYTES: u64 = 2 << 20;

/// Free bytes below which a burst reloads the writer's position first: a
/// burst of 64-byte frames.
const MIN_ROOM: u64 = 32 * 96;

/// Bytes of a frame kept at most (the rest is counted in its length, as
/// pcapng's snap length does): 64 KiB, above any mbuf chain's frame.
pub const MAX_SNAP: u32 = 65_535;

/// Bytes one record of `cap` captured bytes takes.
#[inline]
fn record_len(cap: u32) -> u64 {
    (HEADER as u64 + u64::from(cap) + 15) & !15
}

/// One byte ring (module doc): the memory and the two positions.
struct ByteRing {
    /// `size` bytes, 64-byte aligned, from `mem`.
    buf: NonNull<u8>,
    size: u64,
    mem: SocketMemory,
    /// Bytes published (producer writes, `Release`).
    head: CachePadded<AtomicU64>,
    /// Bytes consumed (consumer writes, `Release`).
    tail: CachePadded<AtomicU64>,
}

// SAFETY: the ring's bytes are written only by its one producer between
// `tail` and `tail + size`, outside what it has published, and read only
// by its one consumer between `tail` and `head`; the Release/Acquire pairs
// on `head` and `tail` order those accesses (module doc). The handles that
// reach it are one `CaptureSender` and one `CaptureReceiver` entry, not
// Clone.
unsafe impl Send for ByteRing {}
// SAFETY: as above.
unsafe impl Sync for ByteRing {}

impl ByteRing {
    fn layout(size: u64) -> Layout {
        Layout::from_size_align(size as usize, 64).expect("a power-of-two ring size")
    }

    /// The bytes at `offset..offset + len` (inside the ring: `offset + len
    /// <= size`, by the record rule).
    ///
    /// # Safety
    /// The caller has these bytes to itself: the producer outside what it
    /// published and inside `tail + size`, the consumer between `tail`
    /// and `head`.
    #[allow(clippy::mut_from_ref)]
    unsafe fn bytes(&self, offset: u64, len: usize) -> &mut [u8] {
        debug_assert!(offset + len as u64 <= self.size);
        // SAFETY: inside the allocation (above); exclusive by the caller's
        // contract.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_ptr().add(offset as usize), len) }
    }
}

impl Drop for ByteRing {
    fn drop(&mut self) {
        // SAFETY: allocated from `mem` with this layout in `capture_channel`,
        // freed once (the last handle is gone).
        unsafe { self.mem.free(self.buf, Self::layout(self.size)) };
    }
}

/// Builds one capture's rings: one ring of `bytes` bytes (a power of two,
/// at least twice a full record) per RX lcore (`producers`) on `socket`;
/// the senders in RX-lcore order and the one receiver. Errors when the
/// heap has no room.
pub fn capture_channel(
    bytes: u64,
    socket: i32,
    producers: usize,
) -> Result<(Vec<CaptureSender>, CaptureReceiver), String> {
    assert!(bytes.is_power_of_two() && bytes >= 2 * record_len(MAX_SNAP));
    let mem = SocketMemory { socket };
    let mut rings = Vec::with_capacity(producers);
    for _ in 0..producers {
        let buf = mem
            .alloc_zeroed(ByteRing::layout(bytes))
            .ok_or_else(|| format!("no {bytes} bytes of DPDK memory on socket {socket}"))?;
        rings.push(Arc::new(ByteRing {
            buf,
            size: bytes,
            mem,
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
        }));
    }
    let senders = rings
        .iter()
        .map(|r| CaptureSender {
            ring: r.clone(),
            head: 0,
            tail: 0,
        })
        .collect();
    Ok((
        senders,
        CaptureReceiver {
            rings: rings.into_iter().map(|r| (r, 0)).collect(),
            next: 0,
        },
    ))
}

/// The RX lcore's end: copies frames into its ring.
pub struct CaptureSender {
    ring: Arc<ByteRing>,
    /// Bytes written (published up to the end of each `copy_burst`).
    head: u64,
    /// `tail` as last loaded.
    tail: u64,
}

impl CaptureSender {
    /// Copies `frames` (whole chains, up to [`MAX_SNAP`] bytes each) with
    /// their RX time `tsc`, as far as the ring has room, and publishes
    /// them. Returns how many were not copied (no room: the writer is
    /// behind).
    pub fn copy_burst(&mut self, frames: &[MbufPtr], tsc: u64) -> usize {
        let ring = &*self.ring;
        let mask = ring.size - 1;
        // Room as last seen; short of a burst's worth, look again (one
        // load of a line the writer stores to once per pass).
        if ring.size - (self.head - self.tail) < MIN_ROOM {
            self.tail = ring.tail.load(Ordering::Acquire);
        }
        let room = ring.size - (self.head - self.tail);
        // Ask for everything that fits at once: the frames (the PMD may
        // not have read them) and, in exclusive state, the ring's lines
        // their records take (last read by the writer's core, and known
        // free: a line the writer is still reading would be taken from
        // it), so that the misses overlap instead of queueing one behind
        // the other. With no room, nothing is touched.
        let mut bytes = 0;
        for m in frames {
            let need = record_len(m.pkt_len().min(MAX_SNAP));
            if bytes + need > room {
                break;
            }
            m.prefetch_data();
            bytes += need;
        }
        if bytes == 0 {
            return frames.len();
        }
        let offset = self.head & mask;
        let end = (offset + bytes).min(ring.size);
        let mut line = offset & !63;
        while line < end {
            // SAFETY: `line` < size: inside the ring's allocation.
            prefetch_write(unsafe { ring.buf.as_ptr().add(line as usize) });
            line += 64;
        }
        let mut copied = 0;
        for m in frames {
            let len = m.pkt_len();
            let cap = len.min(MAX_SNAP);
            let need = record_len(cap);
            let offset = self.head & mask;
            // A record does not wrap: the rest of the ring is skipped.
            let skip = if offset + need > ring.size {
                ring.size - offset
            } else {
                0
            };
            if self.head + skip + need - self.tail > ring.size {
                self.tail = ring.tail.load(Ordering::Acquire);
                if self.head + skip + need - self.tail > ring.size {
                    break;
                }
            }
            if skip != 0 {
                // SAFETY: `skip >= 16` bytes at `offset` (records are
                // multiples of 16), free (room checked), not published.
                let marker = unsafe { ring.bytes(offset, HEADER) };
                marker[12..16].copy_from_slice(&WRAP.to_ne_bytes());
                self.head += skip;
            }
            // SAFETY: `need` bytes at the (new) head's offset: inside the
            // ring (no wrap, above), free (room checked), not published.
            let rec = unsafe { ring.bytes(self.head & mask, need as usize) };
            rec[0..8].copy_from_slice(&tsc.to_ne_bytes());
            rec[8..12].copy_from_slice(&len.to_ne_bytes());
            rec[12..16].copy_from_slice(&cap.to_ne_bytes());
            m.read_into(&mut rec[HEADER..HEADER + cap as usize]);
            self.head += need;
            copied += 1;
        }
        if copied != 0 {
            ring.head.store(self.head, Ordering::Release);
        }
        frames.len() - copied
    }
}

/// The writer's end: every RX lcore's ring of one capture.
pub struct CaptureReceiver {
    /// Each ring and the consumer's position in it.
    rings: Vec<(Arc<ByteRing>, u64)>,
    /// The ring the next pass starts at (round-robin).
    next: usize,
}

impl CaptureReceiver {
    /// Reads up to `max` records, starting at the next ring in turn, and
    /// shows each to `f(captured bytes, frame length, tsc)`, in each ring's
    /// order; the space goes back to the producers when the pass ends.
    /// Returns how many records.
    pub fn drain(&mut self, max: usize, mut f: impl FnMut(&[u8], u32, u64)) -> usize {
        let n_rings = self.rings.len();
        let mut done = 0;
        for k in 0..n_rings {
            let (ring, pos) = &mut self.rings[(self.next + k) % n_rings];
            let head = ring.head.load(Ordering::Acquire);
            let start = *pos;
            let mask = ring.size - 1;
            while *pos != head && done < max {
                let offset = *pos & mask;
                // SAFETY: between `tail` and `head`: published records
                // (Acquire above), the producer does not touch them.
                let hdr = unsafe { ring.bytes(offset, HEADER) };
                let cap = u32::from_ne_bytes(hdr[12..16].try_into().expect("4 bytes"));
                if cap == WRAP {
                    *pos += ring.size - offset;
                    continue;
                }
                let tsc = u64::from_ne_bytes(hdr[0..8].try_into().expect("8 bytes"));
                let len = u32::from_ne_bytes(hdr[8..12].try_into().expect("4 bytes"));
                // SAFETY: as above; the record lies inside the ring.
                let data = unsafe { ring.bytes(offset + HEADER as u64, cap as usize) };
                f(data, len, tsc);
                *pos += record_len(cap);
                done += 1;
            }
            if *pos != start {
                ring.tail.store(*pos, Ordering::Release);
            }
        }
        self.next = (self.next + 1) % n_rings.max(1);
        done
    }

    /// Bytes published and not yet read, over all rings (0 once the
    /// writer drained everything).
    pub fn pending(&self) -> u64 {
        self.rings
            .iter()
            .map(|(r, pos)| r.head.load(Ordering::Acquire) - pos)
            .sum()
    }
}
