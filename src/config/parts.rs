//! The parts of a [`Plan`](super::Plan) that come straight from the
//! options, typed and grouped by who reads them: setup takes
//! [`HandoffPlan`] (queues and pools) and [`PortsPlan`], forward takes
//! [`StagePlan`] and [`CapturePlan`], report takes [`LivePlan`]. Once the
//! plan is built nothing below `config` reads the command line's
//! [`Options`] again.

use super::cli::{Backend, Handoff, OnFull, Options, RequestedDevice, Topology};
use crate::queue::MAX_BURST;
use crate::wire::MacAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The hand-off queues between the stages and the pools behind them
/// (`setup::pools`; the names go into the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandoffPlan {
    /// `--backend`.
    pub backend: Backend,
    /// `--topology`.
    pub topology: Topology,
    /// `--handoff`: in place (zero-copy) or through per-stage bursts.
    pub mode: Handoff,
    /// Packets per queue (`--depth`).
    pub depth: u32,
    /// Packets per hand-off batch (`--handoff-batch`): the TransferQueue's
    /// unit, and what an in-place stage takes per queue operation.
    pub batch: u16,
    /// Mbufs per socket's pool (`--mbufs`); None: sized by the plan.
    pub mbufs: Option<u32>,
}

impl HandoffPlan {
    pub fn new(o: &Options) -> HandoffPlan {
        HandoffPlan {
            backend: o.backend,
            topology: o.topology,
            mode: o.handoff,
            depth: o.depth,
            batch: o.handoff_batch.unwrap_or(match o.handoff {
                Handoff::RoundTrip | Handoff::ZeroCopy => {
                    o.burst.saturating_mul(2).min(MAX_BURST as u16)
                }
                Handoff::Copy => o.burst,
            }),
            mbufs: o.mbufs,
        }
    }

    /// `--handoff-batch` against `--burst` and `--handoff`: a batch holds
    /// at least one burst, and only the in-place stages fill more.
    pub fn check(&self, burst: u16) -> Result<(), String> {
        if self.batch < burst {
            return Err(format!(
                "--handoff-batch {} is below --burst {burst}: give at least the burst, or lower --burst",
                self.batch
            ));
        }
        if self.mode == Handoff::Copy && self.batch != burst {
            return Err(format!(
                "--handoff-batch {} needs --handoff round-trip or zero-copy: --handoff copy hands on one burst ({burst}) at a time",
                self.batch
            ));
        }
        Ok(())
    }

    /// The stages work in the queues' slots (`--handoff zero-copy`, or
    /// `round-trip`).
    pub fn zero_copy(&self) -> bool {
        matches!(self.mode, Handoff::ZeroCopy | Handoff::RoundTrip)
    }
}

/// How one stage moves packets, settled once per stage by the plan
/// ([`Plan::stage_modes`](super::Plan::stage_modes)): each mode has a loop
/// of its own, chosen when the lcore is wired, so no stage tests its mode
/// while it polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum StageMode {
    /// Through the stage's own bursts (`--handoff copy`).
    Bursts = 0,
    /// In the queues' slots (`--handoff zero-copy`), where all of a
    /// stage's packets go to one queue.
    InPlace = 1,
    /// The worker processes a unit where it lies and hands it back to the
    /// RX lcore that filled it, whose TX stage transmits from it.
    RoundTrip = 2,
    /// In the slots of several queues at once (`--handoff zero-copy`,
    /// where a stage hands packets to several: an RX lcore to several
    /// workers or classes, a worker to several TX lcores): each packet is
    /// written straight into its destination queue's lent slots.
    Scatter = 3,
}

/// Each role's [`StageMode`] (an RX stage's is `Bursts`, `InPlace` or
/// `Scatter`; a TX stage's is not `Scatter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageModes {
    pub rx: StageMode,
    pub worker: StageMode,
    pub tx: StageMode,
}

/// How each port is brought up (`setup::ports`, `setup::frames`).
#[derive(Debug, Clone, PartialEq)]
pub struct PortsPlan {
    /// RX / TX descriptors per queue asked for (`--rx-desc`, `--tx-desc`;
    /// the PMD may adjust them).
    pub rx_desc: u16,
    pub tx_desc: u16,
    /// `--max-frame`; None: each port's default MTU.
    pub max_frame: Option<u32>,
    /// Seconds to wait for links (and for a memif client's server).
    pub link_timeout: f64,
    /// The devices the EAL arguments ask for (a memif client's socket).
    pub devices: Vec<RequestedDevice>,
}

impl PortsPlan {
    pub fn new(o: &Options) -> PortsPlan {
        PortsPlan {
            rx_desc: o.rx_desc,
            tx_desc: o.tx_desc,
            max_frame: o.max_frame,
            link_timeout: o.link_timeout,
            devices: o.devices.clone(),
        }
    }
}

