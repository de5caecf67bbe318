//! `rte_ring` as a hand-off queue: the backend tqfwd compares its
//! TransferQueue against. SP/SC rings for the sharded topology (one ring per
//! producer→consumer pair), MP/SC for shared (one ring per consumer), created
//! on the consumer's NUMA socket with `RING_F_EXACT_SZ` so a ring of depth N
//! holds exactly N mbufs. Items are any [`RingItem`]: pointer-sized ones
//! (a packet's raw form is one 8-byte word) use the classic `void *` ring
//! calls, larger ones the `_elem` calls with that element size. Packet
//! rings are built only through `packet_queue`, which wraps both ends.
//!
//! In place ([`BurstSender::send_with`], [`BurstReceiver::recv_with`]):
//! DPDK's zero-copy ring API (`rte_ring_enqueue_zc_burst_elem_start` /
//! `_finish`, and the dequeue pair, `rte_ring_peek_zc.h`), which lends the
//! ring's own slots up to its wrap. It needs a producer side that is single
//! (SP) or serialized (HTS): an MP ring built for it ([`Ring::mpsc`] with
//! `serialized`) uses `RING_F_MP_HTS_ENQ`; a classic MP ring cannot lend
//! its slots and its `send_with` always answers `None` (its users copy).
//! `try_send_with` starts with `tqfwd_ring_enqueue_zc_try_start`
//! (`shim.c`), which on an HTS ring reserves nothing rather than wait for
//! another producer's unfinished reservation: a stage holding a
//! reservation of another ring (scattering in place) never waits.
//! Every ring's consumer is single, so every ring lends on the dequeue side.

use super::error::DpdkError;
use super::mbuf::RawPacket;
use super::sys;
use crate::queue::{BurstReceiver, BurstSender, Plain, MAX_BURST};
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

static RING_SEQ: AtomicU32 = AtomicU32::new(0);

/// An `rte_ring` of mbuf handles; freed when the last handle drops (which
/// must happen before `rte_eal_cleanup`).
pub struct Ring<T: RingItem> {
    raw: *mut sys::rte_ring,
    /// The producer side is single or serialized (HTS): it can lend slots.
    lends: bool,
    _items: std::marker::PhantomData<T>,
}

// SAFETY: rte_ring is built for concurrent producers/consumers within the
// sync mode it was created with; `spsc`/`mpsc` give a single-producer ring
// exactly one sender and every ring exactly one receiver, and the handles
// are not Clone. A [`RingProbe`] only reads the ring's head and tail
// indices (`rte_ring_count`), which every thread may do at any time.
unsafe impl<T: RingItem> Send for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: RingItem> Sync for Ring<T> {}

impl<T: RingItem> Ring<T> {
    /// A single-producer, single-consumer ring holding exactly `depth`
    /// items on `socket`: its one sender and its one receiver.
    pub fn spsc(
        label: &str,
        depth: u32,
        socket: i32,
    ) -> Result<(RingSender<T>, RingReceiver<T>), DpdkError> {
        let ring = Self::create(label, depth, socket, Producers::Single)?;
        Ok((RingSender(ring.clone()), RingReceiver(ring)))
    }

    /// A multi-producer, single-consumer ring holding exactly `depth` items
    /// on `socket`: `producers` senders and its one receiver. `serialized`:
    /// HTS producers (one at a time: a reservation can be held while its
    /// slots are filled in place), else classic MP (lock-free, copies).
    pub fn mpsc(
        label: &str,
        depth: u32,
        socket: i32,
        producers: usize,
        serialized: bool,
    ) -> Result<(Vec<RingSender<T>>, RingReceiver<T>), DpdkError> {
        let mode = if serialized {
            Producers::Serialized
        } else {
            Producers::Multi
        };
        let ring = Self::create(label, depth, socket, mode)?;
        let senders = (0..producers).map(|_| RingSender(ring.clone())).collect();
        Ok((senders, RingReceiver(ring)))
    }

    /// `producers` selects the enqueue mode; dequeue is always SC. Private:
    /// the handles come from [`spsc`](Self::spsc) and [`mpsc`](Self::mpsc),
    /// so an SP ring never gets a second sender.
    fn create(
        label: &str,
        depth: u32,
        socket: i32,
        producers: Producers,
    ) -> Result<Arc<Ring<T>>, DpdkError> {
        let seq = RING_SEQ.fetch_add(1, Ordering::Relaxed);
        // RTE_RING_NAMESIZE is 29 bytes incl. NUL.
        let mut name = format!("tq{seq}_{label}");
        name.truncate(28);
        let cname = CString::new(name.clone()).expect("ring name has no NUL");
        let mut flags = sys::RING_F_SC_DEQ | sys::RING_F_EXACT_SZ;
        match producers {
            Producers::Single => flags |= sys::RING_F_SP_ENQ,
            Producers::Serialized => flags |= sys::RING_F_MP_HTS_ENQ,
            Producers::Multi => {}
        }
        // SAFETY: valid C name; esize is a multiple of 4 (RingItem);
        // returns NULL with rte_errno on failure.
        let raw = unsafe {
            sys::rte_ring_create_elem(
                cname.as_ptr(),
                std::mem::size_of::<T>() as u32,
                depth,
                socket,
                flags,
            )
        };
        if raw.is_null() {
            return Err(DpdkError::from_errno(format!(
                "rte_ring_create({name}, {depth} slots, socket {socket})"
            )));
        }
        Ok(Arc::new(Ring {
            raw,
            lends: producers != Producers::Multi,
            _items: std::marker::PhantomData,
        }))
    }
}

