//! What the command line asks for: its options merged with its `--config`
//! file, or the text `--help`, `--version`, `--completions` and `--man`
//! print instead, or the usage error (one line, exit 2) that refuses it.
//!
//! This module uses both [`super::cli`] (the options) and [`super::file`]
//! (the file, which itself uses `cli`), so neither of those imports the
//! other.

use super::cli::{clap_error_line, matches, parse_options, Options};
use super::file::{ConfigError, ConfigFile};
use super::parts::HandoffPlan;
use clap::{CommandFactory, FromArgMatches};

/// Why [`parse_invocation`] gave no options to run with.
#[derive(Debug)]
pub enum ParseOutcome {
    /// `--help`, `--version`, `--completions`, `--man`: print the text and
    /// exit 0.
    Help(String),
    /// A usage error: one line, exit 2.
    Usage(InvocationError),
}

/// A command line or `--config` file that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum InvocationError {
    /// clap refused the options: its first line, and where to look.
    #[error("{} (see tqfwd -- --help)", clap_error_line(.0))]
    Args(#[source] clap::Error),
    /// The `--config` file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `--man`: the page did not render.
    #[error("cannot render the man page: {0}")]
    Man(#[source] std::io::Error),
    /// Options that parse one by one but do not go together.
    #[error("{0}")]
    Combination(String),
}

impl From<clap::Error> for ParseOutcome {
    /// `--help` and `--version` are clap errors holding the text to print.
    fn from(e: clap::Error) -> Self {
        match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                ParseOutcome::Help(e.to_string())
            }
            _ => ParseOutcome::Usage(InvocationError::Args(e)),
        }
    }
}

impl From<ConfigError> for ParseOutcome {
    fn from(e: ConfigError) -> Self {
        ParseOutcome::Usage(e.into())
    }
}

/// What the command line asks for once a `--config` file is merged in.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The options: the file's, replaced by the command line's.
    pub options: Options,
    /// The file's `eal` arguments; they go before the command line's.
    pub file_eal: Vec<String>,
    /// The application arguments the options were parsed from: the
    /// file's keys as arguments, then the command line's.
    pub args: Vec<String>,
}

/// The keys (long option names) a reload applies while forwarding
/// (`reload.rs`): each is handed to the stages between bursts or read by
/// the thread that uses it. Any other key that changed refuses the whole
/// reload.
pub const LIVE_KEYS: &[&str] = &[
    "log-level",
    "peer-mac",
    "no-mac-rewrite",
    "rx-rate",
    "on-full",
    "drop-after",
    "stats-interval",
    "routes",
    "max-routes",
];

/// The keys whose values differ between two invocations of one command
/// line (the `--config` file read again), by long option name, in the
/// options' order; `eal` when the file's EAL arguments differ. Values are
/// compared as given (`--rx-rate 1` and `--rx-rate 1.0` differ).
///
/// ```
/// use tqfwd::config::invocation::{changed_keys, parse_invocation};
/// let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// let old = parse_invocation(&args(&["tqfwd", "--burst", "32"])).unwrap();
/// let new = parse_invocation(&args(&["tqfwd", "--burst", "64", "--no-mac-rewrite"])).unwrap();
/// assert_eq!(changed_keys(&old, &new), ["burst", "no-mac-rewrite"]);
/// assert!(changed_keys(&old, &old).is_empty());
/// ```
pub fn changed_keys(old: &Invocation, new: &Invocation) -> Vec<String> {
    let (Ok(a), Ok(b)) = (matches(&old.args), matches(&new.args)) else {
        // Both parsed once already; unreachable, and then nothing is
        // known to be the same.
        return vec!["(all)".into()];
    };
    let mut changed: Vec<String> = Options::command()
        .get_arguments()
        .filter(|arg| !arg.is_positional())
        .filter_map(|arg| {
            let id = arg.get_id().as_str();
            let raw = |m: &clap::ArgMatches| -> Vec<std::ffi::OsString> {
                m.try_get_raw(id)
                    .ok()
                    .flatten()
                    .map(|v| v.map(|x| x.to_os_string()).collect())
                    .unwrap_or_default()
            };
            (raw(&a) != raw(&b)).then(|| arg.get_long().unwrap_or(id).to_string())
        })
        .collect();
    if old.file_eal != new.file_eal {
        changed.push("eal".into());
    }
    changed
}

/// Parses the application options and merges the `--config` file into
/// them. `--completions` and `--man` come back as [`ParseOutcome::Help`]
/// with the text to print.
pub fn parse_invocation(app_args: &[String]) -> Result<Invocation, ParseOutcome> {
    let m = matches(app_args)?;
    let cli = Options::from_arg_matches(&m)?;
    if let Some(shell) = cli.completions {
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut Options::command(), "tqfwd", &mut out);
        return Err(ParseOutcome::Help(
            String::from_utf8_lossy(&out).into_owned(),
        ));
    }
    if cli.man {
        let mut out = Vec::new();
        // Section 8 (system administration): where the package installs it
        // and what the unit's `Documentation=man:tqfwd(8)` names.
        clap_mangen::Man::new(Options::command())
            .section("8")
            .manual("System Administration")
            .render(&mut out)
            .map_err(|e| ParseOutcome::Usage(InvocationError::Man(e)))?;
        return Err(ParseOutcome::Help(
            String::from_utf8_lossy(&out).into_owned(),
        ));
    }
    let Some(path) = cli.config.as_deref() else {
        check_combination(&cli)?;
        return Ok(Invocation {
            options: cli,
            file_eal: Vec::new(),
            args: app_args.to_vec(),
        });
    };
    let file = ConfigFile::load(path)?;
    let on_command_line =
        |id: &str| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    let mut merged = vec![app_args.first().cloned().unwrap_or_else(|| "tqfwd".into())];
    merged.extend(file.args_without(on_command_line));
    merged.extend(app_args.iter().skip(1).cloned());
    let options = parse_options(&merged)?;
    check_combination(&options)?;
    Ok(Invocation {
        options,
        file_eal: file.eal,
        args: merged,
    })
}

