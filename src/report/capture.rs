//! `--capture PORT:FILE`: the capture files (opened before EAL, so a path
//! that cannot be written is a usage error before anything runs), the
//! counters each capture shares between its RX lcores and its writer, and
//! the writer thread, which takes the frame copies off their rings and
//! writes them as pcapng (one interface per file, named after the port,
//! nanosecond timestamps converted from the RX TSC).
//!
//! The writer never forwards: it runs beside the lcores like the stats
//! thread, on a CPU no lcore uses where there is one, else at nice 19
//! ([`place_writer`]). At the end it drains every ring, so no copy is
//! left unread.
//!
//! Files: opened before EAL (a path that cannot be written fails first)
//! but neither truncated nor written until the writer starts, which is
//! when forwarding starts ([`writer_thread`]); a run that ends before
//! that (a usage error found after EAL, such as a port that does not
//! exist) leaves an existing file as it was and removes a file its open
//! created. What exists and is not a regular file (a FIFO, a device) is
//! refused without being opened. A created file has mode
//! [`CREATE_MODE`]: frames can carry anything, so not world-readable.

use crate::counters::capture::CaptureCounters;
use crate::dpdk::capture::CaptureReceiver;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use serde::Serialize;
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Records the writer takes from one capture per pass (then the next
/// capture's turn).
const DRAIN_MAX: usize = 256;

/// How long the writer sleeps when every ring was empty.
const IDLE_SLEEP: Duration = Duration::from_micros(200);

/// Mode of a capture file tqfwd creates (the umask applies on top).
pub const CREATE_MODE: u32 = 0o640;

/// A `--capture` file, open since before EAL, not yet truncated: dropping
/// it before [`CaptureFile::start`] removes it if the open created it.
pub struct CaptureFile {
    pub port: u16,
    pub path: PathBuf,
    file: Option<File>,
    created: bool,
}

impl CaptureFile {
    /// The point of no return: empties the file and hands it over.
    fn start(mut self) -> std::io::Result<File> {
        let file = self.file.take().expect("a capture file starts once");
        file.set_len(0)?;
        Ok(file)
    }
}

impl Drop for CaptureFile {
    fn drop(&mut self) {
        if self.file.is_some() && self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A `--capture` file that cannot be written: a usage error (exit 2), one
/// line naming the option, the file and what to change.
#[derive(Debug, thiserror::Error)]
pub enum CaptureFileError {
    #[error("--capture {port}:{} is a directory: give a file path (e.g. {})", .path.display(), .path.join("port.pcapng").display())]
    Directory { port: u16, path: PathBuf },
    /// A device, a FIFO, a socket: not opened (or closed again).
    #[error("--capture {port}:{} is not a regular file: give a regular file path", .path.display())]
    NotRegular { port: u16, path: PathBuf },
    #[error("--capture {port}:{} cannot be written ({source}): choose a writable path", .path.display())]
    NotWritable {
        port: u16,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Opens every `--capture` file (created or truncated).
pub fn open_files(capture: &[(u16, PathBuf)]) -> Result<Vec<CaptureFile>, CaptureFileError> {
    capture
        .iter()
        .map(|(port, path)| open_file(*port, path))
        .collect()
}

fn open_file(port: u16, path: &Path) -> Result<CaptureFile, CaptureFileError> {
    let not_regular = || CaptureFileError::NotRegular {
        port,
        path: path.to_path_buf(),
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(CaptureFileError::Directory {
                port,
                path: path.to_path_buf(),
            })
        }
        // A device or FIFO is not opened at all: opening one for writing
        // can have effects of its own.
        Ok(m) if !m.is_file() => return Err(not_regular()),
        _ => {}
    }
    let cannot = |source: std::io::Error| CaptureFileError::NotWritable {
        port,
        path: path.to_path_buf(),
        source,
    };
    // O_NONBLOCK: should a FIFO appear after the check, the open fails at
    // once instead of blocking the start; the type is checked again on
    // the open file below.
    let open = |create: bool| {
        let mut o = std::fs::OpenOptions::new();
        o.write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC);
        if create {
            o.create_new(true).mode(CREATE_MODE);
        }
        o.open(path)
    };
    let (file, created) = match open(true) {
        Ok(f) => (f, true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            (open(false).map_err(cannot)?, false)
        }
        Err(e) => return Err(cannot(e)),
    };
    let capture = CaptureFile {
        port,
        path: path.to_path_buf(),
        file: Some(file),
        created,
    };
    let regular = capture
        .file
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .is_some_and(|m| m.is_file());
    if !regular {
        return Err(not_regular());
    }
    Ok(capture)
}

/// One capture as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureReport {
    pub port: u16,
    pub name: String,
    pub file: String,
    pub count: u64,
    pub written: u64,
    pub capture_dropped: u64,
    /// Why writing stopped early (a write error), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One capture's writer side: its ring, its file, its counters.
pub struct Capture {
    pub port: u16,
    pub name: String,
    pub path: PathBuf,
    pub counters: Arc<CaptureCounters>,
    pub receiver: CaptureReceiver,
    /// The file until the writer starts.
    pending: Option<CaptureFile>,
    file: Option<PcapNgWriter<BufWriter<File>>>,
    error: Option<String>,
}

impl Capture {
    /// One capture's writer side; the file is left as it is until
    /// [`Capture::start`].
    pub fn new(
        file: CaptureFile,
        name: String,
        counters: Arc<CaptureCounters>,
        receiver: CaptureReceiver,
    ) -> Capture {
        Capture {
            port: file.port,
            name,
            path: file.path.clone(),
            counters,
            receiver,
            pending: Some(file),
            file: None,
            error: None,
        }
    }

    /// Empties the file and starts the pcapng (section header, then one
    /// interface named after the port with nanosecond timestamps).
    fn start(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let idb = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Owned(self.name.clone())),
                // The EPB timestamps below are nanoseconds.
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        };
        match pending
            .start()
            .map_err(pcap_file::PcapError::IoError)
            .and_then(|f| PcapNgWriter::new(BufWriter::with_capacity(1 << 16, f)))
            .and_then(|mut w| w.write_pcapng_block(idb).map(|_| w))
        {
            Ok(w) => self.file = Some(w),
            Err(e) => self.fail(e.to_string()),
        }
    }

    fn fail(&mut self, e: String) {
        log::warn!(
            "--capture {}:{}: {e}; the rest of this capture is discarded",
            self.port,
            self.path.display()
        );
        self.error = Some(e);
        self.file = None;
    }

    /// Writes what the rings hold (up to [`DRAIN_MAX`] frames); returns
    /// how many.
    fn drain(&mut self, clock: &WallClock) -> usize {
        let mut written = 0u64;
        let mut err = None;
        let file = &mut self.file;
        let n = self.receiver.drain(DRAIN_MAX, |frame, len, tsc| {
            let Some(w) = file.as_mut() else { return };
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: clock.at(tsc),
                original_len: len,
                data: Cow::Borrowed(frame),
                options: Vec::new(),
            };
            match w.write_pcapng_block(epb) {
                Ok(_) => written += 1,
                Err(e) => {
                    err = Some(e.to_string());
                    *file = None;
                }
            }
        });
        self.counters.written.fetch_add(written, Ordering::Relaxed);
        if let Some(e) = err {
            self.fail(e);
        }
        n
    }

    fn flush(&mut self) {
        if let Some(w) = self.file.as_mut() {
            if let Err(e) = w.get_mut().flush() {
                self.fail(e.to_string());
            }
        }
    }

    /// Flushes and closes the file; the report of this capture and the
    /// bytes of copies left unread in its rings (0 after a full drain).
    fn finish(mut self) -> (CaptureReport, u64) {
        self.flush();
        if let Some(w) = self.file.take() {
            if let Err(e) = w.into_inner().into_inner().map(|f| f.sync_data()) {
                self.error = Some(e.to_string());
            }
        }
        let c = &self.counters;
        (
            CaptureReport {
                port: self.port,
                name: self.name.clone(),
                file: self.path.display().to_string(),
                count: c.limit,
                written: c.written.load(Ordering::Relaxed),
                capture_dropped: c.dropped.load(Ordering::Relaxed),
                error: self.error.take(),
            },
            self.receiver.pending(),
        )
    }
}

