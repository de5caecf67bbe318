//! What the three stages (`rx.rs`, `worker.rs`, `tx.rs`) share, and the
//! rules they keep together. Each stage is a struct owned by one lcore,
//! polled from that lcore's loop; an lcore holding several roles polls
//! them in turn, so no stage ever blocks.
//!
//! Overload: a producer whose consumer (hand-off queue or port) refuses
//! keeps the packets and stops taking input until they fit, so the
//! pressure travels back to RX, which stops polling, and the excess stays
//! in the NIC (`imissed`), where dropping it costs no cycles. With
//! `--on-full wait` that is all; with `--on-full drop` a consumer that has
//! taken nothing for `--drop-after` is stalled and what it refuses is
//! dropped at once instead (see [`Hold`]), so one stalled worker or port
//! does not stop the others' traffic.
//!
//! Ownership: every mbuf a stage holds sits in one of its bursts; it
//! leaves by being handed on (queue or PMD) or freed and counted. Handles
//! are move-only (see `dpdk::mbuf`), so a stage moves each packet from its
//! input burst into exactly one bucket with [`Burst::push_or_free`]; a
//! bucket sized by the stage's own room checks never refuses, and if it
//! ever did, the packet is freed and counted under the stage's
//! hand-off drop reason, never lost silently.
//!
//! Cache lines: the mbuf header is read and written only on the lcore
//! that receives (and, in the default layout, transmits and frees) the
//! mbuf. What crosses cores is a [`Packet`] (handle + frame offset, length,
//! input port, sample mark) read at RX; workers touch only the frame, TX
//! groups by the packet's port.
//!
//! Modes: the plan settles each role's [`StageMode`](crate::config::StageMode)
//! once (`Plan::stage_modes`), each stage is built for it (`with_mode`),
//! and the lcore's loop is the one built for its stages' modes
//! (`forward::lcore_loop`, chosen when the lcore is wired): no stage tests
//! its mode while it polls.
//!
//! In place (`--handoff zero-copy`): where a stage's packets all go to one
//! queue, it works in the queues' own slots (`dpdk::packet_queue`): RX
//! receives into the worker queue, the worker moves packets slot to slot
//! into the TX queue, TX transmits from its queue's slots and leaves what
//! a port refuses there. Where a stage's packets go to several queues
//! (several workers or TX lcores, `--class`), it scatters them in place
//! (`dpdk::packet_queue::scatter`), and its TransferQueues coalesce (see
//! [`Coalescing`]).
//!
//! Round trip (`--handoff round-trip`, the default, where `Plan::round_trip`
//! holds: tq, one worker, no `--class`, the RX lcores are the TX lcores):
//! the worker processes each unit in place and hands it back to the RX
//! lcore that filled it, whose TX stage transmits from it (the RX stage's
//! sender, `RxStage::returns`); there is no worker→TX queue. A packet the
//! worker drops leaves an empty slot. The queue's depth bounds the whole
//! trip, so a port that refuses holds RX back directly.

use super::rate::{FullPolicy, Hold};
use crate::config::class::MAX_CLASSES;
use crate::counters::lcore::{bump, DropReason, LcoreCounters};
use crate::dpdk::{self, Burst, Packet, PacketInputs, PacketSender};
use std::sync::Arc;

/// What every stage of an lcore is built with, whatever its role.
#[derive(Clone)]
pub struct StageCommon {
    /// Packets per PMD call and per poll through bursts (`--burst`).
    pub burst: usize,
    /// Packets per hand-off batch (`--handoff-batch`, at least `burst`):
    /// a TransferQueue unit, and what an in-place stage takes per poll.
    pub unit: usize,
    /// What to do with packets a consumer refuses.
    pub policy: FullPolicy,
    /// The lcore's counters.
    pub counters: Arc<LcoreCounters>,
}

/// Where [`flush_buckets`] counts what it drops: the stage's counters,
/// under its hand-off drop reason and each bucket's application class
/// (`bucket_class[i]`, 0 = default).
pub(super) struct Drops<'a> {
    pub counters: &'a LcoreCounters,
    pub reason: DropReason,
    pub bucket_class: &'a [u8],
}

/// Polls a scattering stage may leave units open before it publishes
/// them whatever their fill ([`Coalescing`]).
pub const COALESCE_POLLS: u32 = 4;

