//! One lcore's counters ([`LcoreCounters`]): 128-byte aligned, written
//! only by that lcore with relaxed single-writer updates (`bump`), read by
//! the reporting threads; the drop reasons they count under, and the
//! loop-time figures derived from them ([`LcoreLoad`]).
//!
//! Drop reasons are named by cause and always all reported:
//! `runt` (frame shorter than an Ethernet header), `rx_handoff_full`
//! (RX→worker queue full with `--on-full drop`), `worker_handoff_full`
//! (worker→TX queue full), `tx_full` (the port's TX queue still refused
//! after the bounded retry); in L3 mode (`--routes`) also `no_route`,
//! `ttl_exceeded`, `ipv4_bad_header`, `ipv4_bad_checksum`,
//! `ipv6_bad_header`, `l3_non_ip` and `martian` (`wire::router`). Conservation:
//! `rx = tx + Σ drops`.

use crate::config::class::MAX_CLASSES;
use crate::config::MAX_PORTS;
use crate::wire::router::L3Drop;
use crate::wire::FrameClass;
use std::sync::atomic::{AtomicU64, Ordering};

/// Drop reasons, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    Runt,
    RxHandoffFull,
    WorkerHandoffFull,
    TxFull,
    /// L3 mode (`--routes`): the worker's router checks and lookup
    /// (`wire::router::L3Drop`, same order and names).
    NoRoute,
    TtlExceeded,
    Ipv4BadHeader,
    Ipv4BadChecksum,
    Ipv6BadHeader,
    L3NonIp,
    Martian,
}

impl DropReason {
    /// How many reasons there are: the length of per-reason counter arrays.
    pub const COUNT: usize = 11;

    /// All reasons, in [`index`](Self::index) order.
    pub const ALL: [DropReason; Self::COUNT] = [
        DropReason::Runt,
        DropReason::RxHandoffFull,
        DropReason::WorkerHandoffFull,
        DropReason::TxFull,
        DropReason::NoRoute,
        DropReason::TtlExceeded,
        DropReason::Ipv4BadHeader,
        DropReason::Ipv4BadChecksum,
        DropReason::Ipv6BadHeader,
        DropReason::L3NonIp,
        DropReason::Martian,
    ];
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Runt => "runt",
            DropReason::RxHandoffFull => "rx_handoff_full",
            DropReason::WorkerHandoffFull => "worker_handoff_full",
            DropReason::TxFull => "tx_full",
            DropReason::NoRoute => L3Drop::NoRoute.name(),
            DropReason::TtlExceeded => L3Drop::TtlExceeded.name(),
            DropReason::Ipv4BadHeader => L3Drop::Ipv4BadHeader.name(),
            DropReason::Ipv4BadChecksum => L3Drop::Ipv4BadChecksum.name(),
            DropReason::Ipv6BadHeader => L3Drop::Ipv6BadHeader.name(),
            DropReason::L3NonIp => L3Drop::NonIp.name(),
            DropReason::Martian => L3Drop::Martian.name(),
        }
    }
    /// Position in [`ALL`](Self::ALL), for per-reason counter arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The reason an L3 drop is counted under.
    pub const fn of_l3(d: L3Drop) -> DropReason {
        match d {
            L3Drop::NoRoute => DropReason::NoRoute,
            L3Drop::TtlExceeded => DropReason::TtlExceeded,
            L3Drop::Ipv4BadHeader => DropReason::Ipv4BadHeader,
            L3Drop::Ipv4BadChecksum => DropReason::Ipv4BadChecksum,
            L3Drop::Ipv6BadHeader => DropReason::Ipv6BadHeader,
            L3Drop::NonIp => DropReason::L3NonIp,
            L3Drop::Martian => DropReason::Martian,
        }
    }
}

// `ALL` holds the reasons in `index()` (declaration) order, and `Martian`
// is the last variant, so arrays of `COUNT` counters line up with `ALL`;
// the L3 reasons follow `L3Drop`'s order.
const _: () = {
    let mut i = 0;
    while i < DropReason::COUNT {
        assert!(DropReason::ALL[i].index() == i);
        i += 1;
    }
    assert!(DropReason::Martian.index() + 1 == DropReason::COUNT);
    let mut j = 0;
    while j < L3Drop::COUNT {
        assert!(DropReason::of_l3(L3Drop::ALL[j]).index() == DropReason::NoRoute.index() + j);
        j += 1;
    }
};

/// Adds `n` to a counter that only the calling lcore writes.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