/// TSC to wall-clock time: one (wall clock, TSC) pair and the TSC rate.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    unix_ns: u128,
    tsc0: u64,
    hz: u64,
}

impl WallClock {
    pub fn new(tsc_now: u64, hz: u64) -> WallClock {
        let unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        WallClock {
            unix_ns,
            tsc0: tsc_now,
            hz: hz.max(1),
        }
    }

    /// Time since the Unix epoch of TSC value `tsc`.
    pub fn at(&self, tsc: u64) -> Duration {
        let since = u128::from(tsc.saturating_sub(self.tsc0)) * 1_000_000_000 / u128::from(self.hz);
        let ns = self.unix_ns + since;
        Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32)
    }
}

/// Places the calling thread (the writer) beside the lcores: on `cpus`,
/// the CPUs no lcore runs on, else at the lowest priority where it is
/// (`dpdk::thread`); logs which.
pub fn place_writer(cpus: &[usize]) {
    use crate::dpdk::thread::{place_side_thread, Placement};
    match place_side_thread(cpus) {
        Placement::Own(cpus) => log::info!("capture writer on CPUs {cpus:?} (no lcore there)"),
        Placement::Shared => log::info!(
            "capture writer shares a CPU with an lcore (none is free): it runs at nice 19, \
             and copies it cannot write in time are dropped and counted (capture_dropped)"
        ),
        Placement::Unchanged(e) => log::warn!(
            "capture writer shares a CPU with an lcore at normal priority ({e}): it can slow forwarding"
        ),
    }
}

/// The writer thread: starts every file (forwarding has started: the
/// point of no return), writes copies as they come until `finished` (every
/// lcore returned), then drains every ring and closes the files. `stall`
/// (a test knob) delays the first dequeue. Returns the reports and the
/// bytes of copies left unread (0 when every ring was drained).
pub fn writer_thread(
    mut captures: Vec<Capture>,
    finished: &AtomicBool,
    clock: WallClock,
    stall: Option<Duration>,
) -> (Vec<CaptureReport>, u64) {
    for c in captures.iter_mut() {
        c.start();
    }
    if let Some(d) = stall {
        std::thread::sleep(d);
    }
    loop {
        // Read before draining: once set, no copy is made any more, so an
        // empty pass after it means every ring is empty for good.
        let done = finished.load(Ordering::Acquire);
        let mut moved = 0;
        for c in captures.iter_mut() {
            moved += c.drain(&clock);
        }
        if moved == 0 {
            if done {
                break;
            }
            for c in captures.iter_mut() {
                c.flush();
            }
            std::thread::sleep(IDLE_SLEEP);
        }
    }
    let mut in_use = 0;
    let reports = captures
        .into_iter()
        .map(|c| {
            let (r, n) = c.finish();
            in_use += n;
            r
        })
        .collect();
    (reports, in_use)
}
