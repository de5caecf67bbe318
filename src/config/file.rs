//! The `--config FILE`: a TOML file whose keys are tqfwd's long option
//! names, turned into the command-line arguments they stand for.
//!
//! Every key is checked against clap's own definition of the option (so
//! the file and the command line cannot drift apart): flags take `true` or
//! `false`, single-valued options one number or string, repeatable options a
//! list (or one value). `eal` holds the EAL arguments. Each key's value is
//! validated on its own by the option's parser, so a bad value is reported
//! with the key, the file and the line. Errors are one line each.
//!
//! The file is read bounded ([`read_regular`]): only a regular file of at
//! most [`MAX_CONFIG_BYTES`]; a FIFO, a character device (`/dev/zero`) or
//! anything else that may never end is refused without reading, so a wrong
//! path is exit 2 naming the file, never a start that reads forever.
//!
//! Uses [`super::cli`] (the options' definitions), never the other way:
//! the two are merged by [`super::invocation`].

use crate::config::cli::{clap_error_line, Options};
use clap::{ArgAction, CommandFactory};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use toml::{Spanned, Value};

/// Options that make no sense in a file: they read files or print and exit.
const NOT_IN_FILE: &[&str] = &["config", "completions", "man", "help", "version"];

/// Largest `--config` file read: a file of options is a few KiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Why [`read_regular`] refused a file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Opening or reading failed.
    #[error("cannot read the file: {0}")]
    Io(#[source] std::io::Error),
    /// Not a regular file: what it is (`a FIFO`, `a character device`, …).
    #[error("is {0}, not a regular file")]
    NotRegular(&'static str),
    /// Longer than the limit (bytes).
    #[error("is larger than the limit of {}", size_text(*.0))]
    TooLarge(u64),
}

/// Why a `--config` file was refused: one line naming the file and, where
/// one is at fault, the key and its line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read, or is not a file to read.
    #[error("--config {path}{}", read_advice(.source))]
    Read { path: String, source: ReadError },
    #[error("--config {path}: not UTF-8 text: give a TOML file")]
    NotUtf8 { path: String },
    /// Not TOML; `line` where the parser stopped, when it says.
    #[error("config file {file}{}: {}", line_text(*.line), toml_message(.source))]
    Toml {
        file: String,
        line: Option<usize>,
        /// Boxed: the parser's error is large and rare.
        source: Box<toml::de::Error>,
    },
    /// A key the file must not have, or a value its option refuses.
    #[error("config file {file} line {line}: key '{key}': {problem}")]
    Key {
        file: String,
        line: usize,
        key: String,
        problem: KeyError,
    },
}

