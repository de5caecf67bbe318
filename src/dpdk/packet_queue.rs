//! Hand-off queues for [`Packet`]s: a sender and a receiver that move
//! packets out of and into a [`Burst`], over either backend (TransferQueue
//! or `rte_ring`).
//!
//! The queues carry a packet's raw, `Copy` form (`RawPacket`, private to
//! `dpdk`). That is sound because this module builds both ends of every
//! packet queue at once ([`tq_channel`], [`ring_spsc`], [`ring_mpsc`]) and
//! hands out only the wrappers: no safe code holds a raw end, so every
//! item a [`PacketReceiver`] yields was put in by a [`PacketSender`] of the
//! same queue, which took it out of its burst (the burst forgets it), and
//! the queue returns each item once. A handle therefore has exactly one
//! owner on either side of the queue.
//!
//! Zero-copy hand-off ([`PacketSender::receive_from`],
//! [`PacketInputs::forward_into`], [`PacketInputs::transmit`]): the queues
//! lend their own slots (`queue::BurstSender::send_with`,
//! `queue::BurstReceiver::recv_with`), so the RX stage writes its packets
//! straight into a transfer unit (or ring slots; the PMD's burst lands in
//! an array on the RX lcore's stack first), a worker moves packets from its input's
//! slots into its output's (gathered on its own lcore first), and a PMD
//! transmits the slots' mbufs (copied out on the TX lcore, so a lent slot
//! is only read). The same ownership rule holds: a slot's packet has one owner at a
//! time (the queue, or the code the slot is lent to, which consumes a
//! prefix and leaves the rest as valid packets).
//!
//! Round trip ([`tq_channel`] with `round_trip`): the worker processes a unit's packets
//! where they lie ([`PacketInputs::process_in_place`]) and the unit goes
//! back to the RX sender it came from, whose lcore transmits from it
//! ([`PacketInputs::transmit_returned`]). A packet the worker frees leaves
//! its slot empty ([`RawPacket::EMPTY`], never a packet's word), which TX
//! passes over, so every slot still holds one owner's packet or nothing.

use super::error::DpdkError;
use super::mbuf::{prefetch_write, Burst, MbufPtr, Packet, RawForm, RawMbuf, RawPacket, Sampling};
use super::port::{RxQueue, TxQueue};
use super::ring::{Ring, RingProbe};
use super::sys;
use crate::queue::{self, BurstReceiver, BurstSender, QueueError, RoundRobin, UnitMemory};
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;

/// A worker's work on the runs its input queues lend it
/// ([`PacketInputs::forward_into`], [`PacketInputs::process_in_place`],
/// [`PacketInputs::scatter_into`]): [`begin`](Self::begin) sees a run's
/// packets first, all of them, read-only (for work done per run, such as
/// one bulk route lookup), then [`each`](Self::each) sees them one by
/// one, in the same order, to change and keep (`Some(destination)`: an
/// index into the scatter's outputs, ignored by the other passes) or
/// drop (`None`: freed by the pass). `each` may see only a prefix of what
/// `begin` saw (the output had room for fewer); the rest is lent again,
/// and begun again, later.
pub trait RunWork {
    fn begin(&mut self, run: &[Packet]);
    fn each(&mut self, p: &mut Packet) -> Option<usize>;
}

/// The lent slots of a run as packets, to show them to
/// [`RunWork::begin`].
#[inline(always)]
fn as_packets(slots: &[RawPacket]) -> &[Packet] {
    // SAFETY: Packet is repr(transparent) over RawPacket, and every slot
    // of a lent run holds a live packet (a round trip never lends an
    // empty slot to its consumer); the shared borrow lets nobody move a
    // packet out or replace one while it lasts.
    unsafe { std::slice::from_raw_parts(slots.as_ptr() as *const Packet, slots.len()) }
}

/// The sending end of a packet queue.
pub struct PacketSender(Box<dyn BurstSender<RawPacket>>);

/// The receiving end of a packet queue.
pub struct PacketReceiver(Box<dyn BurstReceiver<RawPacket>>);

impl PacketSender {
    /// Moves a prefix of `burst` into the queue (as much as fits); returns
    /// how many packets it took. The rest stay in `burst`.
    #[inline]
    pub fn send(&mut self, burst: &mut Burst<Packet>) -> usize {
        let n = self.0.send_burst(burst.raw_slice()).min(burst.len());
        // The queue now owns the first n packets.
        burst.consume_front(n);
        n
    }

