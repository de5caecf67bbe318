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

use super::error::DpdkError;
use super::mbuf::{Burst, Packet, RawPacket};
use super::ring::{Ring, RingProbe};
use crate::queue::{self, BurstReceiver, BurstSender, QueueError, RoundRobin, UnitMemory};
use std::sync::Arc;

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
/// call, so no producer is starved).
pub struct PacketInputs(RoundRobin<PacketReceiver>);

impl PacketInputs {
    pub fn new(inputs: Vec<PacketReceiver>) -> Self {
        PacketInputs(RoundRobin::new(inputs))
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
/// probe (parameters as for [`queue::channel`]).
pub fn tq_channel(
    producers: usize,
    depth: usize,
    burst: usize,
    mem: Arc<dyn UnitMemory>,
) -> Result<(Vec<PacketSender>, PacketReceiver, QueueProbe), QueueError> {
    let (prods, cons) = queue::channel::<RawPacket>(producers, depth, burst, mem)?;
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

/// A multi-producer `rte_ring` for packets (see [`Ring::mpsc`]), and a
/// probe.
pub fn ring_mpsc(
    label: &str,
    depth: u32,
    socket: i32,
    producers: usize,
) -> Result<(Vec<PacketSender>, PacketReceiver, QueueProbe), DpdkError> {
    let (txs, rx) = Ring::<RawPacket>::mpsc(label, depth, socket, producers)?;
    let probe = QueueProbe(Arc::new(rx.probe()));
    Ok((
        txs.into_iter().map(|t| PacketSender(Box::new(t))).collect(),
        PacketReceiver(Box::new(rx)),
        probe,
    ))
}