/// What clap cannot check option by option: `--handoff-batch` against
/// `--burst` and `--handoff`.
fn check_combination(o: &Options) -> Result<(), ParseOutcome> {
    HandoffPlan::new(o)
        .check(o.burst)
        .map_err(|e| ParseOutcome::Usage(InvocationError::Combination(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::cli::Backend;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn usage_line(args: &[&str]) -> String {
        match parse_invocation(&s(args)) {
            Err(ParseOutcome::Usage(e)) => e.to_string(),
            other => panic!("{args:?}: not a usage error: {other:?}"),
        }
    }

    /// A reload's diff: the file's keys changed and unchanged, the
    /// command line still replacing the file's value, the file's EAL
    /// arguments; and every live key is an option.
    #[test]
    fn changed_keys_of_a_file_read_again() {
        let dir = std::env::temp_dir().join(format!("tqfwd-cfg-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        let p = path.to_string_lossy().to_string();
        let args = s(&["tqfwd", "--config", &p, "--burst", "8"]);
        std::fs::write(&path, "eal = [\"--no-pci\"]\nrx-rate = 1\nburst = 64\n").unwrap();
        let old = parse_invocation(&args).unwrap();
        // burst is the command line's either way; rx-rate and eal change.
        std::fs::write(
            &path,
            "eal = [\"--no-pci\", \"-l\", \"0\"]\nrx-rate = 2\nburst = 32\npeer-mac = [\"1=02:00:00:00:00:09\"]\n",
        )
        .unwrap();
        let new = parse_invocation(&args).unwrap();
        assert_eq!(new.options.burst, 8);
        assert_eq!(changed_keys(&old, &new), s(&["rx-rate", "peer-mac", "eal"]));
        assert!(changed_keys(&new, &new).is_empty());
        let longs: Vec<String> = Options::command()
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
        for k in LIVE_KEYS {
            assert!(longs.iter().any(|l| l == k), "live key {k} is no option");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn command_line_replaces_file_values() {
        let dir = std::env::temp_dir().join(format!("tqfwd-cfg-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(
            &path,
            "eal = [\"--no-pci\"]\nbackend = \"ring\"\nburst = 64\nclass = [\"a:udp:1\", \"b:tcp:1\"]\npeer-mac = [\"0=02:00:00:00:00:01\"]\n",
        )
        .unwrap();
        let p = path.to_string_lossy().to_string();
        let inv = parse_invocation(&s(&[
            "tqfwd", "--config", &p, "--burst", "8", "--class", "c:udp:1",
        ]))
        .unwrap();
        assert_eq!(inv.options.backend, Backend::Ring);
        assert_eq!(inv.options.burst, 8);
        assert_eq!(inv.options.class.len(), 1);
        assert_eq!(inv.options.class[0].name, "c");
        assert_eq!(inv.options.peer_mac.len(), 1);
        assert_eq!(inv.file_eal, s(&["--no-pci"]));
        let missing = usage_line(&["tqfwd", "--config", "/nonexistent/x.toml"]);
        assert!(
            missing.starts_with("--config /nonexistent/x.toml: cannot read the file: "),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn outcomes() {
        for help in [
            &["tqfwd", "--help"][..],
            &["tqfwd", "--version"],
            &["tqfwd", "--man"],
        ] {
            assert!(
                matches!(parse_invocation(&s(help)), Err(ParseOutcome::Help(t)) if !t.is_empty()),
                "{help:?}"
            );
        }
        assert_eq!(
            usage_line(&["tqfwd", "--burst", "0"]),
            "invalid value '0' for '--burst <N>': 0 is not in 1..=256 (see tqfwd -- --help)"
        );
        assert_eq!(
            usage_line(&["tqfwd", "--bogus"]),
            "unexpected argument '--bogus' found (see tqfwd -- --help)"
        );
        assert_eq!(
            usage_line(&["tqfwd", "--class", "kv:udp"]),
            "invalid value 'kv:udp' for '--class <NAME:MATCH:LCORES>': 'kv:udp' is not NAME:MATCH:LCORES (e.g. kv:udp,dst-port=8080:2-3) (see tqfwd -- --help)"
        );
    }

    #[test]
    fn handoff_batch_must_fit_burst_and_handoff() {
        assert_eq!(
            usage_line(&["tqfwd", "--burst", "32", "--handoff-batch", "16"]),
            "--handoff-batch 16 is below --burst 32: give at least the burst, or lower --burst"
        );
        assert!(
            usage_line(&["tqfwd", "--handoff", "copy", "--handoff-batch", "64"])
                .starts_with("--handoff-batch 64 needs --handoff round-trip or zero-copy")
        );
        let batch = |args: &[&str]| match parse_invocation(&s(args)) {
            Ok(i) => HandoffPlan::new(&i.options).batch,
            Err(e) => panic!("{args:?}: {e:?}"),
        };
        assert_eq!(batch(&["tqfwd"]), 64);
        assert_eq!(batch(&["tqfwd", "--burst", "200"]), 256);
        assert_eq!(batch(&["tqfwd", "--handoff", "copy"]), 32);
        assert_eq!(batch(&["tqfwd", "--burst", "8", "--handoff-batch", "8"]), 8);
    }
}