/// A scattering stage's coalescing: its TransferQueues keep a unit open
/// across scatters (`dpdk::packet_queue::scatter`), so that a destination that
/// gets a fraction of each burst still gets whole units (one unit's
/// header, link and return per `--handoff-batch` packets, not per
/// scatter), and the stage publishes what is open at the end of every
/// poll that ran its input dry (a short receive, an empty input, a full
/// destination, a stop: the light-load case, where nothing waits longer
/// than without coalescing) and at least every [`COALESCE_POLLS`] polls
/// (overload: a unit that is not full waits at most that long). The
/// decision is one compare per poll, not per packet; an `rte_ring` has no
/// units and publishes every run.
#[derive(Default)]
pub(super) struct Coalescing {
    /// Polls since the open units were last published.
    polls: u32,
}

impl Coalescing {
    /// The end of a poll of a stage scattering through `senders`:
    /// publishes their open units when `drained` (the poll ran
    /// its input dry, or stopped short) or after [`COALESCE_POLLS`] polls.
    #[inline]
    pub(super) fn end_poll(&mut self, senders: &mut [PacketSender], drained: bool) {
        self.polls += 1;
        if drained || self.polls >= COALESCE_POLLS {
            self.polls = 0;
            for s in senders.iter_mut() {
                s.flush();
            }
        }
    }
}

/// Attempts at `rte_eth_tx_burst` for one batch before the rest is freed
/// and counted as `tx_full`.
pub const TX_RETRIES: u32 = 64;

/// With `--on-full wait`, how long shutdown waits for a stalled port to
/// take what the TX stage holds before freeing it as `tx_full`.
pub const TX_STALL_GIVE_UP_S: f64 = 1.0;

/// `--worker-cycles`: TSC cycles spun between two reads of the stop flag.
/// One load per chunk keeps the check off the spin's cost; a stop then
/// cuts a packet's work short within about a microsecond.
pub const SPIN_CHUNK: u64 = 4096;

/// Busy-loops `cycles` TSC cycles (synthetic per-packet work); false when a
/// stop was requested before or during the spin (the work is cut short).
#[inline]
pub(super) fn synthetic_work(cycles: u64) -> bool {
    let start = dpdk::rdtsc_inline();
    let mut check = start;
    loop {
        let now = dpdk::rdtsc_inline();
        let spent = now.wrapping_sub(start);
        if spent >= cycles {
            return true;
        }
        if now.wrapping_sub(check) >= SPIN_CHUNK {
            if crate::dpdk::signal::quit_requested() {
                return false;
            }
            check = now;
        }
        std::hint::spin_loop();
    }
}

/// Maps a 32-bit hash onto 0..n without a division (Lemire's reduction).
#[inline]
pub(super) fn reduce(hash: u32, n: u32) -> usize {
    ((hash as u64 * n as u64) >> 32) as usize
}

/// Hands every non-empty bucket to its sender. What a sender refuses
/// stays in its bucket (the caller then takes no input: back-pressure)
/// unless the bucket's [`Hold`] says to drop it: then it is freed and
/// counted as `drops` says. Returns false when something stayed.
#[inline]
pub(super) fn flush_buckets(
    buckets: &mut [Burst<Packet>],
    senders: &mut [PacketSender],
    holds: &mut [Hold],
    policy: FullPolicy,
    drops: Drops<'_>,
) -> bool {
    let Drops {
        counters,
        reason,
        bucket_class,
    } = drops;
    let mut all_sent = true;
    for (i, ((bucket, sender), hold)) in buckets
        .iter_mut()
        .zip(senders.iter_mut())
        .zip(holds.iter_mut())
        .enumerate()
    {
        if bucket.is_empty() {
            continue;
        }
        let n = sender.send(bucket);
        if n != 0 {
            hold.took();
        }
        if bucket.is_empty() {
            continue;
        }
        if hold.refused(policy, dpdk::rdtsc_inline) {
            counters.count_drop(reason, bucket.len() as u64);
            let class = bucket_class.get(i).copied().unwrap_or(0) as usize;
            bump(
                &counters.class_drops[class % (MAX_CLASSES + 1)],
                bucket.len() as u64,
            );
            bucket.free_all();
        } else {
            all_sent = false;
        }
    }
    all_sent
}

/// Fills `inbuf` with up to `burst` packets from `inputs`. When nothing
/// came, the upstream stage is done (read before receiving) and every input
/// is empty, sets `done`: nothing can arrive any more.
#[inline]
pub(super) fn receive(
    inputs: &mut PacketInputs,
    inbuf: &mut Burst<Packet>,
    burst: usize,
    upstream_done: bool,
    done: &mut bool,
) -> usize {
    let n = inputs.recv(inbuf, burst);
    if n == 0 && upstream_done && inputs.is_empty() {
        *done = true;
    }
    n
}
