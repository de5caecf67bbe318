//! `--capture PORT:FILE`: the first N frames received on a port land in a
//! pcapng file byte for byte (chains whole), under the port's name, with
//! RX timestamps near the run's wall-clock time; a writer that cannot keep
//! up loses copies (capture_dropped), never packets; bad values are usage
//! errors; dpdk-dumpcap attaches and detaches without harm.

use crate::common::*;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tqfwd::testkit::gen::{self, Flow};

/// Interface names and (timestamp, frame) of every packet in a pcapng file.
fn read_pcapng(path: &std::path::Path) -> (Vec<String>, Vec<(Duration, Vec<u8>)>) {
    let file = std::fs::File::open(path).expect("capture file");
    let mut reader = PcapNgReader::new(file).expect("pcapng section header");
    let mut names = Vec::new();
    let mut packets = Vec::new();
    while let Some(block) = reader.next_block() {
        match block.expect("valid pcapng block") {
            Block::InterfaceDescription(idb) => {
                for o in &idb.options {
                    if let InterfaceDescriptionOption::IfName(n) = o {
                        names.push(n.to_string());
                    }
                    if let InterfaceDescriptionOption::IfTsResol(r) = o {
                        assert_eq!(*r, 9, "nanosecond timestamps");
                    }
                }
            }
            Block::EnhancedPacket(epb) => {
                assert_eq!(epb.original_len as usize, epb.data.len(), "whole frames");
                packets.push((epb.timestamp, epb.data.into_owned()));
            }
            _ => {}
        }
    }
    (names, packets)
}

/// Mixed sizes, chains included (net_pcap chains frames over 2048 bytes).
fn input_frames() -> Vec<Vec<u8>> {
    const SIZES: [usize; 6] = [64, 1514, 9000, 100, 4097, 2049];
    (0..600)
        .map(|i| {
            gen::udp_frame_sized(
                &Flow::nth(i % 4),
                (i % 4) as u32,
                i as u64,
                SIZES[i % SIZES.len()],
                false,
                gen::DEFAULT_SRC_MAC,
                gen::DEFAULT_DST_MAC,
            )
        })
        .collect()
}

#[test]
fn capture_writes_first_frames_byte_for_byte() {
    let _g = serial();
    let dir = scratch("capture");
    let input = input_frames();
    let vdevs = one_way_pcap_ports(&dir, &input);
    let cap = dir.join("port0.pcapng");
    let arg = format!("0:{}", cap.display());
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let run = run_tqfwd(
        &dir,
        &eal_args("0-1", &vdevs),
        &[
            "--on-full",
            "wait",
            "--duration",
            "2",
            "--stats-interval",
            "0",
            "--capture",
            &arg,
            "--capture-count",
            "250",
        ],
        Duration::from_secs(60),
    );
    let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    assert_clean_end(&run);
    let j = run.json();
    assert_eq!(j["rx_packets"].as_u64().unwrap(), input.len() as u64);
    assert_eq!(j["tx_packets"].as_u64().unwrap(), input.len() as u64);
    assert_eq!(j["capture_dropped"].as_u64(), Some(0), "{}", run.describe());
    assert_eq!(j["capture"][0]["written"].as_u64(), Some(250));
    assert!(run.stdout.contains("capture port 0 (net_pcap0)"));

    let (names, packets) = read_pcapng(&cap);
    assert_eq!(names, vec!["net_pcap0".to_string()], "interface name");
    assert_eq!(packets.len(), 250, "--capture-count frames");
    for (i, (_, data)) in packets.iter().enumerate() {
        // As received: before the MAC rewrite the forwarded copy gets.
        assert!(
            data == &input[i],
            "frame {i}: {} bytes captured vs {} input",
            data.len(),
            input[i].len()
        );
    }
    assert!(packets.iter().any(|(_, d)| d.len() == 9000), "chains whole");
    for w in packets.windows(2) {
        assert!(w[0].0 <= w[1].0, "timestamps non-decreasing");
    }
    let slack = Duration::from_secs(2);
    for (ts, _) in &packets {
        assert!(
            *ts + slack >= before && *ts <= after + slack,
            "timestamp {ts:?} outside the run [{before:?}, {after:?}]"
        );
    }
}

