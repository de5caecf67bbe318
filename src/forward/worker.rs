//! The worker stage: in L2 mode classifies each frame, rewrites its MACs
//! for the paired port and drops runts; in L3 mode (`--routes`) routes
//! each frame by destination (`route.rs`); either way it hands the rest
//! to the TX lcore of its output port, in place
//! (`--handoff zero-copy`: slot to slot where there is one TX lcore,
//! scattered into the TX lcores' lent slots where there are several), or
//! back to the RX lcore that sent it, in its transfer unit (`--handoff
//! round-trip`), where that lcore transmits.

use super::rate::{FullPolicy, Hold};
use super::route::L3Work;
use super::stages::{flush_buckets, receive, synthetic_work, Coalescing, Drops, StageCommon};
use crate::config::class::MAX_CLASSES;
use crate::config::StageMode;
use crate::config::MAX_PORTS;
use crate::counters::lcore::{bump, DropReason, LcoreCounters, IN_PLACE_WORKER};
use crate::dpdk::{self, Burst, Packet, PacketInputs, PacketSender, RunStore, RunWork};
use crate::setup::routes::SocketRoutes;
use crate::wire::{self, FrameClass};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Per-port forwarding facts the worker and TX stages need.
#[derive(Clone)]
pub struct PortMap {
    /// out_port[in] = the port frames received on `in` leave by.
    pub out_port: [u16; MAX_PORTS],
    /// tx_index[out] = the TX lcore (index) that serves port `out`.
    pub tx_index: [u8; MAX_PORTS],
    /// The MACs written into frames leaving port `out`, as the frame's
    /// first 12 bytes: dst (the peer), then src (the port).
    pub macs: [[u8; 12]; MAX_PORTS],
}

/// What a worker does to each packet.
pub struct WorkerRules {
    pub map: PortMap,
    /// Rewrite the MACs (not `--no-mac-rewrite`).
    pub rewrite: bool,
    /// `--worker-cycles`: synthetic work per packet, in TSC cycles.
    pub work_cycles: u64,
    /// The application class this worker serves (0 = default).
    pub class: u8,
    /// `--debug-stall-worker`: sleep this long once, at the first packet.
    pub stall: Option<std::time::Duration>,
    /// L3 mode (`--routes`): the tables of the worker's socket.
    pub routes: Option<Arc<SocketRoutes>>,
}

/// Does its [`Work`] (L2 or L3) on each frame and hands the frames it
/// keeps to the TX lcore of their output port.
pub struct WorkerStage {
    inputs: PacketInputs,
    senders: Vec<PacketSender>,
    /// Per TX lcore: what waits to be handed on (through bursts; in
    /// place, what a full TX queue gave back).
    buckets: Vec<Burst<Packet>>,
    /// Scatter in place: the TX lcores' open runs.
    runs: RunStore,
    /// Hold state per TX bucket (`--on-full drop`).
    holds: Vec<Hold>,
    inbuf: Burst<Packet>,
    burst: usize,
    /// Packets a poll takes at most: a transfer unit in place
    /// (`--handoff zero-copy`), else `burst`.
    pass: usize,
    /// Packets per transfer unit.
    unit: usize,
    policy: FullPolicy,
    /// What the stage does to each packet, L2 or L3 (decided at start; a
    /// reload does not switch it). Taken out for the length of a poll.
    work: Option<Work>,
    /// The port map the burst mode hands packets on by (the L2 work's
    /// own; in L3 mode the identity, packets naming their output port).
    map: Box<PortMap>,
    work_cycles: u64,
    /// The application class this worker serves (0 = default), repeated
    /// per TX bucket for drop accounting.
    bucket_class: Vec<u8>,
    /// `--debug-stall-worker`: sleep this long once, at the first packet.
    stall: Option<std::time::Duration>,
    counters: Arc<LcoreCounters>,
    /// Scatter in place: when the TX lcores' open units are published.
    coalescing: Coalescing,
    pub done: bool,
}

