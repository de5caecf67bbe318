//! Shared harness for tests that run the `tqfwd` binary on software PMDs.
//!
//! EAL initialises once per process, so each forwarding test starts the
//! binary with its own `--file-prefix`, one at a time (a process-wide lock:
//! two busy-polling forwarders on a 2-core machine starve each other).
//! Memory: huge pages when the machine has them free (`.ci/run` tries to
//! reserve them), else `--no-huge -m 512`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());
static SEQ: AtomicU32 = AtomicU32::new(0);

/// Held while a test runs a forwarder.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_tqfwd")
}

/// True when enough free 2 MiB huge pages and a hugetlbfs mount exist.
pub fn hugepages_usable() -> bool {
    if std::env::var("TQFWD_TEST_NO_HUGE").is_ok() {
        return false;
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let free = meminfo
        .lines()
        .find(|l| l.starts_with("HugePages_Free:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let mounted = std::fs::read_to_string("/proc/mounts").unwrap_or_default().lines().any(|l| l.contains("hugetlbfs"));
    free >= 300 && mounted
}

/// EAL memory options for this machine.
pub fn mem_args() -> Vec<String> {
    if hugepages_usable() {
        vec!["--in-memory".into(), "-m".into(), "512".into()]
    } else {
        vec!["--no-huge".into(), "-m".into(), "512".into()]
    }
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tqfwd-test-{}-{}-{}", std::process::id(), name, SEQ.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// EAL arguments: lcores, no PCI, unique file prefix, memory, the vdevs.
pub fn eal_args(lcores: &str, vdevs: &[String]) -> Vec<String> {
    let mut v = vec!["-l".to_string(), lcores.to_string(), "--no-pci".into(), "--log-level=lib.eal:warning".into()];
    v.push("--file-prefix".into());
    v.push(format!("tqfwdtest{}_{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
    v.extend(mem_args());
    for d in vdevs {
        v.push(format!("--vdev={d}"));
    }
    v
}

pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub json: Option<serde_json::Value>,
    pub elapsed: Duration,
}

impl Run {
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }
    pub fn json(&self) -> &serde_json::Value {
        self.json.as_ref().unwrap_or_else(|| panic!("no JSON written\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }
    pub fn describe(&self) -> String {
        format!("exit {:?}\nstdout:\n{}\nstderr:\n{}", self.status, self.stdout, self.stderr)
    }
}

fn wait_with_timeout(mut child: Child, timeout: Duration) -> Output {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().expect("output"),
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("output");
                panic!(
                    "tqfwd did not exit within {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Runs `tqfwd EAL -- APP --stats-json DIR/stats.json` and waits.
pub fn run_tqfwd(dir: &Path, eal: &[String], app: &[&str], timeout: Duration) -> Run {
    let json_path = dir.join("stats.json");
    let _ = std::fs::remove_file(&json_path);
    let mut cmd = Command::new(bin());
    cmd.args(eal).arg("--").args(app).arg("--stats-json").arg(&json_path);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).env("RUST_LOG", "info");
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn tqfwd");
    let out = wait_with_timeout(child, timeout);
    let elapsed = start.elapsed();
    let json = std::fs::read_to_string(&json_path).ok().map(|s| serde_json::from_str(&s).expect("valid JSON"));
    Run {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        json,
        elapsed,
    }
}

/// Runs tqfwd with raw argv (for usage-error tests).
pub fn run_raw(args: &[&str], timeout: Duration) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn tqfwd");
    let out = wait_with_timeout(child, timeout);
    Run {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        json: None,
        elapsed: start.elapsed(),
    }
}

/// The end checks every forwarding run must pass.
pub fn assert_clean_end(run: &Run) {
    assert_eq!(run.code(), 0, "{}", run.describe());
    let j = run.json();
    assert_eq!(j["conservation_ok"], true, "{}", run.describe());
    assert_eq!(j["mbufs_in_use"], 0, "{}", run.describe());
    let drops: u64 = j["drops"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(j["rx_packets"].as_u64().unwrap(), j["tx_packets"].as_u64().unwrap() + drops, "{}", run.describe());
    for reason in ["runt", "rx_handoff_full", "worker_handoff_full", "tx_full"] {
        assert!(j["drops"].get(reason).is_some(), "drop reason {reason} missing from JSON");
    }
    assert!(!run.stderr.contains("panicked"), "{}", run.describe());
}

pub fn mac_bytes(s: &str) -> [u8; 6] {
    let v: Vec<u8> = s.split(':').map(|x| u8::from_str_radix(x, 16).unwrap()).collect();
    v.try_into().unwrap()
}