/// A ring's producer side (`rte_ring_create` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Producers {
    /// `RING_F_SP_ENQ`.
    Single,
    /// `RING_F_MP_HTS_ENQ`: several, one at a time.
    Serialized,
    /// Classic MP (no flag).
    Multi,
}

impl<T: RingItem> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: created by us, freed once, nobody holds a handle any more.
        unsafe { sys::rte_ring_free(self.raw) };
    }
}

/// Values an `rte_ring` can carry: plain data whose size is a non-zero
/// multiple of 4 bytes (`rte_ring_create_elem`'s rule), copied bit for bit;
/// the ring only hands back what a sender put in.
///
/// # Safety
/// Implementors must be `Copy`, carry no drop obligations of their own, and
/// have a size that is a non-zero multiple of 4.
pub unsafe trait RingItem: Copy + Send + 'static {}

// SAFETY: 8 bytes of plain data on 64-bit targets (checked below).
unsafe impl RingItem for u64 {}

const _: () = assert!(std::mem::size_of::<u64>() == std::mem::size_of::<*mut c_void>());
// SAFETY: 8 bytes of plain data (checked below), Copy, no Drop.
unsafe impl RingItem for RawPacket {}
const _: () = assert!(std::mem::size_of::<RawPacket>() == std::mem::size_of::<*mut c_void>());

/// An empty reservation, for the zero-copy calls to fill in.
fn zc_data() -> sys::rte_ring_zc_data {
    sys::rte_ring_zc_data {
        ptr1: std::ptr::null_mut(),
        ptr2: std::ptr::null_mut(),
        n1: 0,
    }
}

/// True when T goes through the classic pointer-sized ring calls.
const fn pointer_sized<T>() -> bool {
    std::mem::size_of::<T>() == std::mem::size_of::<*mut c_void>()
}

/// How full a ring is, read from any thread (monitoring). A handle like
/// the sender and receiver: the ring is freed when the last of them drops.
pub struct RingProbe<T: RingItem>(Arc<Ring<T>>);

impl<T: RingItem> RingProbe<T> {
    /// Items in the ring now (a snapshot).
    pub fn len(&self) -> usize {
        // SAFETY: the ring is alive while this handle is; rte_ring_count
        // only reads its producer and consumer indices.
        unsafe { sys::rte_ring_count(self.0.raw) as usize }
    }

    /// True when [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items the ring holds at most (its depth: `RING_F_EXACT_SZ`).
    pub fn capacity(&self) -> usize {
        // SAFETY: as in `len`; the capacity is fixed at creation.
        unsafe { sys::rte_ring_get_capacity(self.0.raw) as usize }
    }
}

impl<T: RingItem> RingReceiver<T> {
    /// A read-only view of how full the ring is, for another thread.
    pub fn probe(&self) -> RingProbe<T> {
        RingProbe(self.0.clone())
    }
}

/// The enqueue side of a ring: exactly one for a single-producer ring.
pub struct RingSender<T: RingItem>(Arc<Ring<T>>);
/// The dequeue side of a ring: exactly one per ring (SC).
pub struct RingReceiver<T: RingItem>(Arc<Ring<T>>);

impl<T: RingItem> BurstSender<T> for RingSender<T> {
    #[inline]
    fn send_burst(&mut self, items: &[T]) -> usize {
        // SAFETY: `items` is a slice of RingItem values of the ring's
        // element size; the ring copies the accepted prefix.
        unsafe {
            if pointer_sized::<T>() {
                sys::rte_ring_enqueue_burst(
                    self.0.raw,
                    items.as_ptr() as *const *mut c_void,
                    items.len() as u32,
                    std::ptr::null_mut(),
                ) as usize
            } else {
                sys::rte_ring_enqueue_burst_elem(
                    self.0.raw,
                    items.as_ptr() as *const c_void,
                    std::mem::size_of::<T>() as u32,
                    items.len() as u32,
                    std::ptr::null_mut(),
                ) as usize
            }
        }
    }

    #[inline]
    fn send_with(&mut self, max: usize, fill: &mut dyn FnMut(&mut [T]) -> usize) -> Option<usize>
    where
        T: Plain,
    {
        self.lend(max, fill, Start::Wait)
    }