    /// Zero-copy RX: receives up to `max` frames from `queue`
    /// straight into the queue's free slots (one run: a transfer unit, or
    /// ring slots up to the wrap), `burst` per `rte_eth_rx_burst` for as
    /// long as the port fills them (a short burst: its queue is drained,
    /// and what came goes on at once), and publishes them as packets; with
    /// `sampling` (`--latency`), its samples among them are stamped with
    /// the time `now()` gives (asked only when there is one). Each
    /// non-empty burst the port returns is shown to `tap` first (`--capture` reads the
    /// frames there, while this lcore owns them). `None` when the queue
    /// has no room: nothing is received, the frames stay in the NIC.
    #[inline]
    pub fn receive_from(
        &mut self,
        queue: &mut RxQueue,
        max: usize,
        burst: usize,
        mut sampling: Option<&mut Sampling>,
        mut now: impl FnMut() -> u64,
        mut tap: impl FnMut(&[MbufPtr]),
    ) -> Option<usize> {
        let burst = burst.clamp(1, queue::MAX_BURST);
        let port = queue.port_id();
        self.0.send_with(max, &mut |slots: &mut [RawPacket]| {
            // A local copy: read through the capture, the port would be
            // loaded again for every packet (the slot stores may alias it).
            let rx_port = port;
            // The slots were last read on the consumer's core: ask for all
            // their lines at once, and let the PMD write its burst into an
            // array on this lcore's stack (as testpmd's is), so that its
            // mbuf stores do not queue behind the slots' ownership trips.
            prefetch_write_lines(slots);
            let mut local = MaybeUninit::<[*mut sys::rte_mbuf; queue::MAX_BURST]>::uninit();
            let local = local.as_mut_ptr() as *mut *mut sys::rte_mbuf;
            let mut n = 0;
            while n < slots.len() {
                let want = (slots.len() - n).min(burst);
                // SAFETY: `local` has room for MAX_BURST >= `want` mbuf
                // addresses; the PMD writes the first `got`.
                let got = unsafe { queue.rx_burst_raw(local, want as u16) };
                if got != 0 {
                    // SAFETY: the first `got` entries are live, non-null
                    // mbuf addresses this lcore owns (above); `MbufPtr` is
                    // a transparent non-null mbuf address, and the view is
                    // only read while they are still in `local`.
                    tap(unsafe { std::slice::from_raw_parts(local as *const MbufPtr, got) });
                }
                for (k, slot) in slots[n..n + got].iter_mut().enumerate() {
                    // SAFETY: entry k < got was written by the PMD: a live
                    // mbuf's (non-null) address, owned by nobody else; this
                    // handle is its one owner, and it goes into the slot.
                    let m = unsafe {
                        MbufPtr::from_raw(RawMbuf(NonNull::new_unchecked(*local.add(k))))
                    };
                    *slot = Packet::from_rx(m, rx_port).into_raw();
                }
                n += got;
                if got < want {
                    break;
                }
            }
            if let Some(s) = sampling.as_deref_mut() {
                let (mut i, step) = s.next(n);
                let t = if i < n { now() } else { 0 };
                while i < n {
                    // SAFETY: the slot's packet, received above and still
                    // ours (lent slots); it goes back into the slot.
                    let mut p = unsafe { Packet::from_raw(slots[i]) };
                    p.stamp(s.field(), t);
                    slots[i] = p.into_raw();
                    i += step;
                }
            }
            n
        })
    }
}

impl PacketSender {
    /// Round trip: packets sent and not yet taken back (0 for a queue
    /// whose packets never come back).
    pub fn outstanding(&self) -> usize {
        self.0.outstanding()
    }

    /// Publishes the unit a scatter left open (`queue::Producer::send_coalesced`,
    /// `scatter`); returns how many packets it held (0: none open, or a
    /// queue that does not coalesce).
    #[inline]
    pub fn flush(&mut self) -> usize {
        self.0.flush()
    }
}

impl PacketReceiver {
    /// Moves up to `max` packets from the queue to the end of `burst`
    /// (fewer when it has less room); returns how many.
    #[inline]
    pub fn recv(&mut self, burst: &mut Burst<Packet>, max: usize) -> usize {
        let q = &mut self.0;
        burst.fill_with(max, |out| q.recv_burst(out))
    }

