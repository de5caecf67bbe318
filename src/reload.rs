//! Reload (SIGHUP, `systemctl reload tqfwd`): reads the `--config` file
//! again, merged with the same command line (whose options still replace
//! the file's), and applies what may change while forwarding
//! (`config::invocation::LIVE_KEYS`): `log-level` at once,
//! `stats-interval` from the stats thread's next pass, and `peer-mac`,
//! `no-mac-rewrite`, `rx-rate`, `on-full`, `drop-after` handed to every
//! lcore's stages between bursts (`forward::settings`). Nothing is
//! stopped or restarted: no packet is lost or reordered by a reload.
//!
//! L3 mode (`--routes`): every reload reads the route file again (also
//! when its path is unchanged; started with `--routes` and no
//! `--config`, the route file alone) and builds its tables here, on the
//! reload thread, never on an lcore; the workers take them between
//! polls with the other settings, and the tables they replace are freed
//! here once every lcore has acknowledged the new epoch
//! (`SettingsCell::all_acknowledged`), so no lookup reads a freed table.
//!
//! Refused as a whole, with one log line, and the run goes on unchanged:
//! a file that no longer parses (the parse error), a route file that
//! does not load (its file:line), a reload that adds or removes `routes`
//! (L2 ↔ L3), or a change to any other key (the lcores, ports, EAL
//! arguments, depth, backend, ...: the line names each changed key).
//! Started without `--config` or `--routes`, a reload logs that there is
//! nothing to reload.
//!
//! systemd (`Type=notify`) hears `RELOADING=1` when a reload starts and
//! `READY=1` when it is done, applied or refused.

use crate::config::cli::Options;
use crate::config::invocation::{
    changed_keys, parse_invocation, Invocation, ParseOutcome, LIVE_KEYS,
};
use crate::config::parts::StagePlan;
use crate::config::routes::{self, Limits};
use crate::dpdk::signal;
use crate::forward::settings::{Settings, SettingsCell};
use crate::report::logging;
use crate::report::stats::Totals;
use crate::report::telemetry::Live;
use crate::setup;
use crate::setup::routes::Routes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

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
    /// L3 mode: where route tables are built (each worker's socket).
    worker_sockets: Vec<i32>,
    /// Replaced route tables some lcore may still hold (it has not
    /// acknowledged the epoch that replaced them): freed here once every
    /// lcore has.
    retired: Vec<(u64, Arc<Routes>)>,
}

/// How long a reload waits for every lcore to take new route tables
/// before it leaves the old ones to a later pass.
const RETIRE_WAIT: Duration = Duration::from_secs(2);

