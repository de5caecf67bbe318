//! The three stages. Each is a struct owned by one lcore, polled from that
//! lcore's loop; an lcore holding several roles polls them in turn, so no
//! stage ever blocks.
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
//! Zero-copy (`--handoff zero-copy`, each stage's `with_zero_copy`): where
//! a stage's packets all go to one queue, it works in the queues' own slots
//! (`dpdk::packet_queue`): RX receives into the worker queue, the worker
//! moves packets slot to slot into the TX queue, TX transmits from its
//! queue's slots and leaves what a port refuses there. Elsewhere (several
//! workers or TX lcores, `--class`, `--capture` running) the stage uses its
//! bursts, as with `--handoff copy`.

use super::capture::Taps;
use super::lifecycle::PortGates;
use super::rate::{FullPolicy, Hold, TokenBucket};
use crate::config::class::WorkerRange;
use crate::dpdk::{self, Burst, MbufBurst, Packet, Port, U64Field};
use crate::report::latency::{Histogram, HistogramSlot};
use crate::report::stats::{
    bump, DropReason, LcoreCounters, IN_PLACE_RX, IN_PLACE_TX, IN_PLACE_WORKER, MAX_APP_CLASSES,
    MAX_PORTS,
};
use crate::setup::handoff::{InputSet, Sender};
use crate::wire::flow::{flow_key, FlowMatch};
use crate::wire::{self, FrameClass};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

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
fn synthetic_work(cycles: u64) -> bool {
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
fn reduce(hash: u32, n: u32) -> usize {
    ((hash as u64 * n as u64) >> 32) as usize
}

/// Hands every non-empty bucket to its sender. What a sender refuses
/// stays in its bucket (the caller then takes no input: back-pressure)
/// unless the bucket's [`Hold`] says to drop it: then it is freed and
/// counted under `reason` (and the bucket's application class,
/// `bucket_class[i]`, 0 = default). Returns false when something stayed.
#[inline]
#[allow(clippy::too_many_arguments)]
fn flush_buckets(
    buckets: &mut [Burst<Packet>],
    senders: &mut [Sender],
    holds: &mut [Hold],
    policy: FullPolicy,
    counters: &LcoreCounters,
    reason: DropReason,
    bucket_class: &[u8],
) -> bool {
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
                &counters.class_drops[class % (MAX_APP_CLASSES + 1)],
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
fn receive(
    inputs: &mut InputSet,
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

// ---- RX ----------------------------------------------------------------

/// One RX queue an RX stage polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxQueue {
    pub port: Port,
    pub queue: u16,
    /// 0: a normal queue; k: class k's dedicated (rte_flow) queue.
    pub class: u8,
}

/// Polls one RX queue on every port and spreads packets over the workers by
/// flow (RSS hash when the NIC gave one, else a 5-tuple hash), so a flow
/// always takes one worker and keeps its order.
pub struct RxStage {
    queues: Vec<RxQueue>,
    /// Application classes (`--class`), in order; empty = no classes.
    classes: Vec<FlowMatch>,
    /// Worker index range per class, index 0 = default.
    class_workers: Vec<WorkerRange>,
    /// Class of each worker bucket.
    bucket_class: Vec<u8>,
    senders: Vec<Sender>,
    buckets: Vec<Burst<Packet>>,
    /// Hold state per worker bucket (`--on-full drop`).
    holds: Vec<Hold>,
    rx: MbufBurst,
    burst: usize,
    policy: FullPolicy,
    /// `--rx-rate`: packets per second taken from the ports.
    rate: Option<TokenBucket>,
    n_workers: u32,
    counters: Arc<LcoreCounters>,
    /// `--latency`: the RX-timestamp field, 1-in-N sampling, and the count
    /// since the last sampled packet.
    stamp: Option<(U64Field, u32)>,
    since_sample: u32,
    first_queue: usize,
    /// Which ports may be polled now (port lifecycle).
    gates: Arc<PortGates>,
    /// `--capture`: the taps of the captured ports (None: capture off or
    /// done).
    capture: Option<Box<Taps>>,
    /// `--handoff zero-copy` with one worker and no `--class`: each queue's
    /// frames are received straight into the worker queue's slots.
    zero_copy: bool,
    started: bool,
    pub done: bool,
}

impl RxStage {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        queues: Vec<RxQueue>,
        senders: Vec<Sender>,
        burst: usize,
        policy: FullPolicy,
        rate: Option<TokenBucket>,
        stamp: Option<(U64Field, u32)>,
        classes: Vec<FlowMatch>,
        class_workers: Vec<WorkerRange>,
        gates: Arc<PortGates>,
        counters: Arc<LcoreCounters>,
    ) -> Self {
        let n_workers = senders.len() as u32;
        let mut bucket_class = vec![0u8; senders.len()];
        for (k, r) in class_workers.iter().enumerate() {
            for w in r.start..r.start + r.count {
                if let Some(b) = bucket_class.get_mut(w as usize) {
                    *b = k as u8;
                }
            }
        }
        RxStage {
            classes,
            class_workers,
            bucket_class,
            stamp,
            since_sample: 0,
            first_queue: 0,
            gates,
            queues,
            buckets: (0..senders.len()).map(|_| Burst::new()).collect(),
            holds: vec![Hold::default(); senders.len()],
            senders,
            rx: MbufBurst::new(),
            burst,
            policy,
            rate,
            n_workers,
            counters,
            capture: None,
            zero_copy: false,
            started: false,
            done: false,
        }
    }

    /// Receives in place (`--handoff zero-copy`) where every packet goes to
    /// one worker: one sender and no classes. While `--capture` copies
    /// frames, the stage receives through its burst (the taps read it).
    pub fn with_zero_copy(mut self, zero_copy: bool) -> Self {
        self.zero_copy = zero_copy && self.senders.len() == 1 && self.classes.is_empty();
        if self.zero_copy {
            self.counters.in_place.fetch_or(IN_PLACE_RX, Relaxed);
        }
        self
    }

    /// Zero-copy RX of one queue (see `packet_queue::PacketSender::receive_from`):
    /// `None` when the worker's queue has no room (nothing received).
    #[inline]
    fn receive_in_place(
        &mut self,
        port: Port,
        queue: u16,
        max: usize,
        now: &mut u64,
    ) -> Option<usize> {
        let stamp = self.stamp;
        let since_sample = &mut self.since_sample;
        self.senders[0].receive_from(port, queue, max, |m| {
            let Some((field, sample)) = stamp else {
                return false;
            };
            // Only samples carry a stamp.
            *since_sample += 1;
            if *since_sample < sample {
                return false;
            }
            *since_sample = 0;
            if *now == 0 {
                *now = dpdk::rdtsc_inline();
            }
            m.set_field(field, *now);
            true
        })
    }

    /// Copies the first frames of some ports for `--capture`.
    pub fn with_capture(mut self, capture: Option<Box<Taps>>) -> Self {
        self.capture = capture;
        self
    }

    /// Hands the buckets to the workers ([`flush_buckets`]); false when
    /// something stayed behind.
    #[inline]
    fn flush(&mut self) -> bool {
        flush_buckets(
            &mut self.buckets,
            &mut self.senders,
            &mut self.holds,
            self.policy,
            &self.counters,
            DropReason::RxHandoffFull,
            &self.bucket_class,
        )
    }

    /// Moves the received burst into the worker buckets: each mbuf becomes
    /// a [`Packet`] (header facts read once, while hot; 1-in-N stamped with
    /// `now` under `--latency`) and goes to its flow's worker (of its
    /// class, with `--class`). `dedicated`: the class whose rte_flow queue
    /// the burst came from (0: a normal queue).
    #[inline(always)]
    fn spread(&mut self, dedicated: u8, now: u64) {
        // The header is hot here: read what later stages need into the
        // Packet once (they never touch the header), stamp samples.
        let stamp = self.stamp;
        let mut since_sample = self.since_sample;
        // Headers of a frame whose first segment is too short to hold
        // them are copied here (see Packet::head).
        let mut scratch = [0u8; wire::PARSE_HEAD_LEN];
        let mut to_packet = |mut m: dpdk::MbufPtr| {
            let mut sampled = false;
            if let Some((field, sample)) = stamp {
                // Only samples carry a stamp.
                since_sample += 1;
                if since_sample >= sample {
                    since_sample = 0;
                    m.set_field(field, now);
                    sampled = true;
                }
            }
            let mut p = Packet::from_rx(m);
            if sampled {
                p.set_sampled();
            }
            p
        };
        // Packets a bucket could not take (never, while the room check
        // above holds): freed by push_or_free, counted here.
        let mut lost = 0u64;
        if !self.classes.is_empty() {
            // Software classification (also on dedicated queues: a rule
            // steers, the classifier decides).
            let mut per_class = [0u64; MAX_APP_CLASSES + 1];
            self.rx.move_each(|m| {
                let p = to_packet(m);
                let (head, frame_len) = p.head(&mut scratch);
                let info = wire::parse_head(head, frame_len);
                let key = flow_key(head, &info);
                let class = self
                    .classes
                    .iter()
                    .position(|c| c.matches(&key))
                    .map_or(0, |k| k + 1);
                per_class[class] += 1;
                let hash = p.rss_hash().unwrap_or(info.flow_hash);
                let r = self.class_workers[class];
                let bucket = &mut self.buckets[r.start as usize + reduce(hash, r.count)];
                lost += u64::from(!bucket.push_or_free(p));
            });
            for (k, &c) in per_class.iter().enumerate() {
                if c != 0 {
                    bump(&self.counters.class_rx[k], c);
                    if dedicated != 0 {
                        bump(&self.counters.class_rx_dedicated[k], c);
                    }
                }
            }
        } else if self.n_workers == 1 {
            let bucket = &mut self.buckets[0];
            self.rx
                .move_each(|m| lost += u64::from(!bucket.push_or_free(to_packet(m))));
        } else {
            self.rx.move_each(|m| {
                let p = to_packet(m);
                let hash = match p.rss_hash() {
                    Some(h) => h,
                    None => {
                        let (head, frame_len) = p.head(&mut scratch);
                        wire::parse_head(head, frame_len).flow_hash
                    }
                };
                let bucket = &mut self.buckets[reduce(hash, self.n_workers)];
                lost += u64::from(!bucket.push_or_free(p));
            });
        }
        if lost != 0 {
            self.counters.count_drop(DropReason::RxHandoffFull, lost);
        }
        self.since_sample = since_sample;
    }

    /// One pass over the ports; returns how many packets it received.
    /// `stop`: RX must stop; pending packets are still handed on (or, with
    /// `drop`, already were).
    #[inline]
    pub fn poll(&mut self, stop: bool) -> usize {
        if !self.started {
            self.started = true;
            self.counters
                .rx_start_tsc
                .store(dpdk::rdtsc(), std::sync::atomic::Ordering::Relaxed);
        }
        // Nothing is received while a bucket is held back: the excess
        // stays in the NIC's RX ring (both on-full modes; see `Hold`).
        if !self.flush() {
            return 0;
        }
        if stop {
            self.counters
                .rx_stop_tsc
                .store(dpdk::rdtsc(), std::sync::atomic::Ordering::Relaxed);
            self.done = true;
            return 0;
        }
        let mut total = 0;
        let mut rx_now = 0u64;
        // `--rx-rate`: what this pass may take in all.
        let mut allowance = usize::MAX;
        if let Some(rate) = self.rate.as_mut() {
            rx_now = dpdk::rdtsc_inline();
            allowance = rate.allowance(rx_now);
            if allowance == 0 {
                return 0;
            }
        }
        // Start at a different port each poll: under back-pressure the poll
        // ends early, and a fixed start would starve the later ports.
        let nq = self.queues.len();
        // Ports closed by the lifecycle are skipped (one load per pass).
        let blocked = self.gates.blocked();
        self.first_queue = if self.first_queue + 1 >= nq {
            0
        } else {
            self.first_queue + 1
        };
        for k in 0..nq {
            let i = if self.first_queue + k >= nq {
                self.first_queue + k - nq
            } else {
                self.first_queue + k
            };
            let RxQueue { port, queue, class } = self.queues[i];
            // The buckets are handed on once per pass (one queue operation
            // for all ports' packets), unless one could overflow first.
            if self.buckets.iter().any(|b| b.room() < self.burst) && !self.flush() {
                break;
            }
            if blocked.has(port.id()) {
                continue;
            }
            // In place: received straight into the worker's queue. Its
            // queue full, the frames stay in the NIC, unless a stalled
            // worker's are to be dropped: then the burst path receives them
            // and its Hold decides.
            let in_place = if self.zero_copy && self.capture.is_none() {
                match self.receive_in_place(port, queue, self.burst.min(allowance), &mut rx_now) {
                    None if self.policy.wait => break,
                    got => got,
                }
            } else {
                None
            };
            let n = match in_place {
                Some(n) => {
                    self.holds[0].took();
                    n
                }
                None => port.rx_burst(queue, &mut self.rx, self.burst.min(allowance)),
            };
            if n == 0 {
                continue;
            }
            total += n;
            allowance -= n;
            bump(
                &self.counters.rx_port_packets[port.id() as usize % MAX_PORTS],
                n as u64,
            );
            if in_place.is_some() {
                if allowance == 0 {
                    break;
                }
                continue;
            }
            // `--capture`: copies of the first frames (one branch when off).
            if let Some(taps) = self.capture.as_deref_mut() {
                if !taps.tap(port.id(), self.rx.as_slice(), &mut rx_now) {
                    self.capture = None;
                }
            }
            // One TSC read per pass over the queues (not per queue): rdtsc
            // is not cheap in a VM, and a pass takes well under a µs.
            if self.stamp.is_some() && rx_now == 0 {
                rx_now = dpdk::rdtsc_inline();
            }
            self.spread(class, rx_now);
            if allowance == 0 {
                break;
            }
        }
        if let Some(rate) = self.rate.as_mut() {
            rate.spend(total);
        }
        // What does not fit stays in the buckets: the next poll tries again
        // before receiving more.
        self.flush();
        total
    }
}

// ---- worker ------------------------------------------------------------

/// Per-port forwarding facts the worker and TX stages need.
#[derive(Clone)]
pub struct PortMap {
    /// out_port[in] = the port frames received on `in` leave by.
    pub out_port: [u16; MAX_PORTS],
    /// tx_index[out] = the TX lcore (index) that serves port `out`.
    pub tx_index: [u8; MAX_PORTS],
    /// MACs written into frames leaving port `out`: (dst = peer, src = port).
    pub dst_mac: [[u8; 6]; MAX_PORTS],
    pub src_mac: [[u8; 6]; MAX_PORTS],
}

/// Parses and classifies each frame, rewrites its MACs (l2fwd convention),
/// drops runts, and hands the rest to the TX lcore of its output port.
pub struct WorkerStage {
    inputs: InputSet,
    senders: Vec<Sender>,
    buckets: Vec<Burst<Packet>>,
    /// Hold state per TX bucket (`--on-full drop`).
    holds: Vec<Hold>,
    inbuf: Burst<Packet>,
    burst: usize,
    policy: FullPolicy,
    map: Box<PortMap>,
    rewrite: bool,
    work_cycles: u64,
    /// The application class this worker serves (0 = default), repeated
    /// per TX bucket for drop accounting.
    bucket_class: Vec<u8>,
    /// `--debug-stall-worker`: sleep this long once, at the first packet.
    stall: Option<std::time::Duration>,
    /// `--handoff zero-copy` with one TX lcore: packets move from the input
    /// queue's slots straight into the output queue's.
    zero_copy: bool,
    counters: Arc<LcoreCounters>,
    pub done: bool,
}

impl WorkerStage {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inputs: InputSet,
        senders: Vec<Sender>,
        burst: usize,
        policy: FullPolicy,
        map: PortMap,
        rewrite: bool,
        work_cycles: u64,
        class: u8,
        stall: Option<std::time::Duration>,
        counters: Arc<LcoreCounters>,
    ) -> Self {
        WorkerStage {
            bucket_class: vec![class; senders.len()],
            inputs,
            buckets: (0..senders.len()).map(|_| Burst::new()).collect(),
            holds: vec![Hold::default(); senders.len()],
            senders,
            inbuf: Burst::new(),
            burst,
            policy,
            stall,
            map: Box::new(map),
            rewrite,
            work_cycles,
            zero_copy: false,
            counters,
            done: false,
        }
    }

    /// Moves packets in place (`--handoff zero-copy`) where they all go to
    /// one TX lcore.
    pub fn with_zero_copy(mut self, zero_copy: bool) -> Self {
        self.zero_copy = zero_copy && self.senders.len() == 1;
        if self.zero_copy {
            self.counters.in_place.fetch_or(IN_PLACE_WORKER, Relaxed);
        }
        self
    }

    /// Hands the TX buckets on ([`flush_buckets`]); false when something
    /// stayed behind.
    #[inline]
    fn flush(&mut self) -> bool {
        flush_buckets(
            &mut self.buckets,
            &mut self.senders,
            &mut self.holds,
            self.policy,
            &self.counters,
            DropReason::WorkerHandoffFull,
            &self.bucket_class,
        )
    }

    /// Packets taken per poll at most.
    #[inline]
    pub fn burst(&self) -> usize {
        self.burst
    }

    /// The test knob `--debug-stall-worker`: sleeps (yielding the CPU) in
    /// 1 ms steps until the stall is over or a stop is requested.
    #[cold]
    fn stall(length: std::time::Duration) {
        let end = std::time::Instant::now() + length;
        while std::time::Instant::now() < end && !crate::dpdk::signal::quit_requested() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// The synthetic work per packet for this round: none once a stop was
    /// requested (the packets are still forwarded), so a drain never waits
    /// for it.
    #[inline]
    fn work_cycles(&self) -> u64 {
        if self.work_cycles != 0 && crate::dpdk::signal::quit_requested() {
            0
        } else {
            self.work_cycles
        }
    }

    /// Counts a round's classes and runts.
    #[inline]
    fn count(&self, class_counts: &[u64; FrameClass::COUNT], runts: u64) {
        for (i, c) in class_counts.iter().enumerate() {
            if *c != 0 {
                bump(&self.counters.worker_classes[i], *c);
            }
        }
        if runts != 0 {
            self.counters.count_drop(DropReason::Runt, runts);
        }
    }

    /// The zero-copy round: up to a burst, run by run, from the input
    /// queues' slots into the TX queue's (`PacketInputs::forward_into`).
    #[inline]
    fn poll_in_place(&mut self, upstream_done: bool) -> usize {
        if let Some(length) = self.stall {
            if !self.inputs.is_empty() {
                self.stall = None;
                Self::stall(length);
            }
        }
        let mut work_cycles = self.work_cycles();
        let mut class_counts = [0u64; FrameClass::COUNT];
        let mut scratch = [0u8; wire::PARSE_HEAD_LEN];
        let (mut total, mut runts, mut refused) = (0, 0, 0);
        let (map, rewrite, policy) = (&*self.map, self.rewrite, self.policy);
        let hold = &mut self.holds[0];
        while total < self.burst {
            let mut dropped = false;
            let (taken, _kept, rejected) = self.inputs.forward_into(
                &mut self.senders[0],
                self.burst - total,
                |p| {
                    process(
                        p,
                        map,
                        rewrite,
                        &mut work_cycles,
                        &mut class_counts,
                        &mut scratch,
                    )
                },
                || {
                    dropped = hold.refused(policy, dpdk::rdtsc_inline);
                    dropped
                },
            );
            if taken == 0 {
                break;
            }
            if dropped {
                refused += taken;
            } else {
                hold.took();
                runts += rejected;
            }
            total += taken;
        }
        if total == 0 {
            if upstream_done && self.inputs.is_empty() {
                self.done = true;
            }
            return 0;
        }
        bump(&self.counters.worker_packets, total as u64);
        self.count(&class_counts, runts as u64);
        if refused != 0 {
            self.counters
                .count_drop(DropReason::WorkerHandoffFull, refused as u64);
            let class = self.bucket_class[0] as usize;
            bump(
                &self.counters.class_drops[class % (MAX_APP_CLASSES + 1)],
                refused as u64,
            );
        }
        total
    }

    /// One receive/process/hand-on round; returns how many packets it
    /// took. `upstream_done`: every RX lcore has stopped and published all
    /// it had (read before receiving).
    #[inline]
    pub fn poll(&mut self, upstream_done: bool) -> usize {
        if self.zero_copy {
            return self.poll_in_place(upstream_done);
        }
        if !self.flush() {
            return 0;
        }
        let n = receive(
            &mut self.inputs,
            &mut self.inbuf,
            self.burst,
            upstream_done,
            &mut self.done,
        );
        if n == 0 {
            return 0;
        }
        if let Some(length) = self.stall.take() {
            Self::stall(length);
        }
        // The frames may be cold: ask for all of them before touching the
        // first. (Packet knows where each frame starts: no header read.)
        for p in self.inbuf.as_slice() {
            p.prefetch_data();
        }
        let counters = &*self.counters;
        bump(&counters.worker_packets, n as u64);
        let map = &*self.map;
        let rewrite = self.rewrite;
        let mut work_cycles = self.work_cycles();
        let mut class_counts = [0u64; FrameClass::COUNT];
        let mut scratch = [0u8; wire::PARSE_HEAD_LEN];
        let runts = self.inbuf.retain_or_free(|m| {
            process(
                m,
                map,
                rewrite,
                &mut work_cycles,
                &mut class_counts,
                &mut scratch,
            )
        });
        self.count(&class_counts, runts as u64);
        // Packets a bucket could not take (never: the flush at the top
        // emptied every bucket): freed by push_or_free, counted here.
        let mut lost = 0u64;
        if self.buckets.len() == 1 {
            let bucket = &mut self.buckets[0];
            self.inbuf
                .move_each(|m| lost += u64::from(!bucket.push_or_free(m)));
        } else {
            let buckets = &mut self.buckets;
            self.inbuf.move_each(|m| {
                let out = map.out_port[m.port() as usize % MAX_PORTS] as usize;
                let bucket = &mut buckets[map.tx_index[out] as usize];
                lost += u64::from(!bucket.push_or_free(m));
            });
        }
        if lost != 0 {
            counters.count_drop(DropReason::WorkerHandoffFull, lost);
        }
        self.flush();
        n
    }
}

/// A worker's work on one packet: classifies it (counted in
/// `class_counts`), and unless it is a runt (false: drop it) rewrites its
/// MACs for its output port and spends the synthetic work (`work_cycles`
/// becomes 0 when a stop cuts it short).
#[inline(always)]
fn process(
    m: &mut Packet,
    map: &PortMap,
    rewrite: bool,
    work_cycles: &mut u64,
    class_counts: &mut [u64; FrameClass::COUNT],
    scratch: &mut [u8; wire::PARSE_HEAD_LEN],
) -> bool {
    let (head, frame_len) = m.head(scratch);
    let info = wire::classify_head(head, frame_len);
    class_counts[info.class.index()] += 1;
    if info.class == FrameClass::Runt {
        return false;
    }
    if rewrite {
        let out = map.out_port[m.port() as usize % MAX_PORTS] as usize;
        let (dst, src) = (&map.dst_mac[out], &map.src_mac[out]);
        // A chain whose first segment is shorter than an Ethernet header
        // gets its MACs written across segments.
        if !wire::rewrite_macs(m.data_mut(), dst, src) {
            m.write_at(0, dst);
            m.write_at(6, src);
        }
    }
    if *work_cycles != 0 && !synthetic_work(*work_cycles) {
        *work_cycles = 0;
    }
    true
}

// ---- TX ----------------------------------------------------------------

/// Takes packets from the workers, groups them by output port and
/// transmits on this lcore's TX queue of that port, retrying a partial
/// burst a bounded number of times per poll; what a port still refuses is
/// held (no input taken meanwhile) as [`Hold`] says, then freed and
/// counted as `tx_full`.
pub struct TxStage {
    /// Which ports may be polled now (port lifecycle); a closed port
    /// refuses like a full one.
    gates: Arc<PortGates>,
    inputs: InputSet,
    inbuf: Burst<Packet>,
    /// Indexed by port id: (port, this lcore's TX queue on it).
    ports: Vec<(Port, u16)>,
    buckets: Vec<MbufBurst>,
    out_port: [u16; MAX_PORTS],
    burst: usize,
    counters: Arc<LcoreCounters>,
    /// `--latency`: RX-timestamp field and this lcore's histogram (cycles).
    latency: Option<(U64Field, Box<Histogram>)>,
    /// `--latency` with `--metrics`: where the histogram is copied for
    /// `/metrics`, when it last was (TSC), and how often (cycles).
    latency_slot: Option<(Arc<HistogramSlot>, u64, u64)>,
    policy: FullPolicy,
    /// Hold state per port.
    holds: Vec<Hold>,
    /// Buckets hold packets a port refused.
    pending: bool,
    /// During shutdown: when to give up on a stalled port, and how many
    /// stop signals had arrived then (one more gives up at once).
    give_up_at: Option<(u64, u32)>,
    /// `--handoff zero-copy`: transmits straight from the input queues'
    /// slots; a port's refusal leaves the packets there.
    zero_copy: bool,
    pub done: bool,
}

impl TxStage {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inputs: InputSet,
        ports: Vec<(Port, u16)>,
        out_port: [u16; MAX_PORTS],
        burst: usize,
        latency: Option<U64Field>,
        policy: FullPolicy,
        gates: Arc<PortGates>,
        counters: Arc<LcoreCounters>,
    ) -> Self {
        TxStage {
            gates,
            policy,
            holds: vec![Hold::default(); ports.len()],
            pending: false,
            give_up_at: None,
            zero_copy: false,
            latency: latency.map(|f| (f, Histogram::boxed())),
            latency_slot: None,
            inputs,
            inbuf: Burst::new(),
            buckets: (0..ports.len()).map(|_| MbufBurst::new()).collect(),
            ports,
            out_port,
            burst,
            counters,
            done: false,
        }
    }

    /// Transmits in place (`--handoff zero-copy`).
    pub fn with_zero_copy(mut self, zero_copy: bool) -> Self {
        self.zero_copy = zero_copy;
        if self.zero_copy {
            self.counters.in_place.fetch_or(IN_PLACE_TX, Relaxed);
        }
        self
    }

    /// Copies the latency histogram into `slot` every `period` TSC cycles
    /// at most ([`publish_latency`](Self::publish_latency)).
    pub fn with_latency_slot(mut self, slot: Option<Arc<HistogramSlot>>, period: u64) -> Self {
        self.latency_slot = slot.map(|s| (s, 0, period));
        self
    }

    /// Publishes the latency histogram to its slot when the period has
    /// passed and no reader holds the slot; called by the lcore's loop
    /// once per loop-clock window, so never on the per-packet path.
    pub fn publish_latency(&mut self, tsc: impl FnOnce() -> u64) {
        let (Some((slot, last, period)), Some((_, hist))) =
            (self.latency_slot.as_mut(), self.latency.as_ref())
        else {
            return;
        };
        let now = tsc();
        if now.wrapping_sub(*last) >= *period && slot.publish(hist) {
            *last = now;
        }
    }

    /// The latency histogram (cycles), once the stage is done.
    pub fn take_histogram(&mut self) -> Option<Box<Histogram>> {
        self.latency.take().map(|(_, h)| h)
    }

    /// Transmits every bucket with bounded retries. What a port still
    /// refuses is kept for the next poll (back-pressure) or, when its
    /// [`Hold`] says so, freed and counted as `tx_full`; at shutdown a held
    /// bucket gets [`TX_STALL_GIVE_UP_S`] more. Returns true when all
    /// buckets are empty.
    #[inline]
    fn transmit(&mut self) -> bool {
        let mut all_sent = true;
        // A closed port refuses like a full one (port lifecycle).
        let blocked = self.gates.blocked();
        for (p, (bucket, hold)) in self
            .buckets
            .iter_mut()
            .zip(self.holds.iter_mut())
            .enumerate()
        {
            if bucket.is_empty() {
                continue;
            }
            let (port, queue) = self.ports[p];
            let open = !blocked.has(port.id());
            let mut tries = 0;
            loop {
                if open {
                    let sent = port.tx_burst(queue, bucket);
                    if sent != 0 {
                        bump(&self.counters.tx_port_packets[p], sent as u64);
                        hold.took();
                    }
                    if bucket.is_empty() {
                        break;
                    }
                    tries += 1;
                }
                if !open || tries >= TX_RETRIES {
                    if hold.refused(self.policy, dpdk::rdtsc_inline) {
                        self.counters
                            .count_drop(DropReason::TxFull, bucket.len() as u64);
                        bucket.free_all();
                    } else {
                        all_sent = false;
                    }
                    break;
                }
                dpdk::pause();
            }
        }
        all_sent
    }

    /// Packets taken per poll at most.
    #[inline]
    pub fn burst(&self) -> usize {
        self.burst
    }

    /// Frees and counts (`tx_full`) whatever the ports would not take.
    fn drop_pending(&mut self) {
        for bucket in self.buckets.iter_mut() {
            if !bucket.is_empty() {
                self.counters
                    .count_drop(DropReason::TxFull, bucket.len() as u64);
                bucket.free_all();
            }
        }
        self.pending = false;
    }

    /// During shutdown with a port refusing: true once the port has had
    /// [`TX_STALL_GIVE_UP_S`] (or another stop signal came): what it
    /// refuses is freed then.
    fn give_up(&mut self) -> bool {
        if !crate::dpdk::signal::quit_requested() {
            return false;
        }
        let now = dpdk::rdtsc();
        let signals = crate::dpdk::signal::stop_signals();
        let (deadline, seen) = *self.give_up_at.get_or_insert((
            now + (dpdk::tsc_hz() as f64 * TX_STALL_GIVE_UP_S) as u64,
            signals,
        ));
        now >= deadline || signals > seen
    }

    /// The zero-copy round: up to a burst, run by run, transmitted from
    /// the input queues' slots (`PacketInputs::transmit`), each run on its
    /// output port with bounded retries; what a port refuses stays in the
    /// queue (no more input this round) unless its [`Hold`] says to drop it.
    #[inline]
    fn poll_in_place(&mut self, upstream_done: bool) -> usize {
        let give_up = self.pending && self.give_up();
        let blocked = self.gates.blocked();
        let now = if self.latency.is_some() {
            dpdk::rdtsc_inline()
        } else {
            0
        };
        let (mut total, mut refused) = (0, false);
        let Self {
            inputs,
            ports,
            out_port,
            holds,
            counters,
            latency,
            policy,
            burst,
            ..
        } = self;
        while total < *burst && !refused {
            let taken = inputs.transmit(
                *burst - total,
                |p| {
                    if let Some((field, hist)) = latency.as_mut() {
                        if p.is_sampled() {
                            hist.record(now.wrapping_sub(p.field(*field)));
                        }
                    }
                },
                |in_port, run| {
                    let out = out_port[in_port as usize % MAX_PORTS] as usize;
                    let (port, queue) = ports[out];
                    let hold = &mut holds[out];
                    let open = !blocked.has(port.id());
                    let mut tries = 0;
                    loop {
                        if open {
                            let sent = run.tx_burst(port, queue);
                            if sent != 0 {
                                bump(&counters.tx_port_packets[out], sent as u64);
                                hold.took();
                            }
                            if run.is_empty() {
                                break;
                            }
                            tries += 1;
                        }
                        if !open || tries >= TX_RETRIES {
                            if give_up || hold.refused(*policy, dpdk::rdtsc_inline) {
                                counters.count_drop(DropReason::TxFull, run.len() as u64);
                                run.free_rest();
                            } else {
                                refused = true;
                            }
                            break;
                        }
                        dpdk::pause();
                    }
                },
            );
            if taken == 0 {
                break;
            }
            total += taken;
        }
        self.pending = refused;
        if total == 0 {
            if !refused && upstream_done && self.inputs.is_empty() {
                self.done = true;
            }
            return 0;
        }
        bump(&self.counters.tx_in_packets, total as u64);
        total
    }

    /// One receive/transmit round; returns how many packets it took.
    #[inline]
    pub fn poll(&mut self, upstream_done: bool) -> usize {
        if self.zero_copy {
            return self.poll_in_place(upstream_done);
        }
        if self.pending {
            // A port refused: take no more input until it accepts or its
            // hold runs out (the worker→TX queues fill, then RX stops).
            self.pending = !self.transmit();
            if self.pending {
                if self.give_up() {
                    self.drop_pending();
                }
                return 0;
            }
        }
        let n = receive(
            &mut self.inputs,
            &mut self.inbuf,
            self.burst,
            upstream_done,
            &mut self.done,
        );
        if n == 0 {
            return 0;
        }
        bump(&self.counters.tx_in_packets, n as u64);
        // Packets a bucket could not take (never: the buckets were empty
        // when this burst was received): freed by push_or_free, counted here.
        let mut lost = 0u64;
        if let Some((field, hist)) = self.latency.as_mut() {
            // Read just before the first rte_eth_tx_burst of the batch; only
            // sampled packets' headers are read.
            let now = dpdk::rdtsc_inline();
            self.inbuf.move_each(|p| {
                if p.is_sampled() {
                    hist.record(now.wrapping_sub(p.field(*field)));
                }
                let out = self.out_port[p.port() as usize % MAX_PORTS] as usize;
                lost += u64::from(!self.buckets[out].push_or_free(p.into_mbuf()));
            });
        } else {
            self.inbuf.move_each(|p| {
                let out = self.out_port[p.port() as usize % MAX_PORTS] as usize;
                lost += u64::from(!self.buckets[out].push_or_free(p.into_mbuf()));
            });
        }
        if lost != 0 {
            self.counters.count_drop(DropReason::TxFull, lost);
        }
        self.pending = !self.transmit();
        n
    }
}