impl WorkerStage {
    /// Takes packets from `inputs` and hands them to the TX lcores through
    /// `senders` (one per TX lcore).
    pub fn new(
        inputs: PacketInputs,
        senders: Vec<PacketSender>,
        common: StageCommon,
        rules: WorkerRules,
    ) -> Self {
        let StageCommon {
            burst,
            unit,
            policy,
            counters,
        } = common;
        let WorkerRules {
            map,
            rewrite,
            work_cycles,
            class,
            stall,
            routes,
        } = rules;
        let work = match routes {
            Some(t) => Work::L3(L3Work::new(t, map.tx_index)),
            None => Work::L2(Box::new(L2Work {
                map: map.clone(),
                rewrite,
                work_cycles: 0,
                class_counts: [0; FrameClass::COUNT],
                scratch: [0; wire::PARSE_HEAD_LEN],
            })),
        };
        WorkerStage {
            bucket_class: vec![class; senders.len()],
            inputs,
            buckets: (0..senders.len()).map(|_| Burst::new()).collect(),
            runs: RunStore::new(senders.len()),
            coalescing: Coalescing::default(),
            holds: vec![Hold::default(); senders.len()],
            senders,
            inbuf: Burst::new(),
            burst,
            pass: burst,
            unit,
            policy,
            stall,
            work: Some(work),
            map: Box::new(map),
            work_cycles,
            counters,
            done: false,
        }
    }

    /// A reload's settings (`forward::settings`), between polls: the MACs
    /// written and whether they are (L2), the route tables (L3), and
    /// `--on-full` / `--drop-after`.
    pub fn set_live(&mut self, s: &super::settings::Settings) {
        match self.work.as_mut() {
            Some(Work::L2(w)) => {
                w.map.macs = s.macs;
                w.rewrite = s.rewrite;
            }
            Some(Work::L3(w)) => {
                if let Some(r) = &s.routes {
                    let socket = w.tables().socket;
                    w.set_tables(r.for_socket(socket));
                }
            }
            None => {}
        }
        self.policy = s.policy;
    }

    /// Sets up the stage for its mode, as the plan settles it (the
    /// lcore's loop then polls it with [`poll::<MODE>`](Self::poll)):
    /// [`StageMode::RoundTrip`] processes units where they lie and hands
    /// them back to their RX lcore (every input is a round-trip queue, no
    /// TX queues); [`StageMode::InPlace`] moves packets from the input
    /// queue's slots straight into the one TX lcore's queue;
    /// [`StageMode::Scatter`] into each packet's TX lcore's lent slots
    /// (their TransferQueues coalescing: `stages::Coalescing`); all three
    /// take a batch per poll.
    pub fn with_mode(mut self, mode: StageMode) -> Self {
        if mode != StageMode::Bursts {
            self.pass = self.unit;
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
            Drops {
                counters: &self.counters,
                reason: DropReason::WorkerHandoffFull,
                bucket_class: &self.bucket_class,
            },
        )
    }