/// What one reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Started without `--config`.
    NoFile,
    /// The file parses to the same options.
    Unchanged,
    /// These keys changed and are applied (with the route tables, their
    /// reload line).
    Applied(Vec<String>, Option<String>),
    /// Only the route file was read again and applied (the line).
    Routes(String),
    /// Refused: the route file (the error naming its line), or a change
    /// between L2 and L3 mode.
    RoutesRefused(String),
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
        worker_sockets: Vec<i32>,
    ) -> Reloader {
        Reloader {
            app_args: source.app_args,
            running: source.invocation,
            settings,
            port_macs,
            worker_sockets,
            retired: Vec::new(),
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
            self.free_retired();
            std::thread::sleep(POLL);
        }
    }

    /// Frees the replaced route tables every lcore has let go of.
    fn free_retired(&mut self) {
        let settings = &self.settings;
        self.retired
            .retain(|(epoch, _)| !settings.all_acknowledged(*epoch));
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
            Outcome::Routes(line) if file.is_empty() => log::info!("reload: {line}"),
            Outcome::Routes(line) => log::info!("reload {file}: {line}"),
            Outcome::RoutesRefused(e) => log::error!("reload refused, nothing changed: {e}"),
            Outcome::NoFile => {
                log::info!("SIGHUP: started without --config: nothing to reload; forwarding goes on")
            }
            Outcome::Unchanged => log::info!("reload {file}: nothing changed"),
            Outcome::Applied(keys, None) => {
                log::info!("reload {file}: applied {}", keys.join(", "))
            }
            Outcome::Applied(keys, Some(line)) => {
                log::info!("reload {file}: applied {}; {line}", keys.join(", "))
            }
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
        let routes_running = self.running.options.routes.is_some();
        if self.running.options.config.is_none() {
            if !routes_running {
                return Outcome::NoFile;
            }
            // Started with --routes alone: the route file is what there
            // is to read again.
            let o = self.running.options.clone();
            return match self.build_routes(&o, live) {
                Ok((routes, line)) => {
                    self.publish(&o, Some(routes));
                    Outcome::Routes(line)
                }
                Err(e) => Outcome::RoutesRefused(e),
            };
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
        let fixed: Vec<String> = changed
            .iter()
            .filter(|k| !LIVE_KEYS.contains(&k.as_str()))
            .cloned()
            .collect();
        if !fixed.is_empty() {
            return Outcome::Fixed(fixed);
        }
        let o = &new.options;
        if o.routes.is_some() != routes_running {
            return Outcome::RoutesRefused(format!(
                "'routes' cannot be {} while forwarding (L2 and L3 mode are chosen at start): restart tqfwd to change the mode",
                if routes_running { "removed" } else { "added" }
            ));
        }
        // The route file is read again even where its path is unchanged;
        // a bad line refuses the whole reload.
        let built = if routes_running {
            match self.build_routes(o, live) {
                Ok(b) => Some(b),
                Err(e) => return Outcome::RoutesRefused(e),
            }
        } else {
            None
        };
        if changed.is_empty() && built.is_none() {
            return Outcome::Unchanged;
        }
        let has = |key: &str| changed.iter().any(|k| k == key);
        let (routes, line) = match built {
            Some((r, line)) => (Some(r), Some(line)),
            None => (None, None),
        };
        if routes.is_some() || STAGE_KEYS.iter().any(|k| has(k)) {
            self.publish(o, routes);
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
        if changed.is_empty() {
            return Outcome::Routes(line.unwrap_or_default());
        }
        Outcome::Applied(changed, line)
    }

    /// Publishes the stages' settings of `o`, with `routes` (else the
    /// running ones); the route tables they replace are retired, and
    /// freed once every lcore has taken the new ones.
    fn publish(&mut self, o: &Options, routes: Option<Arc<Routes>>) {
        let (_, running) = self.settings.current();
        let replaced = routes.is_some();
        let old = running.routes.clone();
        let epoch = self.settings.publish(Settings {
            routes: routes.or_else(|| running.routes.clone()),
            ..Settings::new(&StagePlan::new(o), &self.port_macs)
        });
        drop(running);
        if let (true, Some(old)) = (replaced, old) {
            let until = std::time::Instant::now() + RETIRE_WAIT;
            while !self.settings.all_acknowledged(epoch) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.retired.push((epoch, old));
            self.free_retired();
        }
    }

    /// Reads `o`'s route file and builds its tables on every worker's
    /// socket (on this thread, never an lcore); returns them and the
    /// reload line (routes added, removed and changed against the running
    /// table, the build time, and what was forwarded meanwhile), or the
    /// refusal's line.
    fn build_routes(&mut self, o: &Options, live: &Live) -> Result<(Arc<Routes>, String), String> {
        let Some(path) = o.routes.as_deref() else {
            return Err("no route file".into());
        };
        let limits = Limits {
            max_routes: o.max_routes,
        };
        let before = Totals::collect(live.lcores.iter().map(|(_, _, c)| &**c)).tx;
        let started = Instant::now();
        let table = routes::load(path, self.port_macs.len(), limits).map_err(|e| format!("{e}"))?;
        let stages = StagePlan::new(o);
        let macs = stages.mac_headers(&self.port_macs);
        let built = setup::routes::build(Arc::new(table), &self.worker_sockets, &macs)
            .map_err(|e| format!("{e}"))?;
        let secs = started.elapsed().as_secs_f64();
        let after = Totals::collect(live.lcores.iter().map(|(_, _, c)| &**c)).tx;
        let (_, running) = self.settings.current();
        let diff = running
            .routes
            .as_ref()
            .map(|r| r.table.diff(&built.table))
            .unwrap_or_default();
        let line = format!(
            "routes {}: {} added, {} removed, {} changed ({} IPv4, {} IPv6), built in {:.3} s, {:.2} Mpps forwarded meanwhile",
            built.table.source,
            diff.added,
            diff.removed,
            diff.changed,
            built.table.len_v4(),
            built.table.len_v6(),
            secs,
            after.saturating_sub(before) as f64 / secs.max(1e-9) / 1e6,
        );
        Ok((Arc::new(built), line))
    }
}