/// Captures port 0 of two net_null ports on lcores 0-1 for `seconds`
/// with `extra` options; checks the run ended clean (exit 0, conservation,
/// 0 mbufs in use) and that the file holds every frame counted written.
/// Returns the run's JSON and (written, capture_dropped).
fn null_capture(name: &str, seconds: &str, extra: &[&str]) -> (serde_json::Value, u64, u64) {
    let _g = serial();
    let dir = scratch(name);
    let cap = dir.join("null0.pcapng");
    let arg = format!("0:{}", cap.display());
    let mut opts = vec![
        "--duration",
        seconds,
        "--stats-interval",
        "0",
        "--capture",
        &arg,
    ];
    opts.extend_from_slice(extra);
    let run = run_tqfwd(
        &dir,
        &eal_args(
            "0-1",
            &["net_null0,size=64".into(), "net_null1,size=64".into()],
        ),
        &opts,
        Duration::from_secs(60),
    );
    assert_eq!(run.code(), 0, "{}", run.describe());
    let j = run.json().clone();
    assert_eq!(j["conservation_ok"], true, "{}", run.describe());
    assert_eq!(j["mbufs_in_use"], 0, "{}", run.describe());
    let dropped = j["capture_dropped"].as_u64().unwrap();
    let written = j["capture"][0]["written"].as_u64().unwrap();
    let (_, packets) = read_pcapng(&cap);
    assert_eq!(packets.len() as u64, written);
    assert!(run.stdout.contains(&format!("capture_dropped {dropped}")));
    (j, written, dropped)
}

#[test]
fn slow_writer_drops_copies_not_packets() {
    let (j, written, dropped) = null_capture(
        "capture-drop",
        "1",
        &["--capture-count", "100000", "--debug-capture-stall", "300"],
    );
    assert!(dropped > 0, "a stalled writer's ring overflows: {j}");
    assert_eq!(
        dropped + written,
        100_000,
        "every copy of the first N frames written or counted"
    );
}

/// A count no run reaches, with a writer that falls behind (here it
/// shares a CPU with an lcore): forwarding goes on at its pace, the
/// copies that do not fit are dropped and counted, and every frame of the
/// captured port is either written or counted. Judged by packets: a tap
/// that held the RX lcore back would forward about what the capture ring
/// holds, not millions. On a host with a CPU free for the writer the file grows at
/// the writer's pace (about 100 bytes a frame).
#[test]
fn endless_capture_keeps_forwarding() {
    let (j, written, dropped) =
        null_capture("capture-endless", "2", &["--capture-count", "1000000000"]);
    let forwarded = j["tx_packets"].as_u64().unwrap();
    assert!(
        forwarded >= 2_000_000,
        "forwarding went on while the capture ran: {forwarded} packets forwarded: {j}"
    );
    let port0_rx = j["ports"][0]["rx_packets"].as_u64().unwrap();
    assert!(dropped > 0, "a writer behind drops copies: {j}");
    assert_eq!(
        written + dropped,
        port0_rx,
        "every frame received on the captured port written or counted: {j}"
    );
}

#[test]
fn bad_capture_values_are_usage_errors() {
    let _g = serial();
    let dir = scratch("capture-usage");
    let good = format!("0:{}", dir.join("ok.pcapng").display());
    let missing_dir = format!("0:{}", dir.join("nope/x.pcapng").display());
    let is_dir = format!("0:{}", dir.display());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--capture".into(), "x:/tmp/a".into()], "--capture"),
        (vec!["--capture".into(), "0".into()], "--capture"),
        (vec!["--capture".into(), missing_dir], "--capture 0:"),
        (vec!["--capture".into(), is_dir], "is a directory"),
        (
            vec![
                "--capture".into(),
                good.clone(),
                "--capture-count".into(),
                "0".into(),
            ],
            "--capture-count",
        ),
        (
            vec![
                "--capture".into(),
                format!("7:{}", dir.join("p7").display()),
            ],
            "--capture names port 7",
        ),
        (
            vec![
                "--capture".into(),
                good.clone(),
                "--capture".into(),
                format!("0:{}", dir.join("again").display()),
            ],
            "--capture names port 0 twice",
        ),
    ];
    let eal = eal_args(
        "0-1",
        &["net_null0,size=64".into(), "net_null1,size=64".into()],
    );
    for (app, needle) in cases {
        let mut args: Vec<&str> = eal.iter().map(|s| s.as_str()).collect();
        args.push("--");
        args.extend(app.iter().map(|s| s.as_str()));
        args.extend(["--duration", "1"]);
        let run = run_raw(&args, Duration::from_secs(30));
        assert_eq!(run.code(), 2, "{app:?}: {}", run.describe());
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("tqfwd: error"))
            .collect();
        assert_eq!(lines.len(), 1, "{app:?}: one line: {}", run.describe());
        assert!(
            lines[0].contains(needle),
            "{app:?}: '{}' should name {needle}",
            lines[0]
        );
    }
}