    #[inline]
    fn try_send_with(
        &mut self,
        max: usize,
        fill: &mut dyn FnMut(&mut [T]) -> usize,
    ) -> Option<usize>
    where
        T: Plain,
    {
        self.lend(max, fill, Start::Try)
    }
}

/// How a zero-copy enqueue starts on a serialized (HTS) ring whose
/// previous reservation is not finished.
#[derive(Clone, Copy, PartialEq)]
enum Start {
    /// Waits for it (DPDK's own start).
    Wait,
    /// Reserves nothing (`tqfwd_ring_enqueue_zc_try_start`).
    Try,
}

impl<T: RingItem> RingSender<T> {
    /// `send_with` and `try_send_with`: reserves up to `max` slots, lends
    /// the run up to the wrap to `fill`, and finishes with what it wrote.
    #[inline(always)]
    fn lend(
        &mut self,
        max: usize,
        fill: &mut dyn FnMut(&mut [T]) -> usize,
        start: Start,
    ) -> Option<usize>
    where
        T: Plain,
    {
        if !self.0.lends {
            return None;
        }
        let want = max.min(MAX_BURST) as u32;
        if want == 0 {
            return Some(0);
        }
        let esize = std::mem::size_of::<T>() as u32;
        let mut zcd = zc_data();
        // SAFETY: a ring whose producer side is ours alone (SP: this is its
        // one sender) or serialized (HTS), as the zero-copy API requires;
        // either call reserves up to `want` slots and says where (the try
        // reserves none where the HTS ring is held).
        let got = unsafe {
            match start {
                Start::Wait => sys::rte_ring_enqueue_zc_burst_elem_start(
                    self.0.raw,
                    esize,
                    want,
                    &mut zcd,
                    std::ptr::null_mut(),
                ),
                Start::Try => {
                    sys::tqfwd_ring_enqueue_zc_try_start(self.0.raw, esize, want, &mut zcd)
                }
            }
        };
        if got == 0 {
            return None;
        }
        let run = (got.min(zcd.n1)) as usize;
        // SAFETY: `ptr1` points at `n1` reserved slots of the ring's element
        // size, ours until `finish`; any bit pattern is a T (`Plain`).
        let slots = unsafe { std::slice::from_raw_parts_mut(zcd.ptr1 as *mut T, run) };
        let n = fill(slots).min(run);
        // SAFETY: finishes our reservation with n <= what it reserved; the
        // first n slots hold what `fill` wrote.
        unsafe { sys::rte_ring_enqueue_zc_elem_finish(self.0.raw, n as u32) };
        Some(n)
    }
}

impl<T: RingItem> BurstReceiver<T> for RingReceiver<T> {
    #[inline]
    fn recv_burst(&mut self, out: &mut [T]) -> usize {
        // SAFETY: `out` has out.len() writable slots of the ring's element
        // size; the ring only ever holds T values enqueued by a
        // RingSender<T> (each ring is built for one item type), so what it
        // writes are valid T.
        unsafe {
            if pointer_sized::<T>() {
                sys::rte_ring_dequeue_burst(
                    self.0.raw,
                    out.as_mut_ptr() as *mut *mut c_void,
                    out.len() as u32,
                    std::ptr::null_mut(),
                ) as usize
            } else {
                sys::rte_ring_dequeue_burst_elem(
                    self.0.raw,
                    out.as_mut_ptr() as *mut c_void,
                    std::mem::size_of::<T>() as u32,
                    out.len() as u32,
                    std::ptr::null_mut(),
                ) as usize
            }
        }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        // SAFETY: valid ring.
        unsafe { sys::rte_ring_empty(self.0.raw) != 0 }
    }

    #[inline]
    fn recv_with(&mut self, max: usize, take: &mut dyn FnMut(&mut [T]) -> usize) -> usize
    where
        T: Plain,
    {
        let want = max.min(MAX_BURST) as u32;
        if want == 0 {
            return 0;
        }
        let esize = std::mem::size_of::<T>() as u32;
        let mut zcd = zc_data();
        // SAFETY: every ring's consumer side is single (SC) and this is its
        // one receiver, as the zero-copy API requires.
        let got = unsafe {
            sys::rte_ring_dequeue_zc_burst_elem_start(
                self.0.raw,
                esize,
                want,
                &mut zcd,
                std::ptr::null_mut(),
            )
        };
        if got == 0 {
            return 0;
        }
        let run = (got.min(zcd.n1)) as usize;
        // SAFETY: `ptr1` points at `n1` items a RingSender<T> enqueued, ours
        // until `finish`; whatever `take` writes is a T (`Plain`).
        let items = unsafe { std::slice::from_raw_parts_mut(zcd.ptr1 as *mut T, run) };
        let used = take(items).min(run);
        // SAFETY: finishes our reservation with used <= what it reserved:
        // the first `used` leave the ring, the rest stay first in line.
        unsafe { sys::rte_ring_dequeue_zc_elem_finish(self.0.raw, used as u32) };
        used
    }
}