    /// Snapshot: nothing waiting right now.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A consumer's input queues, polled round-robin (one input later each
/// call, so no producer is starved), and the lcore's scratch run for the
/// zero-copy passes.
pub struct PacketInputs(RoundRobin<PacketReceiver>, Box<Scratch>);

pub mod scatter;

/// Where a zero-copy pass gathers what it takes out of a lent run (kept
/// packets, bare mbufs for the PMD), so that the input's slots are only
/// read: they are lines the producer's core wrote, and a store to one
/// costs it a second cross-core trip (the line is shared after the read)
/// and the producer a dirty line to fetch back when it refills the unit.
/// A run is at most a burst (`MAX_BURST`). The scatter pass also keeps
/// each gathered packet's destination there.
struct Scratch([RawPacket; queue::MAX_BURST], [u8; queue::MAX_BURST]);

impl PacketInputs {
    pub fn new(inputs: Vec<PacketReceiver>) -> Self {
        PacketInputs(
            RoundRobin::new(inputs),
            Box::new(Scratch(
                [RawPacket::EMPTY; queue::MAX_BURST],
                [0; queue::MAX_BURST],
            )),
        )
    }

    /// Moves up to `max` packets from the inputs to the end of `burst`;
    /// returns how many.
    #[inline]
    pub fn recv(&mut self, burst: &mut Burst<Packet>, max: usize) -> usize {
        let max = max.min(burst.room());
        self.0.take(max, |r, got| r.recv(burst, max - got))
    }

    /// True when every input is empty (per-input snapshots).
    pub fn is_empty(&self) -> bool {
        self.0.inputs().iter().all(|r| r.is_empty())
    }

    /// Zero-copy worker pass: the next run of waiting packets (one input,
    /// up to `max`) goes through `work` ([`RunWork`]: the part `out` has
    /// room for is begun, then each packet, in order), and those it keeps move
    /// straight into `out`'s free slots (one copy, no staging burst); those
    /// it does not keep are freed. Where `out` has room for fewer, only
    /// that many are taken. Where it has none, `refused()` decides: true
    /// frees the whole run without showing it to `each` (counted by the
    /// caller as `taken - kept - rejected`), false leaves it in the input.
    /// Returns (taken from the input, moved to `out`, rejected by `each`).
    #[inline]
    pub fn forward_into(
        &mut self,
        out: &mut PacketSender,
        max: usize,
        work: &mut impl RunWork,
        mut refused: impl FnMut() -> bool,
    ) -> (usize, usize, usize) {
        let (mut kept, mut rejected) = (0, 0);
        let gathered = &mut self.1 .0;
        let max = max.min(gathered.len());
        let taken = self.0.first(|input| {
            input.0.recv_with(max, &mut |src: &mut [RawPacket]| {
                // The frames may be cold: ask for all of them before
                // touching the first (the word says where each starts).
                for &raw in src.iter() {
                    // SAFETY: a view of a lent packet, to prefetch its
                    // frame; the slot keeps it.
                    unsafe { Packet::from_raw(raw) }.prefetch_data();
                }
                let mut consumed = 0;
                let sent = out.0.send_with(src.len(), &mut |dst: &mut [RawPacket]| {
                    consumed = dst.len().min(src.len());
                    work.begin(as_packets(&src[..consumed]));
                    // Kept packets are gathered in the scratch run (not in
                    // `src`: see `Scratch`), then copied out in one go:
                    // stores to `dst`, lines the consumer read last, would
                    // each wait for their line and hold up the frame writes
                    // queued behind them.
                    let mut j = 0;
                    for &raw in &src[..consumed] {
                        // SAFETY: a packet the input lent us; it is consumed
                        // (kept in the scratch run, then moved to `dst`, or
                        // freed) and the input forgets it.
                        let mut p = unsafe { Packet::from_raw(raw) };
                        if work.each(&mut p).is_some() {
                            gathered[j] = p.into_raw();
                            j += 1;
                        } else {
                            free_packet(p);
                        }
                    }
                    dst[..j].copy_from_slice(&gathered[..j]);
                    j
                });
                match sent {
                    Some(j) => {
                        kept = j;
                        rejected = consumed - j;
                    }
                    None if refused() => {
                        // SAFETY: the lent packets, consumed here (the
                        // input forgets them).
                        unsafe { Packet::free_bulk(src) };
                        consumed = src.len();
                    }
                    None => {}
                }
                consumed
            })
        });
        (taken, kept, rejected)
    }