/// What is wrong with one key of a config file.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("unknown key (keys are the long option names of tqfwd -- --help without the dashes, e.g. burst = 64; EAL arguments go in eal = [...])")]
    Unknown,
    /// `eal` is not a list of strings: what it is.
    #[error("must be a list of strings (EAL arguments, e.g. eal = [\"-l\", \"0-1\", \"--vdev=net_null0\"]), not {0}")]
    EalNotStrings(&'static str),
    #[error("is a flag: write true or false, not {0}")]
    NotFlag(&'static str),
    #[error("takes a list of strings or numbers (repeatable option), not {0} in the list")]
    NotListItem(&'static str),
    #[error("takes one string or number, not {0}")]
    NotScalar(&'static str),
    /// The option's own parser refused the value.
    #[error("{}", clap_error_line(.0))]
    Value(#[source] clap::Error),
}

/// The end of a [`ConfigError::Read`] line: what to do about it.
fn read_advice(e: &ReadError) -> String {
    match e {
        ReadError::Io(_) => format!(": {e}"),
        ReadError::NotRegular(_) => format!(" {e}: give a TOML file"),
        ReadError::TooLarge(_) => {
            format!(" {e}: a config file holds a few options; check the path")
        }
    }
}

fn line_text(line: Option<usize>) -> String {
    line.map(|l| format!(" line {l}")).unwrap_or_default()
}

/// The first line of the TOML parser's message.
fn toml_message(e: &toml::de::Error) -> &str {
    e.message().lines().next().unwrap_or("not TOML").trim()
}

/// `1 MiB`, `256 MiB`, `1000 bytes`.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Reads the regular file at `path`, at most `limit` bytes. Anything else
/// (a FIFO, a character device such as `/dev/zero`, a socket, a
/// directory) is refused before any read: the open uses `O_NONBLOCK`, so
/// a FIFO without a writer does not block it, and the type is checked on
/// the open file (no window between a check and the open). A file longer
/// than `limit`, also one that grows while read, is refused; memory used
/// is at most `limit` plus one read.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind_of(meta.file_type())));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge(limit));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    <File as Read>::take(file, limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}

/// A loaded config file.
#[derive(Debug, Clone, Default)]
pub struct ConfigFile {
    /// `eal = [...]`: EAL arguments, in order.
    pub eal: Vec<String>,
    /// Per key (clap's argument id), the arguments it stands for
    /// (`--burst=64`), in file order.
    pub args: Vec<(String, Vec<String>)>,
}

impl ConfigFile {
    /// Reads and checks `path`. The error is one line naming the file and,
    /// where one is at fault, the key and its line.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.to_string_lossy();
        let bytes = read_regular(path, MAX_CONFIG_BYTES).map_err(|source| ConfigError::Read {
            path: shown.to_string(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::NotUtf8 {
            path: shown.to_string(),
        })?;
        Self::parse(&text, &shown)
    }

    /// Checks the TOML `text` of the file named `name` (for messages).
    pub fn parse(text: &str, name: &str) -> Result<Self, ConfigError> {
        let table: BTreeMap<String, Spanned<Value>> =
            toml::from_str(text).map_err(|source: toml::de::Error| ConfigError::Toml {
                file: name.to_string(),
                line: source.span().map(|s| line_of(text, s.start)),
                source: Box::new(source),
            })?;
        let mut keys: Vec<(&String, &Spanned<Value>)> = table.iter().collect();
        keys.sort_by_key(|(_, v)| v.span().start);
        let cmd = Options::command();
        let mut file = ConfigFile::default();
        for (key, value) in keys {
            let line = line_of(text, value.span().start);
            let fail = |problem: KeyError| ConfigError::Key {
                file: name.to_string(),
                line,
                key: key.clone(),
                problem,
            };
            if key == "eal" {
                file.eal = eal_args(value.get_ref()).map_err(fail)?;
                continue;
            }
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(key.as_str()))
                .filter(|a| !NOT_IN_FILE.contains(&a.get_id().as_str()))
                .ok_or_else(|| fail(KeyError::Unknown))?;
            let args = key_args(key, arg.get_action(), value.get_ref()).map_err(fail)?;
            // The option's own parser judges the value, alone.
            let argv = std::iter::once("tqfwd".to_string()).chain(args.iter().cloned());
            if let Err(e) = Options::command().try_get_matches_from(argv) {
                return Err(fail(KeyError::Value(e)));
            }
            file.args.push((arg.get_id().to_string(), args));
        }
        Ok(file)
    }

    /// The file's arguments, without those of the options for which
    /// `on_command_line(id)` holds (the command line replaces them).
    pub fn args_without(&self, on_command_line: impl Fn(&str) -> bool) -> Vec<String> {
        self.args
            .iter()
            .filter(|(id, _)| !on_command_line(id))
            .flat_map(|(_, a)| a.iter().cloned())
            .collect()
    }
}

/// 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A number or string as the command line would spell it.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "true/false",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "a list",
        Value::Table(_) => "a table",
    }
}

fn eal_args(v: &Value) -> Result<Vec<String>, KeyError> {
    let wrong = || KeyError::EalNotStrings(type_name(v));
    let Value::Array(items) = v else {
        return Err(wrong());
    };
    items
        .iter()
        .map(|i| match i {
            Value::String(_) | Value::Integer(_) => Ok(scalar(i).unwrap_or_default()),
            _ => Err(wrong()),
        })
        .collect()
}

/// The command-line arguments for `key = v`.
fn key_args(key: &str, action: &ArgAction, v: &Value) -> Result<Vec<String>, KeyError> {
    match action {
        ArgAction::SetTrue => match v {
            Value::Boolean(true) => Ok(vec![format!("--{key}")]),
            Value::Boolean(false) => Ok(Vec::new()),
            _ => Err(KeyError::NotFlag(type_name(v))),
        },
        ArgAction::Append => {
            let items: &[Value] = match v {
                Value::Array(a) => a,
                one => std::slice::from_ref(one),
            };
            items
                .iter()
                .map(|i| {
                    scalar(i)
                        .map(|s| format!("--{key}={s}"))
                        .ok_or_else(|| KeyError::NotListItem(type_name(i)))
                })
                .collect()
        }
        _ => scalar(v)
            .map(|s| vec![format!("--{key}={s}")])
            .ok_or_else(|| KeyError::NotScalar(type_name(v))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn keys_become_arguments() {
        let f = ConfigFile::parse(
            "eal = [\"-l\", \"0-1\", \"--vdev=net_null0\"]\nbackend = \"ring\"\nburst = 64\nlatency = true\nno-mac-rewrite = false\npeer-mac = [\"0=02:00:00:00:00:01\", \"1=02:00:00:00:00:02\"]\nclass = \"kv:udp,dst-port=8080:1\"\nstats-interval = 0.5\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(f.eal, s(&["-l", "0-1", "--vdev=net_null0"]));
        let all = f.args_without(|_| false);
        assert_eq!(
            all,
            s(&[
                "--backend=ring",
                "--burst=64",
                "--latency",
                "--peer-mac=0=02:00:00:00:00:01",
                "--peer-mac=1=02:00:00:00:00:02",
                "--class=kv:udp,dst-port=8080:1",
                "--stats-interval=0.5",
            ])
        );
    }

    #[test]
    fn bad_files_name_key_file_and_line() {
        for (text, key, line) in [
            ("burst = 64\nbogus = 1\n", "'bogus'", 2),
            ("burst = \"x\"\n", "'burst'", 1),
            ("\nburst = 0\n", "'burst'", 2),
            ("burst = [1, 2]\n", "'burst'", 1),
            ("latency = 1\n", "'latency'", 1),
            ("backend = true\n", "'backend'", 1),
            ("peer-mac = [\"1=zz\"]\n", "'peer-mac'", 1),
            ("eal = \"-l 0\"\n", "'eal'", 1),
            ("config = \"x.toml\"\n", "'config'", 1),
            ("man = true\n", "'man'", 1),
            ("[section]\nburst = 1\n", "'section'", 1),
        ] {
            let e = ConfigFile::parse(text, "dir/t.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(key) && e.contains("dir/t.toml") && e.contains(&format!("line {line}:")),
                "{text:?}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        let e = ConfigFile::parse("burst = \n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.toml line 1") && !e.contains('\n'), "{e}");
        // Whole lines, as the user sees them.
        for (text, line) in [
            (
                "burst = 64\nbogus = 1\n",
                "config file t.toml line 2: key 'bogus': unknown key (keys are the long option names of tqfwd -- --help without the dashes, e.g. burst = 64; EAL arguments go in eal = [...])",
            ),
            (
                "eal = 1\n",
                "config file t.toml line 1: key 'eal': must be a list of strings (EAL arguments, e.g. eal = [\"-l\", \"0-1\", \"--vdev=net_null0\"]), not an integer",
            ),
            (
                "latency = 1\n",
                "config file t.toml line 1: key 'latency': is a flag: write true or false, not an integer",
            ),
            (
                "peer-mac = [true]\n",
                "config file t.toml line 1: key 'peer-mac': takes a list of strings or numbers (repeatable option), not true/false in the list",
            ),
            (
                "burst = [1, 2]\n",
                "config file t.toml line 1: key 'burst': takes one string or number, not a list",
            ),
            (
                "burst = 0\n",
                "config file t.toml line 1: key 'burst': invalid value '0' for '--burst <N>': 0 is not in 1..=256",
            ),
        ] {
            assert_eq!(
                ConfigFile::parse(text, "t.toml").unwrap_err().to_string(),
                line
            );
        }
    }

    #[test]
    fn read_regular_refuses_what_may_never_end_and_what_is_too_large() {
        let dir = std::env::temp_dir().join(format!("tqfwd-read-bounds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let file = dir.join("f");
        std::fs::write(&file, [b'x'; 100]).unwrap();
        for (path, limit, needle) in [
            (
                Path::new("/dev/zero"),
                100,
                "is a character device, not a regular file",
            ),
            (fifo.as_path(), 100, "is a FIFO, not a regular file"),
            (dir.as_path(), 100, "is a directory, not a regular file"),
            (file.as_path(), 99, "is larger than the limit of 99 bytes"),
            (Path::new("/nonexistent/x"), 100, "cannot read the file"),
        ] {
            let e = read_regular(path, limit).unwrap_err().to_string();
            assert!(e.contains(needle), "{}: {e}", path.display());
        }
        // Exactly the limit is read.
        assert_eq!(read_regular(&file, 100).unwrap().len(), 100);
        // The config's own line names the option, the file and the limit.
        let big = dir.join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        for (path, needle) in [
            (
                Path::new("/dev/zero"),
                "is a character device, not a regular file: give a TOML file",
            ),
            (big.as_path(), "is larger than the limit of 1 MiB"),
        ] {
            let e = ConfigFile::load(path).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--config {} ", path.display()))
                    && e.contains(needle)
                    && !e.contains('\n'),
                "{e}"
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn shipped_presets_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("dpdk-config");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let f = ConfigFile::load(&p).unwrap_or_else(|e| panic!("{e}"));
                assert!(!f.eal.is_empty(), "{}: no eal", p.display());
                n += 1;
            }
        }
        assert!(n >= 6, "{n} presets");
    }
}