#[inline]
pub fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// One lcore's counters, for every role it holds.
#[repr(align(128))]
#[derive(Default)]
pub struct LcoreCounters {
    /// RX role: packets received, per port (this lcore owns one RX queue on
    /// every port).
    pub rx_port_packets: [AtomicU64; MAX_PORTS],
    /// Worker role: packets taken from its input queues.
    pub worker_packets: AtomicU64,
    /// Worker role: packets per frame class (FrameClass::index()).
    pub worker_classes: [AtomicU64; FrameClass::COUNT],
    /// TX role: packets taken from its input queues.
    pub tx_in_packets: AtomicU64,
    /// TX role: packets transmitted, per port.
    pub tx_port_packets: [AtomicU64; MAX_PORTS],
    /// Drops by reason (DropReason::index()).
    pub drops: [AtomicU64; DropReason::COUNT],
    /// Application classes (index 0 = default): packets classified at RX,
    /// of which received on the class's dedicated (rte_flow) queue, and
    /// hand-off drops of the class's packets.
    pub class_rx: [AtomicU64; MAX_CLASSES + 1],
    pub class_rx_dedicated: [AtomicU64; MAX_CLASSES + 1],
    pub class_drops: [AtomicU64; MAX_CLASSES + 1],
    /// Loop iterations that moved packets, and the TSC cycles they took.
    pub busy_polls: AtomicU64,
    pub busy_cycles: AtomicU64,
    /// Loop iterations that found nothing to do, and their cycles.
    pub idle_polls: AtomicU64,
    pub idle_cycles: AtomicU64,
    /// TSC at the first RX poll and at RX stop (RX role), 0 when unset.
    pub rx_start_tsc: AtomicU64,
    pub rx_stop_tsc: AtomicU64,
    /// The stages of this lcore that hand off in place (`--handoff
    /// zero-copy` where the layout allows): [`IN_PLACE_RX`] and the others,
    /// set once when the stages are built.
    pub in_place: AtomicU64,
}

/// [`LcoreCounters::in_place`] bits.
pub const IN_PLACE_RX: u64 = 1;
pub const IN_PLACE_WORKER: u64 = 2;
pub const IN_PLACE_TX: u64 = 4;

impl LcoreCounters {
    #[inline]
    pub fn count_drop(&self, reason: DropReason, n: u64) {
        bump(&self.drops[reason.index()], n);
    }

    pub fn rx_total(&self) -> u64 {
        self.rx_port_packets.iter().map(get).sum()
    }

    pub fn tx_total(&self) -> u64 {
        self.tx_port_packets.iter().map(get).sum()
    }

    pub fn drops_total(&self) -> u64 {
        self.drops.iter().map(get).sum()
    }

    pub fn worker_total(&self) -> u64 {
        get(&self.worker_packets)
    }

    pub fn load(&self) -> LcoreLoad {
        LcoreLoad {
            handled: self.rx_total() + get(&self.worker_packets) + get(&self.tx_in_packets),
            busy_polls: get(&self.busy_polls),
            busy_cycles: get(&self.busy_cycles),
            idle_polls: get(&self.idle_polls),
            idle_cycles: get(&self.idle_cycles),
        }
    }
}

/// Where one lcore's loop time went, read once from its counters. The
/// derived figures are defined here and nowhere else.
#[derive(Debug, Clone, Copy, Default)]
pub struct LcoreLoad {
    /// Packets handled in all roles (RX received + worker input + TX
    /// input): an RX+TX lcore counts each forwarded packet twice.
    pub handled: u64,
    pub busy_polls: u64,
    pub busy_cycles: u64,
    pub idle_polls: u64,
    pub idle_cycles: u64,
}

impl LcoreLoad {
    /// What happened since `base` (an earlier reading of the same lcore).
    pub fn since(&self, base: &LcoreLoad) -> LcoreLoad {
        LcoreLoad {
            handled: self.handled.saturating_sub(base.handled),
            busy_polls: self.busy_polls.saturating_sub(base.busy_polls),
            busy_cycles: self.busy_cycles.saturating_sub(base.busy_cycles),
            idle_polls: self.idle_polls.saturating_sub(base.idle_polls),
            idle_cycles: self.idle_cycles.saturating_sub(base.idle_cycles),
        }
    }

    /// TSC cycles of polls that moved packets, per packet handled (all
    /// roles); 0.0 when the lcore handled nothing.
    pub fn busy_cycles_per_packet(&self) -> f64 {
        ratio(self.busy_cycles, self.handled)
    }

    /// Share of the loop's cycles spent on polls that moved packets.
    pub fn busy_ratio(&self) -> f64 {
        ratio(self.busy_cycles, self.busy_cycles + self.idle_cycles)
    }

    /// Mean packets handled per busy poll.
    pub fn avg_burst(&self) -> f64 {
        ratio(self.handled, self.busy_polls)
    }
}

/// `a / b`, 0.0 when `b` is 0.
fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}