    /// Zero-copy TX: the next run of waiting packets (one input, up to
    /// `max`) that share an input port (so one output port) has its
    /// latency samples shown to `sample`, is copied out as bare mbufs into
    /// the scratch run (the slots are only read, see `Scratch`), and lent to
    /// `tx(input port, run)`, which hands a prefix to the PMD
    /// ([`TxRun::tx_burst`]) or frees it ([`TxRun::free_rest`]). What the run
    /// still holds then stays in the input, first in line, as the packets
    /// its slots still hold (no longer marked as samples: `sample` has seen
    /// them). Returns how many left the input (sent or freed).
    #[inline]
    pub fn transmit(
        &mut self,
        max: usize,
        mut sample: impl FnMut(&Packet),
        mut tx: impl FnMut(u16, &mut TxRun<'_>),
    ) -> usize {
        let mbufs = &mut self.1 .0;
        let max = max.min(mbufs.len());
        self.0.first(|input| {
            input.0.recv_with(max, &mut |slots: &mut [RawPacket]| {
                transmit_slots(mbufs, slots, &mut sample, &mut tx).0
            })
        })
    }

    /// Round trip (see [`tq_channel`]): as [`transmit`](Self::transmit),
    /// from the packets the worker handed back to `from` (this lcore's RX
    /// sender), oldest first; the slots of packets the worker freed are
    /// passed over. Returns (slots that left the queue, packets among them
    /// sent or freed).
    #[inline]
    pub fn transmit_returned(
        &mut self,
        from: &mut PacketSender,
        max: usize,
        mut sample: impl FnMut(&Packet),
        mut tx: impl FnMut(u16, &mut TxRun<'_>),
    ) -> (usize, usize) {
        let mbufs = &mut self.1 .0;
        let max = max.min(mbufs.len());
        let mut packets = 0;
        let slots = from.0.take_back_with(max, &mut |slots: &mut [RawPacket]| {
            let (left, sent) = transmit_slots(mbufs, slots, &mut sample, &mut tx);
            packets = sent;
            left
        });
        (slots, packets)
    }

    /// Round trip, the worker's pass: the next run of waiting packets (one
    /// input, up to `max`) goes through `work` ([`RunWork`]), in order, where it lies:
    /// those it keeps stay in their slots (a slot is written only if
    /// `each` changed its packet's word), those it does not keep are freed
    /// and their slots emptied; the whole run then goes back to the RX
    /// lcore that sent it. Returns (taken, rejected by `each`).
    #[inline]
    pub fn process_in_place(&mut self, max: usize, work: &mut impl RunWork) -> (usize, usize) {
        let mut rejected = 0;
        let taken = self.0.first(|input| {
            input.0.recv_with(max, &mut |slots: &mut [RawPacket]| {
                for &raw in slots.iter() {
                    // SAFETY: a view of a lent packet, to prefetch its
                    // frame; the slot keeps it.
                    unsafe { Packet::from_raw(raw) }.prefetch_data();
                }
                work.begin(as_packets(slots));
                for slot in slots.iter_mut() {
                    // SAFETY: a packet the input lent us (a round trip
                    // never lends an empty slot to its consumer): it goes
                    // back into the slot, or is freed and the slot emptied,
                    // so it has one owner either way.
                    let mut p = unsafe { Packet::from_raw(*slot) };
                    if work.each(&mut p).is_some() {
                        let raw = p.into_raw();
                        if raw != *slot {
                            *slot = raw;
                        }
                    } else {
                        free_packet(p);
                        *slot = RawPacket::EMPTY;
                        rejected += 1;
                    }
                }
                slots.len()
            })
        });
        (taken, rejected)
    }
}

// A run's sample indices are bytes (`transmit_slots`).
const _: () = assert!(queue::MAX_BURST <= 256);

/// The TX pass over lent `slots` ([`PacketInputs::transmit`],
/// [`PacketInputs::transmit_returned`]): leading empty slots (packets a
/// worker freed, round trip only) are passed over; then the run of packets
/// bound for one port is gathered in `mbufs`, its latency samples are
/// shown to `sample`, and it is lent to `tx`. Returns (slots that left,
/// packets among them sent or freed); what is left stays in the slots.
#[inline(always)]
fn transmit_slots(
    mbufs: &mut [RawPacket; queue::MAX_BURST],
    slots: &mut [RawPacket],
    sample: &mut impl FnMut(&Packet),
    tx: &mut impl FnMut(u16, &mut TxRun<'_>),
) -> (usize, usize) {
    let skip = slots.iter().take_while(|r| **r == RawPacket::EMPTY).count();
    let slots = &mut slots[skip..];
    if slots.is_empty() {
        return (skip, 0);
    }
    // SAFETY: a view of the first lent packet, to read its port: the slot
    // keeps it (handles have no destructor).
    let port = unsafe { Packet::from_raw(slots[0]) }.port();
    // Where the run's latency samples are (their stamps are read once the
    // whole run's headers have been asked for): one byte per sampled
    // packet. RX marks one packet in `--latency-sample`, at a fixed
    // stride, so the branch is predicted; a byte stored for every packet
    // would take a store-buffer slot per packet.
    let mut samples = MaybeUninit::<[u8; queue::MAX_BURST]>::uninit();
    let samples = samples.as_mut_ptr() as *mut u8;
    let mut n_samples = 0;
    let mut run = 0;
    for &raw in slots.iter().take(queue::MAX_BURST) {
        if raw == RawPacket::EMPTY {
            break;
        }
        // SAFETY: a view of a lent packet: the slot keeps it (a different
        // port: the run ends) while the run holds its bare mbuf, until the
        // run says it left.
        let p = unsafe { Packet::from_raw(raw) };
        if p.port() != port {
            break;
        }
        // The PMD reads the header to free the mbuf once sent; RX last
        // touched it a queue's worth of packets ago.
        p.prefetch_header();
        if p.is_sampled() {
            // SAFETY: n_samples <= run < MAX_BURST (the loop takes at
            // most MAX_BURST slots): inside the array.
            unsafe { samples.add(n_samples).write(run as u8) };
            n_samples += 1;
        }
        mbufs[run] = RawPacket(p.into_mbuf().into_raw().0.as_ptr() as u64);
        run += 1;
    }
    for k in 0..n_samples {
        // SAFETY: entries below n_samples were written above, each the
        // index (< run) of a sampled packet of this run.
        let i = usize::from(unsafe { samples.add(k).read() });
        // SAFETY: a view of a packet slot i still holds (the run has not
        // been lent to `tx` yet).
        sample(&unsafe { Packet::from_raw(slots[i]) });
    }
    let mut r = TxRun {
        mbufs: &mut mbufs[..run],
        done: 0,
    };
    tx(port, &mut r);
    let done = r.done;
    // Not sent, not freed: still the slots' packets (the run's copies are
    // forgotten); a sample has been recorded.
    for raw in &mut slots[done..run] {
        // SAFETY: a view of a packet the slot still holds.
        let mut p = unsafe { Packet::from_raw(*raw) };
        if p.is_sampled() {
            p.clear_sampled();
            *raw = p.into_raw();
        }
    }
    (skip + done, done)
}

/// Asks for every line of `slots` in exclusive state, all at once: a
/// free unit's slots were last read by the consumer's core, so each line
/// needs an ownership trip before a store can land.
#[inline(always)]
fn prefetch_write_lines(slots: &[RawPacket]) {
    let start = slots.as_ptr() as usize & !63;
    let end = slots.as_ptr_range().end as usize;
    let mut line = start;
    while line < end {
        prefetch_write(line as *const u8);
        line += 64;
    }
}

/// Frees one packet (a worker's reject: rare, so one call each).
#[inline]
fn free_packet(p: Packet) {
    let mut raw = p.into_raw();
    // SAFETY: the raw form of a live packet nobody else holds (into_raw
    // consumed it).
    unsafe { Packet::free_bulk(std::slice::from_mut(&mut raw)) };
}

/// Bare mbufs lent by [`PacketInputs::transmit`], all bound for one output
/// port; the first `done` have left (sent or freed).
pub struct TxRun<'a> {
    /// Live mbuf addresses (as `u64`), owned by the run from `done` on.
    mbufs: &'a mut [RawPacket],
    done: usize,
}

impl TxRun<'_> {
    /// Mbufs still held.
    #[inline]
    pub fn len(&self) -> usize {
        self.mbufs.len() - self.done
    }

    /// True when every mbuf has left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Transmits up to `max` of what the run holds on `queue` (one
    /// `rte_eth_tx_burst`); returns how many the PMD took (they leave the
    /// run).
    #[inline]
    pub fn tx_burst(&mut self, queue: &mut TxQueue, max: usize) -> usize {
        let n = self.len().min(max).min(u16::MAX as usize) as u16;
        if n == 0 {
            return 0;
        }
        // SAFETY: slots `done..` hold live mbufs the run owns (RawPacket is
        // one u64, as an `rte_mbuf *`); the PMD takes the first `sent`,
        // which the run then forgets.
        let sent = unsafe {
            queue.tx_burst_raw(
                self.mbufs[self.done..].as_mut_ptr() as *mut *mut sys::rte_mbuf,
                n,
            )
        };
        self.done += sent;
        sent
    }

    /// Frees what the run holds; returns how many.
    #[inline]
    pub fn free_rest(&mut self) -> usize {
        let rest = &mut self.mbufs[self.done..];
        let n = rest.len();
        if n != 0 {
            // SAFETY: live mbufs the run owns (bare addresses, as
            // `rte_pktmbuf_free_bulk` takes them), forgotten after.
            unsafe {
                sys::rte_pktmbuf_free_bulk(rest.as_mut_ptr() as *mut *mut sys::rte_mbuf, n as u32)
            };
        }
        self.done += n;
        n
    }
}

/// How full one packet queue is, for a monitoring thread: packets in it
/// now and at most (either backend). Reads only what the queue's two
/// sides already share or keep for it, never a packet; it holds the queue's
/// memory like the queue's own handles do, so it cannot outlive it (drop
/// it before EAL is cleaned up, as those).
#[derive(Clone)]
pub struct QueueProbe(Arc<dyn Occupancy>);

impl QueueProbe {
    /// Packets in the queue (a snapshot; for a TransferQueue, a partly
    /// read unit counts whole, as for its budget).
    pub fn packets(&self) -> usize {
        self.0.packets()
    }

