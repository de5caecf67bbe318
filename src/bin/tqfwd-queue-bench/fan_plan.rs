//! What the scatter and drain rows (`--scatter`) are made of: their rows
//! ([`FanRow`]), contenders ([`FanContender`]), limits, and the plan the
//! options build ([`FanPlan`], `args.rs`) and the rounds run (`fan.rs`).
//! It uses no other module of the bench, so every one of them may use it.

/// Most queues a scatter or drain row has.
pub(crate) const MAX_QUEUES: usize = 8;

/// Values in the item table: a power of two, a multiple of every burst.
pub(crate) const TABLE_ITEMS: usize = 4096;
const _: () = assert!(TABLE_ITEMS.is_power_of_two() && TABLE_ITEMS >= tqfwd::queue::MAX_BURST);

/// Scatter (one producer, k destinations) or drain (k queues, one
/// consumer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FanRow {
    Scatter,
    Drain,
}

impl FanRow {
    pub(crate) const ALL: [FanRow; 2] = [FanRow::Scatter, FanRow::Drain];

    pub(crate) fn parse(s: &str) -> Option<FanRow> {
        FanRow::ALL.into_iter().find(|r| r.key() == s.trim())
    }

    pub(crate) fn key(self) -> &'static str {
        match self {
            FanRow::Scatter => "scatter",
            FanRow::Drain => "drain",
        }
    }
}

/// The queues and ways of moving items compared in the scatter and drain
/// rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FanContender {
    /// TransferQueue (one single-producer queue per destination), lent
    /// slots on both sides (`send_with` / `recv_with`).
    TqInPlace,
    /// TransferQueue, copies (`send_slice` / `recv_slice`).
    TqCopy,
    /// SP/SC `rte_ring` per destination, DPDK's zero-copy API on both
    /// sides.
    RingInPlace,
    /// SP/SC `rte_ring` per destination, `rte_ring_enqueue_burst` /
    /// `rte_ring_dequeue_burst`.
    RingCopy,
}

impl FanContender {
    pub(crate) const ALL: [FanContender; 4] = [
        FanContender::TqInPlace,
        FanContender::RingInPlace,
        FanContender::TqCopy,
        FanContender::RingCopy,
    ];

    pub(crate) fn parse(s: &str) -> Option<FanContender> {
        FanContender::ALL.into_iter().find(|c| c.key() == s.trim())
    }

    pub(crate) fn key(self) -> &'static str {
        match self {
            FanContender::TqInPlace => "tq-in-place",
            FanContender::TqCopy => "tq-copy",
            FanContender::RingInPlace => "ring-in-place",
            FanContender::RingCopy => "ring-copy",
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            FanContender::TqInPlace => "tq in place",
            FanContender::TqCopy => "tq copy",
            FanContender::RingInPlace => "ring in place",
            FanContender::RingCopy => "ring copy",
        }
    }

    pub(crate) fn in_place(self) -> bool {
        matches!(self, FanContender::TqInPlace | FanContender::RingInPlace)
    }

    /// The rte_ring contender moving items the same way (itself for a
    /// ring).
    pub(crate) fn ring_twin(self) -> FanContender {
        if self.in_place() {
            FanContender::RingInPlace
        } else {
            FanContender::RingCopy
        }
    }

    pub(crate) fn is_tq(self) -> bool {
        matches!(self, FanContender::TqInPlace | FanContender::TqCopy)
    }
}

/// The scatter and drain rows' run parameters (`--scatter`).
#[derive(Debug, Clone)]
pub(crate) struct FanPlan {
    pub(crate) rounds: u32,
    pub(crate) duration_ms: u64,
    pub(crate) rows: Vec<FanRow>,
    /// Queue counts k.
    pub(crate) queues: Vec<usize>,
    pub(crate) bursts: Vec<usize>,
    /// Depth of each of the k queues.
    pub(crate) depths: Vec<usize>,
    pub(crate) contenders: Vec<FanContender>,
}
