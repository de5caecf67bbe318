//! Output files (`--stats-json`): opened before EAL starts, so a path that
//! cannot take the report is a usage error before any forwarding, and
//! written at the end without ever blocking for good.
//!
//! The open never blocks: `O_NONBLOCK` makes a FIFO nobody reads fail with
//! `ENXIO` instead of waiting for a reader. The file stays open for the
//! run (a FIFO's reader sees no EOF before the report). The final write to
//! a FIFO whose reader stops reading waits at most a bound, and less when
//! the caller's `interrupted` says so (a new stop signal).
//!
//! A file the open creates gets mode [`CREATE_MODE`] (less the umask:
//! never world-writable) and is removed again when the run ends before its
//! report is written (a usage error found after EAL, a failed start), so
//! a failed run leaves nothing behind. [`check_distinct`] refuses two
//! outputs that name one file (`--capture` twice, or a capture file that
//! is the `--stats-json` path) before anything is opened.

use std::fs::File;
use std::io::{ErrorKind, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why an output cannot be used: a usage error (exit 2), one line naming
/// the option, the path and what to change.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Two options (as the user wrote them) name one file.
    #[error("{first} and {second} name the same file: give each output its own path")]
    SameFile { first: String, second: String },
    /// `example`: a file path in it to suggest.
    #[error("{option} {} is a directory: give a file path{}", .path.display(), example_text(.example))]
    Directory {
        option: &'static str,
        path: PathBuf,
        example: Option<PathBuf>,
    },
    #[error("{option} {} is a FIFO nobody reads: start its reader first (e.g. `cat {} &`) or give a regular file", .path.display(), .path.display())]
    FifoWithoutReader { option: &'static str, path: PathBuf },
    #[error("{option} {}: its directory does not exist: create it or choose another path", .path.display())]
    NoDirectory { option: &'static str, path: PathBuf },
    #[error("{option} {} cannot be written ({source}): choose a writable path", .path.display())]
    NotWritable {
        option: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn example_text(example: &Option<PathBuf>) -> String {
    example
        .as_ref()
        .map(|e| format!(" (e.g. {})", e.display()))
        .unwrap_or_default()
}

/// Why the final write of an output file failed (exit 1).
#[derive(Debug, thiserror::Error)]
#[error("cannot write {option} {}: {problem}", .path.display())]
pub struct WriteError {
    pub option: &'static str,
    pub path: PathBuf,
    pub problem: WriteProblem,
}

/// What stopped a write.
#[derive(Debug, thiserror::Error)]
pub enum WriteProblem {
    #[error(transparent)]
    Io(std::io::Error),
    #[error("the file takes no more data")]
    Full,
    /// `interrupted()` turned true (a new stop signal).
    #[error("stopped by a signal with {written} of {total} bytes written")]
    Interrupted { written: usize, total: usize },
    /// The reader took nothing for `limit`.
    #[error("its reader took nothing for {} s ({written} of {total} bytes written): keep it reading", .limit.as_secs_f64())]
    Stalled {
        limit: Duration,
        written: usize,
        total: usize,
    },
}

/// How long the final write waits for a FIFO reader that takes nothing.
pub const WRITE_STALL_LIMIT: Duration = Duration::from_secs(10);

/// Mode of a `--stats-json` file tqfwd creates: the owner writes, others
/// may read (the figures are no secret); the umask applies on top.
pub const CREATE_MODE: u32 = 0o644;

/// What makes two paths one file: the device and inode of a file that
/// exists, or the device and inode of its directory and its name for one
/// not created yet (so `x`, `./x` and `dir/../x` are one file).
#[derive(PartialEq, Eq)]
enum FileId {
    Inode(u64, u64),
    Name(u64, u64, std::ffi::OsString),
}

fn file_id(path: &Path) -> Option<FileId> {
    if let Ok(m) = std::fs::metadata(path) {
        return Some(FileId::Inode(m.dev(), m.ino()));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let m = std::fs::metadata(dir).ok()?;
    Some(FileId::Name(
        m.dev(),
        m.ino(),
        path.file_name()?.to_os_string(),
    ))
}

/// Refuses two of `outputs` (each an option as the user wrote it, e.g.
/// `--capture 0:x.pcapng`, and its path) that name the same file: one
/// would silently overwrite the other. `Err` names both.
pub fn check_distinct(outputs: &[(String, &Path)]) -> Result<(), OutputError> {
    let ids: Vec<Option<FileId>> = outputs.iter().map(|(_, p)| file_id(p)).collect();
    for (i, a) in ids.iter().enumerate() {
        let Some(a) = a else { continue };
        if let Some(j) = ids[..i].iter().position(|b| b.as_ref() == Some(a)) {
            return Err(OutputError::SameFile {
                first: outputs[j].0.clone(),
                second: outputs[i].0.clone(),
            });
        }
    }
    Ok(())
}

/// An output file named by an option, open since before EAL.
pub struct OutputFile {
    option: &'static str,
    path: PathBuf,
    file: File,
    regular: bool,
    /// Created by the open: removed again when nothing was written.
    created: bool,
    written: bool,
}

impl OutputFile {
    /// Opens `path` for writing (created if missing, not truncated yet)
    /// without blocking. `Err` names `option`, the path and what to
    /// change.
    pub fn open(option: &'static str, path: &Path) -> Result<OutputFile, OutputError> {
        if path.is_dir() {
            return Err(OutputError::Directory {
                option,
                path: path.to_path_buf(),
                example: Some(path.join("stats.json")),
            });
        }
        let existed = path.symlink_metadata().is_ok();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .mode(CREATE_MODE)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|source| {
                let path = path.to_path_buf();
                match source.raw_os_error() {
                    Some(libc::ENXIO) => OutputError::FifoWithoutReader { option, path },
                    Some(libc::EISDIR) => OutputError::Directory {
                        option,
                        path,
                        example: None,
                    },
                    Some(libc::ENOENT) if !parent_exists(&path) => {
                        OutputError::NoDirectory { option, path }
                    }
                    _ => OutputError::NotWritable {
                        option,
                        path,
                        source,
                    },
                }
            })?;
        let regular = file.metadata().map(|m| m.is_file()).unwrap_or(false);
        Ok(OutputFile {
            option,
            path: path.to_path_buf(),
            file,
            regular,
            created: !existed,
            written: false,
        })
    }

    /// Replaces the contents with `data`. A reader that takes nothing for
    /// `stall_limit`, or `interrupted()` turning true while the write
    /// waits, ends it with an error; so does any write error.
    pub fn write_all_bounded(
        &mut self,
        data: &[u8],
        stall_limit: Duration,
        interrupted: impl Fn() -> bool,
    ) -> Result<(), WriteError> {
        self.written = true;
        let fail = |problem: WriteProblem| WriteError {
            option: self.option,
            path: self.path.clone(),
            problem,
        };
        if self.regular {
            self.file
                .set_len(0)
                .and_then(|_| self.file.rewind())
                .map_err(|e| fail(WriteProblem::Io(e)))?;
        }
        let mut off = 0;
        let mut progress = Instant::now();
        let total = data.len();
        while off < total {
            match self.file.write(&data[off..]) {
                Ok(0) => return Err(fail(WriteProblem::Full)),
                Ok(n) => {
                    off += n;
                    progress = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if interrupted() {
                        return Err(fail(WriteProblem::Interrupted {
                            written: off,
                            total,
                        }));
                    }
                    if progress.elapsed() >= stall_limit {
                        return Err(fail(WriteProblem::Stalled {
                            limit: stall_limit,
                            written: off,
                            total,
                        }));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(fail(WriteProblem::Io(e))),
            }
        }
        self.file.flush().map_err(|e| fail(WriteProblem::Io(e)))
    }
}

fn parent_exists(path: &Path) -> bool {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.is_dir(),
        _ => true,
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // A run that ended before its report leaves no empty file behind.
        if self.created && !self.written && self.regular {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tqfwd-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn mkfifo(p: &Path) {
        let st = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap();
        assert!(st.success());
    }

    #[test]
    fn bad_paths_are_one_line_naming_the_option() {
        let d = scratch("bad");
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        for (path, needle) in [
            (d.clone(), "is a directory: give a file path (e.g. "),
            (fifo.clone(), "FIFO nobody reads"),
            (d.join("missing/stats.json"), "does not exist"),
        ] {
            let e = OutputFile::open("--stats-json", &path)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.starts_with("--stats-json ") && e.contains(needle) && !e.contains('\n'),
                "{e}"
            );
        }
        assert_eq!(
            OutputFile::open("--stats-json", &fifo)
                .err()
                .unwrap()
                .to_string(),
            format!(
                "--stats-json {0} is a FIFO nobody reads: start its reader first (e.g. `cat {0} &`) or give a regular file",
                fifo.display()
            )
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn regular_file_replaced_and_unused_file_removed() {
        let d = scratch("reg");
        let p = d.join("out.json");
        drop(OutputFile::open("--stats-json", &p).unwrap());
        assert!(!p.exists(), "an unwritten new file is removed");
        std::fs::write(&p, "old contents that are longer").unwrap();
        let mut f = OutputFile::open("--stats-json", &p).unwrap();
        f.write_all_bounded(b"new", Duration::from_secs(1), || false)
            .unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn one_file_named_twice_is_refused() {
        let d = scratch("same");
        let a = d.join("a.pcapng");
        let other = d.join("b.pcapng");
        let dotted = d.join("sub/../a.pcapng");
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let named = |p: &Path, what: &str| (format!("{what} {}", p.display()), p.to_path_buf());
        // Not created yet, then existing (the inode decides).
        for create in [false, true] {
            if create {
                std::fs::write(&a, "x").unwrap();
            }
            let outs = [
                named(&a, "--capture 0:"),
                named(&other, "--capture 1:"),
                named(&dotted, "--stats-json"),
            ];
            let refs: Vec<(String, &Path)> =
                outs.iter().map(|(n, p)| (n.clone(), p.as_path())).collect();
            let e = check_distinct(&refs).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--capture 0: {}", a.display()))
                    && e.contains(&format!("and --stats-json {}", dotted.display())),
                "{e}"
            );
            assert!(check_distinct(&refs[..2]).is_ok());
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn stalled_fifo_reader_is_bounded_and_interruptible() {
        let d = scratch("fifo");
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        // A reader that never reads.
        let _reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let big = vec![b'x'; 4 << 20];
        let mut f = OutputFile::open("--stats-json", &fifo).unwrap();
        let t = Instant::now();
        let e = f
            .write_all_bounded(&big, Duration::from_millis(200), || false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "cannot write --stats-json {}: its reader took nothing for 0.2 s (",
                fifo.display()
            )) && e.ends_with(" of 4194304 bytes written): keep it reading"),
            "{e}"
        );
        assert!(t.elapsed() < Duration::from_secs(2));
        let e = f
            .write_all_bounded(&big, Duration::from_secs(60), || true)
            .unwrap_err()
            .to_string();
        assert!(e.contains(": stopped by a signal with "), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
