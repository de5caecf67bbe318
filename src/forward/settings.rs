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
//! beyond what it already did. Each lcore then acknowledges the epoch it
//! applied ([`SettingsCell::acknowledge`]): a reload that replaced the
//! route tables frees the old ones only once every lcore has
//! ([`SettingsCell::all_acknowledged`]), so no worker looks up in a freed
//! table.

use super::rate::FullPolicy;
use crate::config::parts::StagePlan;
use crate::config::MAX_PORTS;
use crate::dpdk;
use crate::setup::routes::Routes;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The settings a reload may change, as the stages use them.
#[derive(Clone)]
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
    /// L3 mode (`--routes`): every socket's route tables; the workers
    /// take their socket's.
    pub routes: Option<Arc<Routes>>,
}

impl Settings {
    /// The settings `stages` asks for, on ports whose own MACs are
    /// `port_macs` (one per port).
    pub fn new(stages: &StagePlan, port_macs: &[[u8; 6]]) -> Settings {
        let macs = stages.mac_headers(port_macs);
        Settings {
            macs,
            rewrite: stages.mac_rewrite,
            rx_rate_mpps: stages.rx_rate_mpps,
            policy: FullPolicy::new(stages.on_full, stages.drop_after_us as u64, dpdk::tsc_hz()),
            routes: None,
        }
    }
}

/// The run's current [`Settings`] and how many times they were replaced
/// (the epoch): written by a reload, read by every lcore; and the epoch
/// each lcore has applied (its acknowledgement), so that a reload knows
/// when no lcore still uses what it replaced (the route tables it then
/// frees).
pub struct SettingsCell {
    /// Bumped (Release) after `current` is replaced.
    epoch: AtomicU64,
    current: Mutex<Arc<Settings>>,
    /// Per lcore (its slot, `LcoreWork`): the epoch whose settings its
    /// stages hold (written by that lcore after applying them, Release);
    /// [`GONE`] once its loop has ended.
    acks: Box<[CachePadded<AtomicU64>]>,
}

/// An lcore's acknowledgement once its loop has ended: it holds nothing
/// it reads any more.
pub const GONE: u64 = u64::MAX;

impl SettingsCell {
    /// The cell holding the settings the run starts with (epoch 0), for
    /// `lcores` lcores (which hold epoch 0's).
    pub fn new(s: Settings, lcores: usize) -> Arc<SettingsCell> {
        Arc::new(SettingsCell {
            epoch: AtomicU64::new(0),
            current: Mutex::new(Arc::new(s)),
            acks: (0..lcores)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        })
    }

    /// Replaces the settings; every lcore applies them before its next
    /// poll. Returns the new epoch.
    pub fn publish(&self, s: Settings) -> u64 {
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        *cur = Arc::new(s);
        self.epoch.fetch_add(1, Ordering::Release) + 1
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

    /// Lcore `slot` holds the settings of `epoch` and nothing older
    /// (called by that lcore once its stages have dropped what they held).
    pub fn acknowledge(&self, slot: usize, epoch: u64) {
        if let Some(a) = self.acks.get(slot) {
            a.store(epoch, Ordering::Release);
        }
    }

    /// Every lcore has applied `epoch` (or a later one) or has ended.
    pub fn all_acknowledged(&self, epoch: u64) -> bool {
        self.acks.iter().all(|a| a.load(Ordering::Acquire) >= epoch)
    }
}