/// What the RX, worker and TX stages are built with (`forward`).
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    /// `--on-full`.
    pub on_full: OnFull,
    /// `--drop-after`, in microseconds.
    pub drop_after_us: u32,
    /// `--rx-rate`: million packets per second taken from the ports in all.
    pub rx_rate_mpps: Option<f64>,
    /// Workers rewrite the MACs (not `--no-mac-rewrite`).
    pub mac_rewrite: bool,
    /// `--peer-mac`: destination MAC of frames leaving a port.
    pub peer_mac: Vec<(u16, MacAddr)>,
    /// `--worker-cycles`: synthetic work per packet, in TSC cycles.
    pub worker_cycles: u32,
    /// `--debug-stall-worker`: (worker index, how long it sleeps once).
    pub stall_worker: Option<(u32, Duration)>,
    /// `--latency` with `--metrics`: TX stages publish their histograms.
    pub publish_latency: bool,
    /// `--routes`: the route file of L3 mode (its tables are built at
    /// start, `Plan::routes`).
    pub routes: Option<PathBuf>,
    /// `--max-routes`: routes per address family a route file may hold.
    pub max_routes: usize,
}

impl StagePlan {
    /// Per port, the MAC header a frame leaving it gets (its first 12
    /// bytes): dst the port's peer (the last `--peer-mac` for it, else
    /// 02:00:00:00:00:<port>), src the port's own MAC (`port_macs`, one
    /// per port), for up to `N` ports.
    pub fn mac_headers<const N: usize>(&self, port_macs: &[[u8; 6]]) -> [[u8; 12]; N] {
        let mut macs = [[0u8; 12]; N];
        for (i, own) in port_macs.iter().enumerate().take(N) {
            let peer = self.peer_mac.iter().rev().find(|(p, _)| *p as usize == i);
            let dst = peer.map_or([0x02, 0, 0, 0, 0, i as u8], |(_, mac)| mac.0);
            macs[i] = crate::wire::mac_header(&dst, own);
        }
        macs
    }

    pub fn new(o: &Options) -> StagePlan {
        StagePlan {
            on_full: o.on_full,
            drop_after_us: o.drop_after,
            rx_rate_mpps: o.rx_rate,
            mac_rewrite: !o.no_mac_rewrite,
            peer_mac: o.peer_mac.clone(),
            worker_cycles: o.worker_cycles,
            stall_worker: o
                .debug_stall_worker
                .map(|(idx, ms)| (idx, Duration::from_millis(ms as u64))),
            publish_latency: o.latency && o.metrics.is_some(),
            routes: o.routes.clone(),
            max_routes: o.max_routes,
        }
    }
}

/// `--capture`: how much each capture takes and how its writer runs (the
/// files themselves are opened before EAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapturePlan {
    /// Frames written per port (`--capture-count`).
    pub count: u64,
    /// `--debug-capture-stall`: the writer waits this long before its
    /// first copy.
    pub writer_stall: Option<Duration>,
}

impl CapturePlan {
    pub fn new(o: &Options) -> CapturePlan {
        CapturePlan {
            count: o.capture_count,
            writer_stall: o
                .debug_capture_stall
                .map(|ms| Duration::from_millis(ms as u64)),
        }
    }
}

/// What the stats thread does while forwarding (`report::live`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LivePlan {
    /// Seconds between two stats lines (`--stats-interval`; 0 = none).
    pub stats_interval: f64,
    /// `--duration`: seconds until the quit is requested.
    pub duration: Option<f64>,
    /// `--debug-exit-when-idle`: the quit is requested once packets were
    /// received and none came for this long (a test's finite input
    /// drained).
    pub exit_when_idle: Option<std::time::Duration>,
}

impl LivePlan {
    pub fn new(o: &Options) -> LivePlan {
        LivePlan {
            stats_interval: o.stats_interval,
            duration: o.duration,
            exit_when_idle: o
                .debug_exit_when_idle
                .map(|ms| std::time::Duration::from_millis(ms.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::cli::test_options as opts;

    #[test]
    fn parts_carry_the_options() {
        let o = opts(&[
            "--backend",
            "ring",
            "--handoff",
            "copy",
            "--depth",
            "512",
            "--on-full",
            "wait",
            "--no-mac-rewrite",
            "--debug-stall-worker",
            "1:250",
            "--debug-capture-stall",
            "40",
            "--latency",
            "--stats-interval",
            "0",
        ]);
        let h = HandoffPlan::new(&o);
        assert_eq!((h.backend, h.depth, h.mbufs), (Backend::Ring, 512, None));
        assert!(!h.zero_copy());
        assert!(HandoffPlan::new(&opts(&[])).zero_copy());
        let s = StagePlan::new(&o);
        assert_eq!(s.on_full, OnFull::Wait);
        assert!(!s.mac_rewrite);
        assert_eq!(s.stall_worker, Some((1, Duration::from_millis(250))));
        // Histograms are published for /metrics only when it is served.
        assert!(!s.publish_latency);
        let m = opts(&["--latency", "--metrics", "127.0.0.1:9470"]);
        assert!(StagePlan::new(&m).publish_latency);
        assert_eq!(
            CapturePlan::new(&o).writer_stall,
            Some(Duration::from_millis(40))
        );
        assert_eq!(LivePlan::new(&o).stats_interval, 0.0);
    }
}