    /// Packets the queue holds at most.
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }
}

trait Occupancy: Send + Sync {
    fn packets(&self) -> usize;
    fn capacity(&self) -> usize;
}

impl Occupancy for queue::Probe<RawPacket> {
    fn packets(&self) -> usize {
        self.len()
    }
    fn capacity(&self) -> usize {
        queue::Probe::capacity(self)
    }
}

impl Occupancy for RingProbe<RawPacket> {
    fn packets(&self) -> usize {
        self.len()
    }
    fn capacity(&self) -> usize {
        RingProbe::capacity(self)
    }
}

/// A TransferQueue for packets: `producers` senders, its receiver and a
/// probe (parameters as for [`queue::channel`]). `round_trip`: a
/// round-trip queue (`queue::round_trip`), whose receiver's packets go back
/// to the sender they came from once processed
/// ([`PacketInputs::process_in_place`]), which transmits them
/// ([`PacketInputs::transmit_returned`]).
pub fn tq_channel(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: Arc<dyn UnitMemory>,
    round_trip: bool,
) -> Result<(Vec<PacketSender>, PacketReceiver, QueueProbe), QueueError> {
    let (prods, cons) = if round_trip {
        queue::round_trip::<RawPacket>(producers, depth, burst, mem)?
    } else {
        queue::channel::<RawPacket>(producers, depth, burst, mem)?
    };
    let probe = QueueProbe(Arc::new(cons.probe()));
    Ok((
        prods
            .into_iter()
            .map(|p| PacketSender(Box::new(p)))
            .collect(),
        PacketReceiver(Box::new(cons)),
        probe,
    ))
}

/// A single-producer `rte_ring` for packets (see [`Ring::spsc`]), and a
/// probe.
pub fn ring_spsc(
    label: &str,
    depth: u32,
    socket: i32,
) -> Result<(PacketSender, PacketReceiver, QueueProbe), DpdkError> {
    let (tx, rx) = Ring::<RawPacket>::spsc(label, depth, socket)?;
    let probe = QueueProbe(Arc::new(rx.probe()));
    Ok((
        PacketSender(Box::new(tx)),
        PacketReceiver(Box::new(rx)),
        probe,
    ))
}

/// A multi-producer `rte_ring` for packets (see [`Ring::mpsc`];
/// `serialized`: HTS producers, which can receive in place), and a probe.
pub fn ring_mpsc(
    label: &str,
    depth: u32,
    socket: i32,
    producers: usize,
    serialized: bool,
) -> Result<(Vec<PacketSender>, PacketReceiver, QueueProbe), DpdkError> {
    let (txs, rx) = Ring::<RawPacket>::mpsc(label, depth, socket, producers, serialized)?;
    let probe = QueueProbe(Arc::new(rx.probe()));
    Ok((
        txs.into_iter().map(|t| PacketSender(Box::new(t))).collect(),
        PacketReceiver(Box::new(rx)),
        probe,
    ))
}
