//! What the metrics endpoint reads besides the lcore counters, handed out
//! by the forwarding setup (`Forwarding::metrics_sources`): the latency
//! histograms' slots, the hand-off queues' occupancy probes and the
//! capture counters.

use super::capture::CaptureCounters;
use super::latency::HistogramSlot;
use crate::dpdk::QueueProbe;
use std::sync::Arc;

/// What `/metrics` reads besides the live counters, taken from the forwarding
/// setup (`Forwarding::metrics_sources`).
#[derive(Clone, Default)]
pub struct Sources {
    /// `--latency`: each TX lcore's published histogram (none without).
    pub latency: Vec<Arc<HistogramSlot>>,
    /// Every hand-off queue.
    pub queues: Vec<HandoffQueue>,
    /// `--capture`: each captured port's counters.
    pub captures: Vec<(u16, Arc<CaptureCounters>)>,
}

/// One hand-off queue: its stage, its producer lcore(s) and consumer
/// lcore, and its occupancy probe.
#[derive(Clone)]
pub struct HandoffQueue {
    /// `rx_to_worker` or `worker_to_tx`.
    pub stage: &'static str,
    /// The producer lcore; a shared queue's producers joined by `+`.
    pub from: String,
    pub to: String,
    pub probe: QueueProbe,
}
