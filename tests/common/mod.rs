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

/// The binary under test: `TQFWD_TEST_BIN` when set (to run the tests
/// against another build, e.g. to show a new test fails on the old code),
/// else the one cargo built.
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("TQFWD_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_tqfwd").into())
    })
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
    let mounted = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains("hugetlbfs"));
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
    let dir = std::env::temp_dir().join(format!(
        "tqfwd-test-{}-{}-{}",
        std::process::id(),
        name,
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// EAL arguments: lcores, no PCI, unique file prefix, memory, the vdevs.
pub fn eal_args(lcores: &str, vdevs: &[String]) -> Vec<String> {
    let mut v = vec![
        "-l".to_string(),
        lcores.to_string(),
        "--no-pci".into(),
        "--log-level=lib.eal:warning".into(),
    ];
    v.push("--file-prefix".into());
    v.push(format!(
        "tqfwdtest{}_{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
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
        self.json.as_ref().unwrap_or_else(|| {
            panic!(
                "no JSON written\nstdout:\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
    pub fn describe(&self) -> String {
        format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status, self.stdout, self.stderr
        )
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
    run_tqfwd_env(dir, eal, app, timeout, &[])
}

/// [`run_tqfwd`] with extra environment variables.
pub fn run_tqfwd_env(
    dir: &Path,
    eal: &[String],
    app: &[&str],
    timeout: Duration,
    env: &[(&str, &std::ffi::OsStr)],
) -> Run {
    let json_path = dir.join("stats.json");
    let _ = std::fs::remove_file(&json_path);
    let mut cmd = Command::new(bin());
    cmd.args(eal)
        .arg("--")
        .args(app)
        .arg("--stats-json")
        .arg(&json_path);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("RUST_LOG", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn tqfwd");
    let out = wait_with_timeout(child, timeout);
    let elapsed = start.elapsed();
    let json = std::fs::read_to_string(&json_path)
        .ok()
        .map(|s| serde_json::from_str(&s).expect("valid JSON"));
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

/// A run of 2 s with no stats lines (`--duration 2 --stats-interval 0`
/// after `app`), given at most 60 s, that must end cleanly
/// ([`assert_clean_end`]).
pub fn run_2s_clean(dir: &Path, eal: &[String], app: &[&str]) -> Run {
    let mut args = app.to_vec();
    args.extend(["--duration", "2", "--stats-interval", "0"]);
    let run = run_tqfwd(dir, eal, &args, Duration::from_secs(60));
    assert_clean_end(&run);
    run
}

/// The end checks every forwarding run must pass.
pub fn assert_clean_end(run: &Run) {
    assert_eq!(run.code(), 0, "{}", run.describe());
    let j = run.json();
    assert_eq!(j["conservation_ok"], true, "{}", run.describe());
    assert_eq!(j["mbufs_in_use"], 0, "{}", run.describe());
    let drops: u64 = j["drops"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        j["rx_packets"].as_u64().unwrap(),
        j["tx_packets"].as_u64().unwrap() + drops,
        "{}",
        run.describe()
    );
    for reason in ["runt", "rx_handoff_full", "worker_handoff_full", "tx_full"] {
        assert!(
            j["drops"].get(reason).is_some(),
            "drop reason {reason} missing from JSON"
        );
    }
    assert!(!run.stderr.contains("panicked"), "{}", run.describe());
}

pub fn mac_bytes(s: &str) -> [u8; 6] {
    let v: Vec<u8> = s
        .split(':')
        .map(|x| u8::from_str_radix(x, 16).unwrap())
        .collect();
    v.try_into().unwrap()
}

// ---------------------------------------------------------------------------
// Real peers (tests/peers.rs): child processes that run beside tqfwd
// (dpdk-testpmd, tqfwd-udp-peer), network namespaces, per-process memory.
// ---------------------------------------------------------------------------

/// The kernel UDP peer binary (`src/bin/tqfwd-udp-peer.rs`).
pub fn peer_bin() -> &'static str {
    env!("CARGO_BIN_EXE_tqfwd-udp-peer")
}

/// A name unique to this test process and call: `<prefix><pid>_<n>`.
pub fn unique_name(prefix: &str) -> String {
    format!(
        "{prefix}{}_{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Free 2 MiB huge pages right now (0 without a hugetlbfs mount).
pub fn free_hugepages() -> u64 {
    let mounted = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains("hugetlbfs"));
    if !mounted {
        return 0;
    }
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("HugePages_Free:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
}

/// EAL memory options for one of several DPDK processes running at once:
/// `--in-memory -m MB` (its own huge pages, no shared runtime files) when
/// enough huge pages are free *now*, else `--no-huge -m MB`. Call it right
/// before starting each process, after the previous one initialised.
pub fn mem_args_mb(mb: u64) -> Vec<String> {
    let huge = std::env::var("TQFWD_TEST_NO_HUGE").is_err() && free_hugepages() >= mb / 2 + 16;
    let mode = if huge { "--in-memory" } else { "--no-huge" };
    vec![mode.into(), "-m".into(), mb.to_string()]
}

/// True when `prog` is on PATH.
pub fn have_command(prog: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
}

/// Says loudly (on the real stderr, past the test harness's capture) that a
/// test could not run here and why. With `TQFWD_REQUIRE_PEERS=1` it fails
/// the test instead.
pub fn skip_test(test: &str, why: &str) {
    use std::io::Write;
    if std::env::var("TQFWD_REQUIRE_PEERS")
        .map(|v| v == "1")
        .unwrap_or(false)
    {
        panic!("{test}: cannot run here: {why} (TQFWD_REQUIRE_PEERS=1)");
    }
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {why} ***");
}

/// Runs a command to completion; Err carries its stderr.
pub fn run_cmd(prog: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(prog)
        .args(args)
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{prog} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A child process whose stdout and stderr are collected line by line in
/// the background (so it never blocks on a full pipe). Dropping it kills
/// the process if it still runs.
pub struct Proc {
    pub name: String,
    child: Child,
    out: std::sync::Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    status: Option<std::process::ExitStatus>,
    stdin: Option<std::process::ChildStdin>,
}

impl Proc {
    pub fn spawn(name: &str, cmd: &mut Command) -> Proc {
        cmd.stdin(Stdio::null());
        Self::start(name, cmd)
    }

    /// Like `spawn`, with a pipe to its stdin for [`Proc::send_line`].
    pub fn spawn_interactive(name: &str, cmd: &mut Command) -> Proc {
        cmd.stdin(Stdio::piped());
        Self::start(name, cmd)
    }

    fn start(name: &str, cmd: &mut Command) -> Proc {
        use std::io::BufRead;
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name} ({cmd:?}): {e}"));
        let stdin = child.stdin.take();
        let out = std::sync::Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        let streams: Vec<Box<dyn std::io::Read + Send>> = vec![
            Box::new(child.stdout.take().unwrap()),
            Box::new(child.stderr.take().unwrap()),
        ];
        for s in streams {
            let out = out.clone();
            readers.push(std::thread::spawn(move || {
                for line in std::io::BufReader::new(s).lines() {
                    let Ok(line) = line else { break };
                    let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
                    o.push_str(&line);
                    o.push('\n');
                }
            }));
        }
        Proc {
            name: name.into(),
            child,
            out,
            readers,
            status: None,
            stdin,
        }
    }

    /// Writes one line to its stdin (an interactive command).
    pub fn send_line(&mut self, line: &str) {
        use std::io::Write;
        if let Some(i) = self.stdin.as_mut() {
            let _ = writeln!(i, "{line}");
            let _ = i.flush();
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything it printed so far (stdout and stderr, line-interleaved).
    pub fn text(&self) -> String {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Exit status if it has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits until `pred(output)` holds; Err if it exits first or on timeout.
    pub fn wait_until(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if pred(&self.text()) {
                return Ok(());
            }
            if let Some(st) = self.exited() {
                std::thread::sleep(Duration::from_millis(50)); // let the readers finish
                if pred(&self.text()) {
                    return Ok(());
                }
                return Err(format!(
                    "{} exited ({st}) before {what}\n--- {} output ---\n{}",
                    self.name,
                    self.name,
                    self.text()
                ));
            }
            if start.elapsed() > timeout {
                return Err(format!(
                    "{}: no {what} within {timeout:?}\n--- {} output ---\n{}",
                    self.name,
                    self.name,
                    self.text()
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Sends a signal by name (INT, TERM, KILL) with kill(1).
    pub fn signal(&mut self, sig: &str) {
        if self.exited().is_none() {
            let _ = Command::new("kill")
                .arg("-s")
                .arg(sig)
                .arg(self.pid().to_string())
                .status();
        }
    }

    /// Waits for the exit; None on timeout (the process keeps running).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        loop {
            if let Some(st) = self.exited() {
                for r in self.readers.drain(..) {
                    let _ = r.join();
                }
                return Some(st);
            }
            if start.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

/// Two network namespaces, each holding one end of a veth pair as `eth0`,
/// the other ends (`host_a`, `host_b`) left in the test's namespace for
/// tqfwd's `net_af_packet` ports. Everything is deleted on drop, also when
/// the test fails half-way.
pub struct NetnsPair {
    pub a: String,
    pub b: String,
    pub host_a: String,
    pub host_b: String,
}

impl NetnsPair {
    /// Creates the namespaces and veths, brings them up, gives `eth0` in A
    /// and B the MACs and /24 addresses given, turns IPv6 off (no ND/MLD
    /// chatter through the forwarder) and TX checksum offload off on both
    /// `eth0` (see testbed.md: a veth leaves UDP checksums to "hardware",
    /// a packet socket forwards them unfilled, the receiver drops them).
    /// Err(text) when the machine refuses (no CAP_SYS_ADMIN, no `ip`).
    pub fn create(mac_a: &str, ip_a: &str, mac_b: &str, ip_b: &str) -> Result<NetnsPair, String> {
        sweep_stale_netns();
        let id = unique_name("");
        let pair = NetnsPair {
            a: format!("tqa{id}"),
            b: format!("tqb{id}"),
            host_a: format!("tqha{id}"),
            host_b: format!("tqhb{id}"),
        };
        run_cmd("ip", &["netns", "add", &pair.a])?;
        run_cmd("ip", &["netns", "add", &pair.b])?;
        for (ns, host, tmp, mac, ip) in [
            (&pair.a, &pair.host_a, "tqpa", mac_a, ip_a),
            (&pair.b, &pair.host_b, "tqpb", mac_b, ip_b),
        ] {
            let tmp = format!("{tmp}{}", &id[..id.len().min(10)]);
            run_cmd(
                "ip",
                &["link", "add", host, "type", "veth", "peer", "name", &tmp],
            )?;
            run_cmd("ip", &["link", "set", &tmp, "netns", ns])?;
            run_cmd("ip", &["-n", ns, "link", "set", &tmp, "name", "eth0"])?;
            run_cmd("ip", &["-n", ns, "link", "set", "eth0", "address", mac])?;
            run_cmd(
                "ip",
                &[
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=1",
                ],
            )?;
            run_cmd("ip", &["-n", ns, "addr", "add", ip, "dev", "eth0"])?;
            run_cmd("ip", &["-n", ns, "link", "set", "lo", "up"])?;
            run_cmd("ip", &["-n", ns, "link", "set", "eth0", "up"])?;
            run_cmd(
                "ip",
                &["netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off"],
            )?;
            // Best effort: no IPv6 on the host ends either.
            let _ = run_cmd(
                "sysctl",
                &["-qw", &format!("net.ipv6.conf.{host}.disable_ipv6=1")],
            );
            run_cmd("ip", &["link", "set", host, "up"])?;
        }
        Ok(pair)
    }

    /// `ip netns exec NS prog args…` as a Command.
    pub fn exec(&self, ns: &str, prog: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, prog]);
        c
    }

    /// `ip netns exec NS chrt -f 10 prog args…` (or `nice -n -10` where
    /// real-time scheduling is refused): a kernel peer that gets the CPU as
    /// soon as a datagram wakes it, beside busy-polling DPDK lcores and
    /// whatever else runs on a loaded 2-core machine, so its default
    /// socket buffer (a few hundred datagrams) does not overflow while it
    /// waits for a CPU. The peers sleep between datagrams, so a real-time
    /// priority cannot starve anything.
    pub fn exec_prio(&self, ns: &str, prog: &str) -> Command {
        static RT_OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let rt = *RT_OK.get_or_init(|| {
            Command::new("chrt")
                .args(["-f", "10", "true"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        });
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]);
        if rt {
            c.args(["chrt", "-f", "10"]);
        } else {
            c.args(["nice", "-n", "-10"]);
        }
        c.arg(prog);
        c
    }

    /// The kernel's UDP counters in namespace `ns` (`/proc/net/snmp` Udp
    /// lines: InDatagrams, NoPorts, InErrors, RcvbufErrors, …).
    pub fn udp_counters(&self, ns: &str) -> String {
        run_cmd("ip", &["netns", "exec", ns, "cat", "/proc/net/snmp"])
            .map(|t| {
                t.lines()
                    .filter(|l| l.starts_with("Udp:"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        // Deleting a namespace destroys its veth end and so the pair; the
        // explicit link deletions cover a half-built setup.
        for ns in [&self.a, &self.b] {
            let _ = run_cmd("ip", &["netns", "del", ns]);
        }
        for l in [&self.host_a, &self.host_b] {
            let _ = run_cmd("ip", &["link", "del", l]);
        }
    }
}

/// The namespaces and veths of a kernel-peer test ([`NetnsPair::create`]
/// with these MACs and addresses), or None (after saying why, see
/// [`skip_test`]) where the tools or the privileges are missing.
pub fn kernel_netns(
    test: &str,
    mac_a: &str,
    ip_a: &str,
    mac_b: &str,
    ip_b: &str,
) -> Option<NetnsPair> {
    for tool in ["ip", "ethtool", "sysctl"] {
        if !have_command(tool) {
            skip_test(test, &format!("`{tool}` not found (scripts/install-deps.sh installs iproute2, ethtool, procps)"));
            return None;
        }
    }
    match NetnsPair::create(mac_a, ip_a, mac_b, ip_b) {
        Ok(n) => Some(n),
        Err(e) => {
            skip_test(test, &format!("cannot create network namespaces / veths here ({e}); needs root with CAP_NET_ADMIN + CAP_SYS_ADMIN"));
            None
        }
    }
}

/// tqfwd beside other processes (tests/peers.rs, tests/routes_kernel.rs):
/// on `lcores`, its own `--file-prefix`, 256 MB of memory
/// ([`mem_args_mb`]), the ports `vdevs`, then `app` and `--stats-json
/// json`, logging at info.
pub fn peer_tqfwd_cmd(
    lcores: &str,
    prefix: &str,
    vdevs: &[String],
    app: &[&str],
    json: &Path,
) -> Command {
    let mut c = Command::new(bin());
    c.args([
        "-l",
        lcores,
        "--no-pci",
        "--log-level=lib.eal:warning",
        "--file-prefix",
        prefix,
    ]);
    c.args(mem_args_mb(256));
    for v in vdevs {
        c.arg(format!("--vdev={v}"));
    }
    c.arg("--").args(app).arg("--stats-json").arg(json);
    c.env("RUST_LOG", "info");
    c
}

/// Waits for tqfwd (already signalled to stop) to exit and turns it into
/// a `Run` for [`assert_clean_end`]; kills it and panics after 20 s.
pub fn finish_tqfwd(tq: &mut Proc, json: &Path, started: Instant) -> Run {
    let status = match tq.wait_exit(Duration::from_secs(20)) {
        Some(s) => s,
        None => {
            tq.signal("KILL");
            panic!("tqfwd did not exit within 20 s of SIGINT\n{}", tq.text());
        }
    };
    let json = std::fs::read_to_string(json)
        .ok()
        .map(|s| serde_json::from_str(&s).expect("valid JSON"));
    Run {
        status,
        stdout: tq.text(),
        stderr: String::new(),
        json,
        elapsed: started.elapsed(),
    }
}

/// Deletes `tqa<pid>_<n>` / `tqb<pid>_<n>` namespaces left behind by test
/// processes that no longer exist (killed before their guards ran).
pub fn sweep_stale_netns() {
    let Ok(list) = run_cmd("ip", &["netns", "list"]) else {
        return;
    };
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(rest) = name
            .strip_prefix("tqa")
            .or_else(|| name.strip_prefix("tqb"))
        else {
            continue;
        };
        let Some((pid, n)) = rest.split_once('_') else {
            continue;
        };
        if pid.is_empty()
            || !pid.bytes().all(|b| b.is_ascii_digit())
            || !n.bytes().all(|b| b.is_ascii_digit())
        {
            continue;
        }
        if pid != std::process::id().to_string() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = run_cmd("ip", &["netns", "del", name]);
        }
    }
}

/// Deterministic xorshift64 generator for seeded test inputs (no extra crates).
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (0 is replaced by a fixed non-zero value).
    pub fn new(seed: u64) -> Self {
        XorShift(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform-enough value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform value in `[lo, hi)`.
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo)
    }
}

/// Two net_pcap ports for one-way tests: port 0 replays `frames` (written
/// to DIR/in0.pcap), port 1 reads an empty file; what they transmit goes to
/// DIR/out0.pcap and DIR/out1.pcap. Returns the `--vdev` arguments.
pub fn one_way_pcap_ports(dir: &Path, frames: &[Vec<u8>]) -> Vec<String> {
    let in0 = dir.join("in0.pcap");
    tqfwd::testkit::pcap::write_all(&in0, frames).expect("write input pcap");
    let empty = dir.join("empty.pcap");
    tqfwd::testkit::pcap::write_all(&empty, Vec::<Vec<u8>>::new()).expect("write empty pcap");
    vec![
        format!(
            "net_pcap0,rx_pcap={},tx_pcap={}",
            in0.display(),
            dir.join("out0.pcap").display()
        ),
        format!(
            "net_pcap1,rx_pcap={},tx_pcap={}",
            empty.display(),
            dir.join("out1.pcap").display()
        ),
    ]
}

/// Asks a running DPDK process (file prefix `prefix`) the telemetry
/// commands `cmds` through DPDK's own `dpdk-telemetry.py`; returns the
/// `/tqfwd/*` answers in order.
pub fn query(prefix: &str, cmds: &[&str]) -> Vec<serde_json::Value> {
    let mut child = std::process::Command::new("dpdk-telemetry.py")
        .args(["-f", prefix])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dpdk-telemetry.py (package dpdk) runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for c in cmds {
            writeln!(stdin, "{c}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.starts_with("{\"/tqfwd"))
        .map(|l| serde_json::from_str(l).expect("telemetry JSON"))
        .collect()
}

/// A tqfwd on two `net_null` ports (64-byte frames) on lcores `lcores`,
/// with `app` after `--`, that runs until [`stop_live`] (`--duration 120`
/// is only a backstop; dropping the `Proc` kills it). Returns the process
/// and its `--file-prefix` (for `dpdk-telemetry.py -f`).
pub fn spawn_live_null(lcores: &str, app: &[&str]) -> (Proc, String) {
    let eal = eal_args(
        lcores,
        &[
            "net_null0,size=64".to_string(),
            "net_null1,size=64".to_string(),
        ],
    );
    let prefix = eal[eal.iter().position(|a| a == "--file-prefix").unwrap() + 1].clone();
    let p = Proc::spawn(
        "tqfwd",
        Command::new(bin()).args(&eal).arg("--").args(app).args([
            "--duration",
            "120",
            "--stats-interval",
            "0",
        ]),
    );
    (p, prefix)
}

/// SIGINT, then the exit within 30 s, which must be 0; returns what the
/// process printed.
pub fn stop_live(p: &mut Proc) -> String {
    p.signal("INT");
    let status = p
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("{} did not exit on SIGINT\n{}", p.name, p.text()));
    assert!(status.success(), "{} exit {status}\n{}", p.name, p.text());
    p.text()
}

/// Asks `cmd` through `dpdk-telemetry.py` at once, then every 300 ms,
/// until its answer (the value under the command's name) satisfies `ok`;
/// panics naming `what` after 20 s or when the process exits first.
pub fn query_until(
    p: &mut Proc,
    prefix: &str,
    cmd: &str,
    what: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = Instant::now();
    loop {
        if let Some(v) = query(prefix, &[cmd]).first() {
            if ok(&v[cmd]) {
                return v[cmd].clone();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20) && p.exited().is_none(),
            "no telemetry answer to {cmd} with {what}\n{}",
            p.text()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A usage error: exit 2, no panic, exactly one `tqfwd: error: ` line, it
/// is the last line on stderr, and it contains every needle.
pub fn assert_usage_error(run: &Run, needles: &[&str]) {
    assert_eq!(run.code(), 2, "{}", run.describe());
    assert!(
        !run.stderr.contains("panicked") && !run.stderr.contains("backtrace"),
        "{}",
        run.describe()
    );
    let last = run
        .stderr
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        last.starts_with("tqfwd: error: "),
        "last stderr line is not ours: {last:?}\n{}",
        run.describe()
    );
    for n in needles {
        assert!(last.contains(n), "expected {n:?} in {last:?}");
    }
    let ours = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("tqfwd: error"))
        .count();
    assert_eq!(ours, 1, "exactly one error line\n{}", run.describe());
}

// ---------------------------------------------------------------------------
// `--metrics` (tests/metrics.rs, tests/exposition.rs).
// ---------------------------------------------------------------------------

/// A port nobody listens on right now: bind port 0, note it, release it.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    l.local_addr().unwrap().port()
}

/// One `GET path` over a plain TCP stream: (status line, headers, body).
pub fn http_get(
    addr: std::net::SocketAddr,
    path: &str,
) -> std::io::Result<(String, String, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    Ok((status.to_string(), headers.to_string(), body.to_string()))
}

/// tqfwd on two `net_null` ports on lcores 0-1 with `app` and `--metrics`
/// on a free local port, until [`stop_live`].
pub fn spawn_live_metrics(app: &[&str]) -> (Proc, std::net::SocketAddr) {
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let addr_arg = addr.to_string();
    let mut args = app.to_vec();
    args.extend(["--metrics", &addr_arg]);
    (spawn_live_null("0-1", &args).0, addr)
}

/// Waits up to `within` for `p` to exit 0 with the summary printed, and
/// reads DIR/stats.json, whose end checks (conservation, 0 mbufs in use)
/// must hold; returns the JSON.
pub fn clean_exit_json(p: &mut Proc, dir: &Path, within: Duration) -> serde_json::Value {
    let st = p
        .wait_exit(within)
        .unwrap_or_else(|| panic!("no exit within {within:?}\n{}", p.text()));
    let text = p.text();
    assert_eq!(st.code(), Some(0), "{st}\n{text}");
    assert!(
        text.contains("conservation rx = tx + drops") && !text.contains("panicked"),
        "no summary\n{text}"
    );
    let j: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("stats.json"))
            .unwrap_or_else(|e| panic!("no JSON ({e})\n{text}")),
    )
    .expect("valid JSON");
    assert_eq!(j["conservation_ok"], true, "{text}");
    assert_eq!(j["mbufs_in_use"], 0, "{text}");
    j
}