/// Removes what a primary with `prefix` left if it did not clean up (a
/// crash): its huge page files and its runtime directory.
fn remove_hugepage_files(prefix: &str) {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    for dir in mounts
        .lines()
        .filter(|l| l.contains("hugetlbfs"))
        .filter_map(|l| l.split_whitespace().nth(1))
    {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("{prefix}map_")) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
}

/// dpdk-dumpcap attaches to a running tqfwd (pdump is on unless
/// --no-pdump; no --in-memory, same --file-prefix), its counters move, and
/// it detaches, again and again, while tqfwd forwards: DPDK 22.11's pdump
/// races an lcore in its callback on each detach (src/dpdk/pdump.rs), and
/// tqfwd's reply gate must make every one of them safe. Without the gate
/// a run of 6 detaches ended in SIGSEGV more often than not.
#[test]
fn dumpcap_attaches_and_detaches_while_forwarding() {
    let _g = serial();
    let name = "dumpcap_attaches_and_detaches_while_forwarding";
    if !have_command("dpdk-dumpcap") {
        skip_test(name, "dpdk-dumpcap is not installed");
        return;
    }
    if !hugepages_usable() {
        skip_test(
            name,
            "a secondary process needs huge pages (none free here)",
        );
        return;
    }
    let dir = scratch("dumpcap");
    let json = dir.join("stats.json");
    let prefix = unique_name("tqfwddc");
    let mut tq = Proc::spawn(
        "tqfwd",
        std::process::Command::new(bin())
            .args([
                "-l",
                "0-1",
                "--no-pci",
                "-m",
                "512",
                "--file-prefix",
                &prefix,
                "--vdev=net_null0,size=64",
                "--vdev=net_null1,size=64",
                "--",
                "--duration",
                "120",
                "--stats-interval",
                "0",
                "--stats-json",
            ])
            .arg(&json),
    );
    tq.wait_until("forwarding", Duration::from_secs(20), |t| {
        t.contains("forwarding:")
    })
    .unwrap();
    for round in 0..6 {
        let iface = ["net_null0", "net_null1"][round % 2];
        let out = std::process::Command::new("timeout")
            .args(["20", "dpdk-dumpcap", "--file-prefix", &prefix])
            .args(["-i", iface, "-a", "duration:1", "-w"])
            .arg(dir.join(format!("dc{round}.pcapng")))
            .output()
            .expect("run dpdk-dumpcap");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            tq.exited().is_none(),
            "round {round}: tqfwd died when dumpcap detached: {:?}\n{}\ndumpcap: {text}",
            tq.exited(),
            tq.text()
        );
        // "Packets received/dropped on interface 'net_null0': R/D (..)".
        let line = text
            .lines()
            .find(|l| l.contains(&format!("received/dropped on interface '{iface}'")))
            .unwrap_or_else(|| panic!("round {round}: dumpcap attached: {text}"));
        let counts = line.rsplit(": ").next().unwrap_or("");
        let counts = counts.split_whitespace().next().unwrap_or("");
        let (r, d) = counts.split_once('/').expect("R/D");
        let (r, d): (u64, u64) = (r.parse().unwrap(), d.parse().unwrap());
        assert!(r + d > 0, "round {round}: dumpcap's counters move: {line}");
        assert!(
            out.status.success(),
            "round {round}: dpdk-dumpcap exit: {text}"
        );
    }
    tq.signal("INT");
    let status = tq.wait_exit(Duration::from_secs(30));
    remove_hugepage_files(&prefix);
    let status = status.unwrap_or_else(|| panic!("tqfwd did not exit\n{}", tq.text()));
    assert!(status.success(), "tqfwd exit {status:?}\n{}", tq.text());
    assert!(
        !tq.text().contains("can crash this process"),
        "the reply gate is in place: {}",
        tq.text()
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["conservation_ok"], true, "{j}");
    assert_eq!(j["mbufs_in_use"], 0, "{j}");
    let _ = std::fs::remove_dir_all(&dir);
}
