//! What a reload changes while forwarding (SIGHUP, `systemctl reload`:
//! `reload.rs` reads the `--config` file again): the MACs the workers
//! write (`--peer-mac`, `--no-mac-rewrite`), the RX stages' `--rx-rate`,
//! and every stage's `--on-full` / `--drop-after`.
//!
//! The reload publishes a new [`Settings`] into the run's
//! [`SettingsCell`] and bumps its epoch; each lcore compares the epoch
//! with the one it applied at the top of its loop (one load of a line
//! that is written only by a reload, as the port gates' one load per
//! pass), and where it moved, hands the new settings to its stages
//! (`LcoreWork::apply_settings`) before its next poll: between bursts, so no packet sees
//! half of a change, and no stage tests a setting per packet or per poll
//! beyond what it already did.

use super::rate::FullPolicy;
use crate::config::parts::StagePlan;
use crate::config::MAX_PORTS;
use crate::dpdk;
use crate::wire;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The settings a reload may change, as the stages use them.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Per output port, the frame's first 12 bytes the workers write:
    /// dst (the peer: `--peer-mac`, else 02:00:00:00:00:<port>), then src
    /// (the port's own MAC).
    pub macs: [[u8; 12]; MAX_PORTS],
    /// Workers rewrite the MACs (not `--no-mac-rewrite`).
    pub rewrite: bool,
    /// `--rx-rate`, million packets per second in all.
    pub rx_rate_mpps: Option<f64>,
    /// `--on-full` and `--drop-after`.
    pub policy: FullPolicy,
}

impl Settings {
    /// The settings `stages` asks for, on ports whose own MACs are
    /// `port_macs` (one per port).
    pub fn new(stages: &StagePlan, port_macs: &[[u8; 6]]) -> Settings {
        let mut macs = [[0u8; 12]; MAX_PORTS];
        for (i, own) in port_macs.iter().enumerate().take(MAX_PORTS) {
            // The last `--peer-mac` for the port, else 02:00:00:00:00:<port>.
            let peer = stages.peer_mac.iter().rev().find(|(p, _)| *p as usize == i);
            let dst = peer.map_or([0x02, 0, 0, 0, 0, i as u8], |(_, mac)| mac.0);
            macs[i] = wire::mac_header(&dst, own);
        }
        Settings {
            macs,
            rewrite: stages.mac_rewrite,
            rx_rate_mpps: stages.rx_rate_mpps,
            policy: FullPolicy::new(stages.on_full, stages.drop_after_us as u64, dpdk::tsc_hz()),
        }
    }
}

/// The run's current [`Settings`] and how many times they were replaced
/// (the epoch): written by a reload, read by every lcore.
#[derive(Debug)]
pub struct SettingsCell {
    /// Bumped (Release) after `current` is replaced.
    epoch: AtomicU64,
    current: Mutex<Arc<Settings>>,
}

impl SettingsCell {
    /// The cell holding the settings the run starts with (epoch 0).
    pub fn new(s: Settings) -> Arc<SettingsCell> {
        Arc::new(SettingsCell {
            epoch: AtomicU64::new(0),
            current: Mutex::new(Arc::new(s)),
        })
    }

    /// Replaces the settings; every lcore applies them before its next
    /// poll.
    pub fn publish(&self, s: Settings) {
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        *cur = Arc::new(s);
        self.epoch.fetch_add(1, Ordering::Release);
    }

    /// How many times the settings were replaced.
    #[inline(always)]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The current settings and their epoch.
    pub fn current(&self) -> (u64, Arc<Settings>) {
        let cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        (self.epoch.load(Ordering::Acquire), cur.clone())
    }
}
