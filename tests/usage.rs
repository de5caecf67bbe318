//! Bad input gets one clear line on stderr and exit code 2, never a panic;
//! SIGINT mid-traffic exits 0 quickly with the end checks holding.

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn eal(lcores: &str, vdevs: &[&str]) -> Vec<String> {
    eal_args(
        lcores,
        &vdevs.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    )
}

fn run_with(eal: Vec<String>, app: &[&str]) -> Run {
    let mut args: Vec<String> = eal;
    args.push("--".into());
    args.extend(app.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    run_raw(&refs, Duration::from_secs(30))
}

#[test]
fn help_needs_no_eal() {
    let run = run_raw(&["--help"], Duration::from_secs(10));
    assert_eq!(run.code(), 0, "{}", run.describe());
    assert!(run.stdout.contains("--backend"));
    assert!(run.stdout.contains("[EAL options] -- [options]"));
    assert!(
        !run.stderr.contains("EAL:"),
        "EAL must not start for --help"
    );
}

#[test]
fn bad_app_options_before_eal() {
    for (args, needle) in [
        (&["--", "--burst", "0"][..], "--burst"),
        (&["--", "--burst", "300"], "--burst"),
        (&["--", "--depth", "1000"], "power of two"),
        (&["--", "--depth", "0"], "power of two"),
        (&["--", "--peer-mac", "1=02:00:00:00:00"], "--peer-mac"),
        (&["--", "--peer-mac", "nonsense"], "PORT=MAC"),
        (&["--", "--backend", "fast"], "--backend"),
        (&["--", "--rx-lcores", ""], "--rx-lcores"),
        (&["--", "--worker-lcores", "3-1"], "--worker-lcores"),
        (&["--", "--no-such-option"], "no-such-option"),
        (&["--", "--class", "kv:udp,dst-port=99999:1"], "--class"),
        (&["--", "--class", "kv:sctp:1"], "unknown match term"),
        (&["--", "--class", "kv:dst-port=80:1"], "needs udp or tcp"),
        (&["--", "--max-frame", "70000"], "--max-frame"),
        (&["--", "--max-frame", "-9000"], "--max-frame"),
        (&["--", "--max-frame", "jumbo"], "--max-frame"),
        (&["--", "--handoff-batch", "16"], "is below --burst 32"),
        (&["--", "--handoff-batch", "257"], "--handoff-batch"),
        (
            &["--", "--handoff", "copy", "--handoff-batch", "64"],
            "needs --handoff round-trip or zero-copy",
        ),
    ] {
        let run = run_raw(args, Duration::from_secs(10));
        assert_usage_error(&run, &[needle]);
        assert!(
            !run.stderr.contains("EAL:"),
            "usage errors in app options are found before EAL starts"
        );
    }
}

#[test]
fn bad_eal_arguments() {
    let _g = serial();
    let run = run_raw(
        &["--definitely-not-an-eal-option", "--", "--duration", "1"],
        Duration::from_secs(30),
    );
    assert_usage_error(&run, &["EAL"]);
}

#[test]
fn no_ports() {
    let _g = serial();
    let run = run_with(eal("0", &[]), &["--duration", "1"]);
    assert_usage_error(
        &run,
        &["no Ethernet ports: pass --vdev or bind a NIC, see dpdk-config/"],
    );
}

#[test]
fn lcore_not_in_eal_set() {
    let _g = serial();
    let run = run_with(
        eal("0", &["net_null0", "net_null1"]),
        &["--worker-lcores", "1", "--duration", "1"],
    );
    assert_usage_error(
        &run,
        &["lcore 1 in --worker-lcores is not in the EAL lcore set"],
    );
}

#[test]
fn more_queues_than_the_device_has() {
    let _g = serial();
    let dir = scratch("queues");
    let p = dir.join("in.pcap");
    tqfwd::testkit::pcap::write_all(&p, Vec::<Vec<u8>>::new()).unwrap();
    let vdev = format!(
        "net_pcap0,rx_pcap={},tx_pcap={}",
        p.display(),
        dir.join("out.pcap").display()
    );
    let run = run_with(
        eal("0-1", &[&vdev]),
        &["--rx-lcores", "0-1", "--duration", "1"],
    );
    assert_usage_error(&run, &["allows 1 RX queues but 2 RX lcores need one each"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Frames that need several mbufs on a port that cannot scatter (net_null
/// offers no RX scatter). (The MTU range check is unit-tested in
/// setup::frames: the software PMDs here take any MTU.)
#[test]
fn max_frame_the_port_cannot_take() {
    let _g = serial();
    let run = run_with(
        eal("0-1", &["net_null0", "net_null1"]),
        &["--max-frame", "9000", "--duration", "1"],
    );
    assert_usage_error(
        &run,
        &["--max-frame 9000: port 0 (net_null) cannot scatter a frame over several mbufs"],
    );
    assert!(run.stderr.contains("use --max-frame 2044 or less"));
}

#[test]
fn peer_mac_for_missing_port() {
    let _g = serial();
    let run = run_with(
        eal("0-1", &["net_null0", "net_null1"]),
        &["--peer-mac", "5=02:00:00:00:00:05", "--duration", "1"],
    );
    assert_usage_error(&run, &["--peer-mac names port 5"]);
}

/// SIGINT mid-traffic on net_null ports: exit 0 within 2 s of the signal,
/// conservation and 0 mbufs in use, for both backends.
#[test]
fn sigint_mid_traffic_exits_cleanly() {
    for backend in ["tq", "ring"] {
        let _g = serial();
        let dir = scratch("sigint");
        let json = dir.join("stats.json");
        let mut child = Command::new(bin())
            .args(eal("0-1", &["net_null0,size=64", "net_null1,size=64"]))
            .arg("--")
            .args([
                "--backend",
                backend,
                "--stats-interval",
                "0.2",
                "--stats-json",
            ])
            .arg(&json)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        // Wait until packets flow: a stats line with a non-zero total.
        let mut lines = Vec::new();
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("tqfwd printed no stats line");
            let flowing = line.contains("Mpps") && !line.contains("total rx 0 ");
            lines.push(line);
            if flowing {
                break;
            }
        }
        let signalled = Instant::now();
        assert!(Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success());
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if signalled.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("tqfwd still running 10 s after SIGINT");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = signalled.elapsed();
        reader.join().unwrap();
        lines.extend(rx.try_iter());
        let mut err = String::new();
        use std::io::Read;
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(
            status.code(),
            Some(0),
            "exit after SIGINT ({backend})\n{}\n{err}",
            lines.join("\n")
        );
        assert!(
            took < Duration::from_secs(2),
            "took {took:?} to exit after SIGINT"
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(j["conservation_ok"], true);
        assert_eq!(j["mbufs_in_use"], 0);
        assert_eq!(j["signal"], 2);
        assert!(j["tx_packets"].as_u64().unwrap() > 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn class_conflicts_are_usage_errors() {
    let _g = serial();
    let run = run_with(
        eal("0-1", &["net_null0", "net_null1"]),
        &["--class", "kv:udp:1", "--duration", "1"],
    );
    assert_usage_error(
        &run,
        &["lcore 1 is both a default worker and dedicated to class kv"],
    );
    let run = run_with(
        eal("0-1", &["net_null0", "net_null1"]),
        &[
            "--worker-lcores",
            "0",
            "--class",
            "a:udp:1",
            "--class",
            "b:tcp:1",
            "--duration",
            "1",
        ],
    );
    assert_usage_error(&run, &["classes a and b overlap on lcore 1"]);
    let run = run_with(
        eal("0-1", &["net_null0", "net_null1"]),
        &[
            "--worker-lcores",
            "0",
            "--class",
            "a:udp:5",
            "--duration",
            "1",
        ],
    );
    assert_usage_error(&run, &["lcore 5 of class a is not in the EAL lcore set"]);
}

/// `--stats-json` that cannot take the report (a FIFO nobody reads, a
/// directory, a path under a missing directory, a read-only filesystem) is
/// a usage error before EAL starts, without blocking.
#[test]
fn stats_json_bad_paths_before_eal() {
    let _g = serial();
    let dir = scratch("jsonpaths");
    let fifo = dir.join("fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(st.success());
    let missing = dir.join("no-such-dir").join("stats.json");
    let mut cases = vec![
        (fifo.clone(), "FIFO nobody reads"),
        (dir.clone(), "is a directory"),
        (missing, "does not exist"),
    ];
    // /proc is read-only for new files even for root.
    cases.push(("/proc/tqfwd-stats.json".into(), "cannot be written"));
    for (path, needle) in cases {
        let p = path.to_str().unwrap();
        let run = run_with(
            eal("0-1", &["net_null0", "net_null1"]),
            &["--duration", "5", "--stats-json", p],
        );
        assert_usage_error(&run, &[needle]);
        let last = run.stderr.lines().last().unwrap_or("");
        assert!(last.contains("--stats-json") && last.contains(p), "{last}");
        assert!(
            !run.stderr.contains("EAL:") && run.elapsed < Duration::from_secs(5),
            "{p}: checked before EAL, not after the run\n{}",
            run.describe()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FIFO with a reader gets the whole report; `/dev/full` is exit 1 with
/// one line after the summary.
#[test]
fn stats_json_fifo_with_reader_and_dev_full() {
    let _g = serial();
    let dir = scratch("jsonfifo");
    let fifo = dir.join("fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(st.success());
    let reader = Command::new("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .expect("cat");
    let run = run_with(
        eal("0-1", &["net_null0,size=64", "net_null1,size=64"]),
        &["--duration", "1", "--stats-json", fifo.to_str().unwrap()],
    );
    assert_eq!(run.code(), 0, "{}", run.describe());
    let got = reader.wait_with_output().expect("cat output");
    let j: serde_json::Value = serde_json::from_slice(&got.stdout).expect("JSON through the FIFO");
    assert_eq!(j["conservation_ok"], true);

    let run = run_with(
        eal("0-1", &["net_null0,size=64", "net_null1,size=64"]),
        &["--duration", "1", "--stats-json", "/dev/full"],
    );
    assert_eq!(run.code(), 1, "{}", run.describe());
    assert!(
        run.stdout.contains("conservation rx = tx + drops"),
        "the summary comes first\n{}",
        run.describe()
    );
    let last = run.stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("tqfwd: error: cannot write --stats-json /dev/full"),
        "{}",
        run.describe()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every `--vdev` must become a port: of three, the middle one failing its
/// probe (missing or bad-magic pcap, unwritable tx_pcap, missing af_packet
/// interface) is exit 2 naming it, not a run with the others renumbered.
#[test]
fn failed_device_probe_is_named() {
    let _g = serial();
    let dir = scratch("probe");
    let good = dir.join("in.pcap");
    tqfwd::testkit::pcap::write_all(&good, Vec::<Vec<u8>>::new()).unwrap();
    let junk = dir.join("junk.pcap");
    std::fs::write(&junk, b"this is not a pcap file at all").unwrap();
    let port = |n: u32, rx: &std::path::Path, tx: std::path::PathBuf| {
        format!(
            "net_pcap{n},rx_pcap={},tx_pcap={}",
            rx.display(),
            tx.display()
        )
    };
    let first = port(0, &good, dir.join("out0.pcap"));
    let last = port(2, &good, dir.join("out2.pcap"));
    for (bad, name) in [
        (
            port(1, &dir.join("nonexistent.pcap"), dir.join("o1.pcap")),
            "net_pcap1",
        ),
        (port(1, &junk, dir.join("o1.pcap")), "net_pcap1"),
        (port(1, &good, dir.join("no-such-dir/o1.pcap")), "net_pcap1"),
        (
            "net_af_packet1,iface=tqfwdnosuch0".to_string(),
            "net_af_packet1",
        ),
    ] {
        let run = run_with(eal("0-1", &[&first, &bad, &last]), &["--duration", "1"]);
        assert_usage_error(&run, &[&format!("--vdev {name} did not become a port")]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pool too small for the RX descriptors and one burst per lcore is a
/// usage error saying what fits (not a silent run forwarding nothing).
#[test]
fn pool_too_small_says_what_fits() {
    let _g = serial();
    let run = run_with(
        eal("0-1", &["net_null0", "net_null1"]),
        &["--mbufs", "64", "--burst", "256", "--duration", "1"],
    );
    assert_usage_error(&run, &["--mbufs 64 is too small"]);
    assert!(
        run.stderr.contains("need at least 2560 mbufs"),
        "{}",
        run.describe()
    );
}

/// `--depth` beyond EAL's memory is a usage error naming `--depth` and the
/// largest depth that fits, for both backends; that depth then runs.
#[test]
fn depth_beyond_memory_says_what_fits() {
    let _g = serial();
    for backend in ["tq", "ring"] {
        let vdevs = ["net_null0,size=64", "net_null1,size=64"];
        let run = run_with(
            eal("0-1", &vdevs),
            &[
                "--backend",
                backend,
                "--depth",
                "1048576",
                "--duration",
                "1",
            ],
        );
        assert_usage_error(&run, &["--depth 1048576 does not fit in EAL's memory"]);
        let last = run.stderr.lines().last().unwrap_or("");
        let fits = last
            .split("at most --depth ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("{backend}: no depth that fits in {last}"));
        let run = run_with(
            eal("0-1", &vdevs),
            &["--backend", backend, "--depth", fits, "--duration", "0.5"],
        );
        assert_eq!(
            run.code(),
            0,
            "{backend}: --depth {fits}\n{}",
            run.describe()
        );
    }
}

/// A memif client whose server is absent retries its start for
/// `--link-timeout`, then one line names the device and the socket.
#[test]
fn memif_client_without_server_names_device_and_socket() {
    let _g = serial();
    let sock = format!("/tmp/tqfwd-nosuch-{}.sock", std::process::id());
    let vdev = format!("net_memif0,role=client,socket={sock},socket-abstract=no");
    let run = run_with(
        eal("0-1", &[&vdev]),
        &["--link-timeout", "1", "--duration", "1"],
    );
    assert_usage_error(&run, &["net_memif0: no memif server on socket"]);
    let last = run.stderr.lines().last().unwrap_or("");
    assert!(
        last.contains(&sock) && last.contains("start the server first or raise --link-timeout"),
        "{last}"
    );
    assert!(
        run.elapsed >= Duration::from_secs(1) && run.elapsed < Duration::from_secs(15),
        "waited {:?}",
        run.elapsed
    );
}

/// Stats intervals below a millisecond print totals without rates.
#[test]
fn no_rates_below_a_millisecond() {
    let _g = serial();
    let run = run_with(
        eal("0-1", &["net_null0,size=64", "net_null1,size=64"]),
        &["--stats-interval", "0.0005", "--duration", "0.3"],
    );
    assert_eq!(run.code(), 0, "{}", run.describe());
    let lines: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with('[')).collect();
    assert!(!lines.is_empty(), "{}", run.describe());
    for l in lines {
        assert!(!l.contains("Mpps") && l.contains("total rx"), "{l}");
    }
}
