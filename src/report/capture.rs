//! `--capture PORT:FILE`: the capture files (opened before EAL, so a path
//! that cannot be written is a usage error before anything runs), the
//! counters each capture shares between its RX lcores and its writer, and
//! the writer thread, which takes the frame copies off their rings and
//! writes them as pcapng (one interface per file, named after the port,
//! nanosecond timestamps converted from the RX TSC).
//!
//! The writer never forwards: it runs beside the lcores like the stats
//! thread. At the end it drains every ring, so each copy is freed before
//! the capture pools are counted.

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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Ring slots of one capture (copies waiting for the writer).
pub const RING_SLOTS: u32 = 2048;

/// How long the writer sleeps when every ring was empty.
const IDLE_SLEEP: Duration = Duration::from_micros(200);

/// A `--capture` file, open since before EAL.
pub struct CaptureFile {
    pub port: u16,
    pub path: PathBuf,
    file: File,
}

/// Opens every `--capture` file (created or truncated). `Err` is one line
/// naming the option and the file.
pub fn open_files(capture: &[(u16, PathBuf)]) -> Result<Vec<CaptureFile>, String> {
    capture
        .iter()
        .map(|(port, path)| open_file(*port, path))
        .collect()
}

fn open_file(port: u16, path: &Path) -> Result<CaptureFile, String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!(
            "--capture {port}:{shown} is a directory: give a file path (e.g. {})",
            path.join("port.pcapng").display()
        ));
    }
    // O_NONBLOCK: a FIFO without a reader fails at once instead of
    // blocking the start; only regular files are taken.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            format!("--capture {port}:{shown} cannot be written ({e}): choose a writable path")
        })?;
    if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(format!(
            "--capture {port}:{shown} is not a regular file: give a regular file path"
        ));
    }
    Ok(CaptureFile {
        port,
        path: path.to_path_buf(),
        file,
    })
}

/// What one capture's RX lcores and writer share.
#[derive(Debug)]
pub struct CaptureCounters {
    /// `--capture-count`: frames to take.
    pub limit: u64,
    /// Frames taken so far by the RX lcores (may pass `limit` by the part
    /// of a burst beyond it, which is not copied).
    pub taken: AtomicU64,
    /// Copies lost: capture pool empty or ring full.
    pub dropped: AtomicU64,
    /// Frames written to the file.
    pub written: AtomicU64,
}

impl CaptureCounters {
    pub fn new(limit: u64) -> Self {
        CaptureCounters {
            limit,
            taken: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }
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
    file: Option<PcapNgWriter<BufWriter<File>>>,
    error: Option<String>,
}

impl Capture {
    /// Starts the pcapng file (section header, then one interface named
    /// `name` with nanosecond timestamps).
    pub fn new(
        file: CaptureFile,
        name: String,
        counters: Arc<CaptureCounters>,
        receiver: CaptureReceiver,
    ) -> Capture {
        let mut c = Capture {
            port: file.port,
            name,
            path: file.path,
            counters,
            receiver,
            file: None,
            error: None,
        };
        let idb = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Owned(c.name.clone())),
                // The EPB timestamps below are nanoseconds.
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        };
        match PcapNgWriter::new(BufWriter::with_capacity(1 << 16, file.file))
            .and_then(|mut w| w.write_pcapng_block(idb).map(|_| w))
        {
            Ok(w) => c.file = Some(w),
            Err(e) => c.fail(e.to_string()),
        }
        c
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

    /// Writes what the ring holds (one burst); returns how many copies.
    fn drain(&mut self, buf: &mut Vec<u8>, clock: &WallClock) -> usize {
        let mut written = 0u64;
        let mut err = None;
        let file = &mut self.file;
        let n = self.receiver.drain(buf, |frame, tsc| {
            let Some(w) = file.as_mut() else { return };
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: clock.at(tsc),
                original_len: frame.len() as u32,
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
    /// copies still allocated from its pool (0 after a full drain).
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
            u64::from(self.receiver.in_use()),
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

/// The writer thread: writes copies as they come until `finished` (every
/// lcore returned), then drains every ring and closes the files. `stall`
/// (a test knob) delays the first dequeue. Returns the reports and the
/// copies still allocated (0 when every copy was freed).
pub fn writer_thread(
    mut captures: Vec<Capture>,
    finished: &AtomicBool,
    clock: WallClock,
    stall: Option<Duration>,
) -> (Vec<CaptureReport>, u64) {
    if let Some(d) = stall {
        std::thread::sleep(d);
    }
    let mut buf = Vec::with_capacity(1 << 16);
    loop {
        // Read before draining: once set, no copy is made any more, so an
        // empty pass after it means every ring is empty for good.
        let done = finished.load(Ordering::Acquire);
        let mut moved = 0;
        for c in captures.iter_mut() {
            moved += c.drain(&mut buf, &clock);
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
