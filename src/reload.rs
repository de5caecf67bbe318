//! Reload (SIGHUP, `systemctl reload tqfwd`): reads the `--config` file
//! again, merged with the same command line (whose options still replace
//! the file's), and applies what may change while forwarding
//! (`config::invocation::LIVE_KEYS`): `log-level` at once,
//! `stats-interval` from the stats thread's next pass, and `peer-mac`,
//! `no-mac-rewrite`, `rx-rate`, `on-full`, `drop-after` handed to every
//! lcore's stages between bursts (`forward::settings`). Nothing is
//! stopped or restarted: no packet is lost or reordered by a reload.
//!
//! Refused as a whole, with one log line, and the run goes on unchanged:
//! a file that no longer parses (the parse error), or a change to any
//! other key (the lcores, ports, EAL arguments, depth, backend, ...:
//! the line names each changed key). Started without `--config`, a
//! reload logs that there is nothing to reload.
//!
//! systemd (`Type=notify`) hears `RELOADING=1` when a reload starts and
//! `READY=1` when it is done, applied or refused.

use crate::config::invocation::{
    changed_keys, parse_invocation, Invocation, ParseOutcome, LIVE_KEYS,
};
use crate::config::parts::StagePlan;
use crate::dpdk::signal;
use crate::forward::settings::{Settings, SettingsCell};
use crate::report::logging;
use crate::report::telemetry::Live;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the reload thread looks for a SIGHUP.
const POLL: Duration = Duration::from_millis(50);

/// The keys of `LIVE_KEYS` that the stages take (`forward::settings`).
const STAGE_KEYS: &[&str] = &[
    "peer-mac",
    "no-mac-rewrite",
    "rx-rate",
    "on-full",
    "drop-after",
];

/// The command line a reload merges the file with: its application half,
/// and the invocation parsed from it at start.
pub struct ReloadSource {
    pub app_args: Vec<String>,
    pub invocation: Invocation,
}

/// What a reload needs: the command line to merge the file with, the
/// invocation running now, where the stages' settings go, and the
/// ports' own MACs (the source of the frames' MAC header).
pub struct Reloader {
    app_args: Vec<String>,
    running: Invocation,
    settings: Arc<SettingsCell>,
    port_macs: Vec<[u8; 6]>,
}

/// What one reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Started without `--config`.
    NoFile,
    /// The file parses to the same options.
    Unchanged,
    /// These keys changed and are applied.
    Applied(Vec<String>),
    /// Refused: the file does not parse (the error).
    Unparsable(String),
    /// Refused: keys that cannot change while forwarding changed (their
    /// names).
    Fixed(Vec<String>),
}

impl Reloader {
    /// Reloads what `source` ran with into `settings`, on ports whose
    /// own MACs are `port_macs`.
    pub fn new(
        source: ReloadSource,
        settings: Arc<SettingsCell>,
        port_macs: Vec<[u8; 6]>,
    ) -> Reloader {
        Reloader {
            app_args: source.app_args,
            running: source.invocation,
            settings,
            port_macs,
        }
    }

    /// Until `finished`: one reload per SIGHUP (several before one is
    /// taken make one).
    pub fn serve(&mut self, finished: &AtomicBool, live: &Live) {
        while !finished.load(Ordering::Acquire) {
            if signal::take_reload_request() && !signal::quit_requested() {
                live.notify.reloading();
                self.reload(live);
                live.notify.ready();
            }
            std::thread::sleep(POLL);
        }
    }

    /// Reads the file again and applies or refuses it (module doc); logs
    /// one line saying which.
    pub fn reload(&mut self, live: &Live) -> Outcome {
        let outcome = self.apply(live);
        let file = self
            .running
            .options
            .config
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        match &outcome {
            Outcome::NoFile => {
                log::info!("SIGHUP: started without --config: nothing to reload; forwarding goes on")
            }
            Outcome::Unchanged => log::info!("reload {file}: nothing changed"),
            Outcome::Applied(keys) => log::info!("reload {file}: applied {}", keys.join(", ")),
            Outcome::Unparsable(e) => {
                log::error!("reload refused, nothing changed: {e}")
            }
            Outcome::Fixed(keys) => log::warn!(
                "reload {file} refused, nothing changed: {} cannot change while forwarding (restart tqfwd to apply)",
                keys.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ")
            ),
        }
        outcome
    }

    fn apply(&mut self, live: &Live) -> Outcome {
        if self.running.options.config.is_none() {
            return Outcome::NoFile;
        }
        let new = match parse_invocation(&self.app_args) {
            Ok(new) => new,
            Err(ParseOutcome::Usage(e)) => return Outcome::Unparsable(e.to_string()),
            // `--help` and the like are command-line options, refused at
            // start; the file cannot hold them.
            Err(ParseOutcome::Help(_)) => {
                return Outcome::Unparsable("the command line asks for help text".into())
            }
        };
        let changed = changed_keys(&self.running, &new);
        if changed.is_empty() {
            return Outcome::Unchanged;
        }
        let fixed: Vec<String> = changed
            .iter()
            .filter(|k| !LIVE_KEYS.contains(&k.as_str()))
            .cloned()
            .collect();
        if !fixed.is_empty() {
            return Outcome::Fixed(fixed);
        }
        let o = &new.options;
        let has = |key: &str| changed.iter().any(|k| k == key);
        if STAGE_KEYS.iter().any(|k| has(k)) {
            self.settings
                .publish(Settings::new(&StagePlan::new(o), &self.port_macs));
        }
        if has("stats-interval") {
            live.stats_interval
                .store(o.stats_interval.to_bits(), Ordering::Relaxed);
        }
        if has("log-level") {
            match o.log_level.as_deref() {
                Some(level) => {
                    if let Err(e) = logging::set_level_from(level, "reload") {
                        log::warn!("reload: {e}");
                    }
                }
                None => logging::clear_level("reload"),
            }
        }
        self.running = new;
        Outcome::Applied(changed)
    }
}
