//! tqfwd's logger: env_logger's format with millisecond UTC timestamps,
//! filtered by `RUST_LOG` (default `info`) until an operator sets one level
//! for everything at run time (`/tqfwd/log_level,LEVEL`). DPDK's own log
//! (EAL, PMDs) is separate and set with EAL's `--log-level`.

use log::{LevelFilter, Log, Metadata, Record};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The level set at run time, as `LevelFilter as usize + 1`; 0 = none set
/// (`RUST_LOG` decides).
static OVERRIDE: AtomicUsize = AtomicUsize::new(0);

static LOGGER: OnceLock<Logger> = OnceLock::new();

struct Logger {
    /// Formats and writes every record it is given.
    writer: env_logger::Logger,
    /// `RUST_LOG`'s filter (per-module directives included).
    filter: env_logger::Logger,
}

const LEVELS: [LevelFilter; 6] = [
    LevelFilter::Off,
    LevelFilter::Error,
    LevelFilter::Warn,
    LevelFilter::Info,
    LevelFilter::Debug,
    LevelFilter::Trace,
];

fn override_level() -> Option<LevelFilter> {
    match OVERRIDE.load(Ordering::Relaxed) {
        0 => None,
        n => LEVELS.get(n - 1).copied(),
    }
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        match override_level() {
            Some(level) => m.level() <= level,
            None => self.filter.enabled(m),
        }
    }

    fn log(&self, record: &Record) {
        if self.enabled(record.metadata()) {
            self.writer.log(record);
        }
    }

    fn flush(&self) {
        self.writer.flush();
    }
}

/// Installs the logger (once per process; later calls do nothing).
pub fn init() {
    let env = env_logger::Env::default().default_filter_or("info");
    let filter = env_logger::Builder::from_env(env).build();
    let writer = env_logger::Builder::new()
        .filter_level(LevelFilter::Trace)
        .format_timestamp_millis()
        .build();
    let max = filter.filter();
    if LOGGER.set(Logger { writer, filter }).is_ok() {
        if let Some(l) = LOGGER.get() {
            if log::set_logger(l).is_ok() {
                log::set_max_level(max);
            }
        }
    }
}

/// A log level [`set_level`] does not know (the name as given, trimmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("log level '{0}' is not one of off, error, warn, info, debug, trace")]
pub struct UnknownLevel(pub String);

/// Sets one level for all of tqfwd's log (`off`, `error`, `warn`, `info`,
/// `debug`, `trace`) from telemetry's `/tqfwd/log_level`; returns its name.
pub fn set_level(name: &str) -> Result<&'static str, UnknownLevel> {
    set_level_from(name, "telemetry /tqfwd/log_level")
}

/// As [`set_level`], the log line naming `source` (what set it).
pub fn set_level_from(name: &str, source: &str) -> Result<&'static str, UnknownLevel> {
    let name = name.trim();
    let (i, level) = LEVELS
        .iter()
        .enumerate()
        .find(|(_, l)| l.as_str().eq_ignore_ascii_case(name))
        .ok_or_else(|| UnknownLevel(name.to_string()))?;
    OVERRIDE.store(i + 1, Ordering::Relaxed);
    log::set_max_level(*level);
    log::warn!(
        "log level set to {} ({source})",
        level.as_str().to_ascii_lowercase()
    );
    Ok(LEVELS[i].as_str())
}

/// Gives the level back to `RUST_LOG`'s filter (a reloaded `--config` no
/// longer sets `log-level`).
pub fn clear_level(source: &str) {
    if OVERRIDE.swap(0, Ordering::Relaxed) != 0 {
        if let Some(l) = LOGGER.get() {
            log::set_max_level(l.filter.filter());
        }
        log::warn!("log level back to RUST_LOG's filter ({source})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_refuse() {
        assert_eq!(
            set_level(" verbose").unwrap_err().to_string(),
            "log level 'verbose' is not one of off, error, warn, info, debug, trace"
        );
        assert_eq!(
            OVERRIDE.load(Ordering::Relaxed),
            0,
            "a refused level changes nothing"
        );
        assert_eq!(set_level(" DEBUG ").unwrap(), "DEBUG");
        assert_eq!(override_level(), Some(LevelFilter::Debug));
        OVERRIDE.store(0, Ordering::Relaxed);
    }
}