    /// Packets taken per poll at most.
    #[inline]
    pub fn pass(&self) -> usize {
        self.pass
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

    /// `--debug-stall-worker` in place: the stall, once something waits.
    #[inline]
    fn stall_at_first_packet(&mut self) {
        if let Some(length) = self.stall {
            if !self.inputs.is_empty() {
                self.stall = None;
                Self::stall(length);
            }
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

    /// The zero-copy round: up to a batch, run by run, from the input
    /// queues' slots into the TX queue's (`PacketInputs::forward_into`).
    #[inline]
    fn poll_in_place(&mut self, work: &mut impl StageWork, upstream_done: bool) -> usize {
        self.stall_at_first_packet();
        work.start_round(self.work_cycles());
        let (mut total, mut rejects, mut refused) = (0, 0, 0);
        let policy = self.policy;
        let hold = &mut self.holds[0];
        while total < self.pass {
            let mut dropped = false;
            let (taken, _kept, rejected) =
                self.inputs
                    .forward_into(&mut self.senders[0], self.pass - total, work, || {
                        dropped = hold.refused(policy, dpdk::rdtsc_inline);
                        dropped
                    });
            if taken == 0 {
                break;
            }
            if dropped {
                refused += taken;
            } else {
                hold.took();
                rejects += rejected;
            }
            total += taken;
        }
        self.end_round(work, total, upstream_done, rejects, refused)
    }

    /// The end of a round that took `total` packets: with none, the stage
    /// is done once upstream is and its inputs are empty; else the round
    /// is counted (packets, what `work` counts of its `rejects`, and
    /// `dropped` as `worker_handoff_full` of this worker's class). Returns
    /// `total`.
    #[inline]
    fn end_round(
        &mut self,
        work: &mut impl StageWork,
        total: usize,
        upstream_done: bool,
        rejects: usize,
        dropped: usize,
    ) -> usize {
        if total == 0 {
            if upstream_done && self.inputs.is_empty() {
                self.done = true;
            }
            return 0;
        }
        bump(&self.counters.worker_packets, total as u64);
        work.finish_round(&self.counters, rejects as u64);
        if dropped != 0 {
            self.counters
                .count_drop(DropReason::WorkerHandoffFull, dropped as u64);
            let class = self.bucket_class[0] as usize;
            bump(
                &self.counters.class_drops[class % (MAX_CLASSES + 1)],
                dropped as u64,
            );
        }
        total
    }

    /// The round-trip round: up to a batch, run by run, processed in the
    /// input queues' slots and handed back (`PacketInputs::process_in_place`).
    #[inline]
    fn poll_round_trip(&mut self, work: &mut impl StageWork, upstream_done: bool) -> usize {
        self.stall_at_first_packet();
        work.start_round(self.work_cycles());
        let (mut total, mut rejects) = (0, 0);
        while total < self.pass {
            let (taken, rejected) = self.inputs.process_in_place(self.pass - total, work);
            if taken == 0 {
                break;
            }
            rejects += rejected;
            total += taken;
        }
        self.end_round(work, total, upstream_done, rejects, 0)
    }

    /// The scatter round: up to a batch, run by run, from the input
    /// queues' slots into the TX lcores' (`PacketInputs::scatter_into`).
    /// What a full TX queue gives back waits in its bucket, handed on
    /// (or, held too long, dropped: `Hold`) before more is taken.
    #[inline]
    fn poll_scatter(&mut self, work: &mut impl StageWork, upstream_done: bool) -> usize {
        if !self.flush() {
            self.coalescing.end_poll(&mut self.senders, true);
            return 0;
        }
        self.stall_at_first_packet();
        work.start_round(self.work_cycles());
        let (mut total, mut rejects, mut lost) = (0, 0, 0);
        while total < self.pass {
            let s = self.inputs.scatter_into(
                &mut self.senders,
                &mut self.runs,
                &mut self.buckets,
                self.pass - total,
                work,
            );
            if s.taken == 0 {
                break;
            }
            total += s.taken;
            rejects += s.rejected;
            lost += s.lost;
            if s.held != 0 {
                break;
            }
        }
        // Short of a whole pass: the inputs ran dry or a TX queue is full.
        self.coalescing
            .end_poll(&mut self.senders, total < self.pass || upstream_done);
        let total = self.end_round(work, total, upstream_done, rejects, lost);
        if total != 0 {
            self.flush();
        }
        total
    }

    /// One round in the stage's mode (`MODE`: a [`StageMode`] as `u8`,
    /// fixed for its lcore's loop); returns how many packets it took.
    /// `upstream_done`: every RX lcore has stopped and published all it
    /// had (read before receiving).
    #[inline]
    pub fn poll<const MODE: u8>(&mut self, upstream_done: bool) -> usize {
        // The work is L2 or L3 for the whole run: one predicted branch per
        // poll, none per packet.
        let Some(mut work) = self.work.take() else {
            return 0;
        };
        let n = match &mut work {
            Work::L2(w) => self.poll_with::<MODE>(&mut **w, upstream_done),
            Work::L3(w) => self.poll_with::<MODE>(&mut **w, upstream_done),
        };
        self.work = Some(work);
        n
    }

    #[inline(always)]
    fn poll_with<const MODE: u8>(
        &mut self,
        work: &mut impl StageWork,
        upstream_done: bool,
    ) -> usize {
        if MODE == StageMode::RoundTrip as u8 {
            self.poll_round_trip(work, upstream_done)
        } else if MODE == StageMode::InPlace as u8 {
            self.poll_in_place(work, upstream_done)
        } else if MODE == StageMode::Scatter as u8 {
            self.poll_scatter(work, upstream_done)
        } else {
            self.poll_bursts(work, upstream_done)
        }
    }

    /// One receive/process/hand-on round through the stage's bursts.
    #[inline]
    fn poll_bursts(&mut self, work: &mut impl StageWork, upstream_done: bool) -> usize {
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
        work.start_round(self.work_cycles());
        work.begin(self.inbuf.as_slice());
        let rejects = self.inbuf.retain_or_free(|m| work.each(m).is_some());
        work.finish_round(counters, rejects as u64);
        // Packets a bucket could not take (never: the flush at the top
        // emptied every bucket): freed by push_or_free, counted here.
        let mut lost = 0u64;
        if self.buckets.len() == 1 {
            let bucket = &mut self.buckets[0];
            self.inbuf
                .move_each(|m| lost += u64::from(!bucket.push_or_free(m)));
        } else {
            let map = &*self.map;
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

/// What a worker does to packets, L2 or L3, chosen when it is built.
enum Work {
    L2(Box<L2Work>),
    L3(Box<L3Work>),
}

/// A worker's work on the runs it takes ([`RunWork`]), with what it
/// counts per round.
trait StageWork: RunWork {
    /// A round begins, with `work_cycles` of synthetic work per packet.
    fn start_round(&mut self, work_cycles: u64);
    /// The round is over: counts what it found, of which `rejects`
    /// packets were not kept.
    fn finish_round(&mut self, counters: &LcoreCounters, rejects: u64);
}

impl StageWork for L3Work {
    #[inline(always)]
    fn start_round(&mut self, work_cycles: u64) {
        L3Work::start_round(self, work_cycles);
    }

    #[inline(always)]
    fn finish_round(&mut self, counters: &LcoreCounters, rejects: u64) {
        let counted = L3Work::finish_round(self, counters);
        debug_assert_eq!(counted, rejects);
    }
}

/// The L2 work (l2fwd's convention): classify, drop runts, rewrite the
/// MACs for the paired output port.
struct L2Work {
    map: PortMap,
    /// Rewrite the MACs (not `--no-mac-rewrite`).
    rewrite: bool,
    /// `--worker-cycles` for this round (0 once a stop cut it short).
    work_cycles: u64,
    class_counts: [u64; FrameClass::COUNT],
    scratch: [u8; wire::PARSE_HEAD_LEN],
}

impl RunWork for L2Work {
    #[inline(always)]
    fn begin(&mut self, _run: &[Packet]) {}

    #[inline(always)]
    fn each(&mut self, p: &mut Packet) -> Option<usize> {
        if !process(
            p,
            &self.map,
            self.rewrite,
            &mut self.work_cycles,
            &mut self.class_counts,
            &mut self.scratch,
        ) {
            return None;
        }
        let out = self.map.out_port[p.port() as usize % MAX_PORTS] as usize;
        Some(self.map.tx_index[out] as usize)
    }
}

impl StageWork for L2Work {
    #[inline(always)]
    fn start_round(&mut self, work_cycles: u64) {
        self.work_cycles = work_cycles;
    }

    /// Counts the round's classes, and its rejects as runts.
    #[inline]
    fn finish_round(&mut self, counters: &LcoreCounters, rejects: u64) {
        for (i, c) in self.class_counts.iter_mut().enumerate() {
            if *c != 0 {
                bump(&counters.worker_classes[i], std::mem::take(c));
            }
        }
        if rejects != 0 {
            counters.count_drop(DropReason::Runt, rejects);
        }
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
        let macs = &map.macs[out];
        // A chain whose first segment is shorter than an Ethernet header
        // gets its MACs written across segments.
        if !wire::rewrite_macs(m.data_mut(), macs) {
            m.write_at(0, macs);
        }
    }
    if *work_cycles != 0 && !synthetic_work(*work_cycles) {
        *work_cycles = 0;
    }
    true
}
