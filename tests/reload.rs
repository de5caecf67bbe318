//! SIGHUP reloads the `--config` file while forwarding (`src/reload.rs`):
//! a changed peer MAC and `--rx-rate` are applied between bursts with no
//! packet lost; a changed lcore list, and a file that no longer parses,
//! are refused with one log line and the run goes on unchanged.
//!
//! Traffic: port 0 replays a pcap of 64 flows endlessly (`infinite_rx`),
//! `--rx-rate` keeps it steady, and what port 1 transmits is written to
//! `out1.pcap` with its TX times, so the test reads, frame by frame, which
//! MAC each frame left with and at what rate.

use crate::common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tqfwd::testkit::{gen, pcap};

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 0x01];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x02];

fn mac_text(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The config file: port 1's peer MAC, the rate in Mpps, `--on-full
/// wait`, and `extra` lines.
fn config(path: &Path, peer: [u8; 6], mpps: f64, extra: &str) {
    std::fs::write(
        path,
        format!(
            "peer-mac = [\"1={}\"]\nrx-rate = {mpps}\non-full = \"wait\"\nstats-interval = 0.5\n{extra}",
            mac_text(peer)
        ),
    )
    .expect("write config");
}

/// A forwarder started with `--config conf.toml` (written by the caller)
/// on `lcores`: port 0 replays 64 flows endlessly, port 1 transmits into
/// DIR/out1.pcap; seen forwarding.
fn start(dir: &Path, lcores: &str) -> Proc {
    let frames = gen::udp_stream(64, 256, 64);
    let input = dir.join("flows.pcap");
    pcap::write_all(&input, &frames).expect("write pcap");
    let empty = dir.join("empty.pcap");
    pcap::write_all(&empty, Vec::<Vec<u8>>::new()).expect("write empty pcap");
    let eal = eal_args(
        lcores,
        &[
            format!(
                "net_pcap0,rx_pcap={},tx_pcap={},infinite_rx=1",
                input.display(),
                dir.join("out0.pcap").display()
            ),
            format!(
                "net_pcap1,rx_pcap={},tx_pcap={}",
                empty.display(),
                dir.join("out1.pcap").display()
            ),
        ],
    );
    let mut p = Proc::spawn(
        "tqfwd",
        Command::new(bin())
            .args(&eal)
            .arg("--")
            .arg("--config")
            .arg(dir.join("conf.toml"))
            .arg("--stats-json")
            .arg(dir.join("stats.json"))
            .args(["--duration", "60"])
            .env("RUST_LOG", "info"),
    );
    p.wait_until("forwarding", Duration::from_secs(30), |t| {
        t.contains("forwarding: backend")
    })
    .unwrap();
    p
}

/// SIGINT, exit 0, and the end checks: conservation, 0 mbufs in use,
/// nothing dropped (`--on-full wait`). Returns the JSON.
fn stop_clean(p: &mut Proc, dir: &Path) -> serde_json::Value {
    p.signal("INT");
    let j = clean_exit_json(p, dir, Duration::from_secs(20));
    let text = p.text();
    assert_eq!(j["drops_total"], 0, "{text}");
    assert_eq!(j["rx_packets"], j["tx_packets"], "{text}");
    j
}

/// Frames per second over the frames of `frames` sent at least 200 ms
/// after the first of them (the TX times `net_pcap` wrote).
fn steady_rate(frames: &[&pcap::PcapPacket]) -> f64 {
    let t0 = frames[0].ts_ns + 200_000_000;
    let later: Vec<u64> = frames
        .iter()
        .map(|f| f.ts_ns)
        .filter(|&t| t >= t0)
        .collect();
    assert!(later.len() > 1000, "too few frames to judge a rate");
    let span = (later[later.len() - 1] - later[0]) as f64 / 1e9;
    (later.len() - 1) as f64 / span
}

/// The done-when case: the peer MAC and the rate change in the file
/// mid-run, SIGHUP applies them; the frames before the reload carry the
/// old MAC at the old rate, every frame after the first new one carries
/// the new MAC, at the new rate (within 10 %), and at exit nothing was
/// lost, dropped or left in use.
#[test]
fn sighup_applies_a_new_peer_mac_and_rate() {
    let _g = serial();
    let dir = scratch("reload-apply");
    config(&dir.join("conf.toml"), MAC_A, 0.02, "");
    let mut p = start(&dir, "0-1");
    std::thread::sleep(Duration::from_millis(1500));
    config(&dir.join("conf.toml"), MAC_B, 0.05, "");
    p.signal("HUP");
    p.wait_until("the reload applied", Duration::from_secs(5), |t| {
        t.lines().any(|l| {
            l.contains("reload ")
                && l.contains(": applied")
                && l.contains("peer-mac")
                && l.contains("rx-rate")
        })
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    assert!(
        p.exited().is_none(),
        "the reload stopped the run\n{}",
        p.text()
    );
    let j = stop_clean(&mut p, &dir);

    let out = pcap::read_all(dir.join("out1.pcap")).expect("read out1.pcap");
    assert_eq!(out.len() as u64, j["tx_packets"].as_u64().unwrap());
    let first_b = out
        .iter()
        .position(|f| f.data[..6] == MAC_B)
        .unwrap_or_else(|| panic!("no frame with the new MAC\n{}", p.text()));
    let (before, after) = out.split_at(first_b);
    assert!(
        before.iter().all(|f| f.data[..6] == MAC_A),
        "a frame before the reload did not carry the old peer MAC"
    );
    let stale = after.iter().filter(|f| f.data[..6] != MAC_B).count();
    assert_eq!(
        stale, 0,
        "{stale} frames after the first new one kept another MAC"
    );
    let old_rate = steady_rate(&before.iter().collect::<Vec<_>>());
    let new_rate = steady_rate(&after.iter().collect::<Vec<_>>());
    assert!(
        (old_rate / 20_000.0 - 1.0).abs() <= 0.1,
        "before the reload {old_rate:.0} frames/s, --rx-rate 0.02 asked 20000\n{}",
        p.text()
    );
    assert!(
        (new_rate / 50_000.0 - 1.0).abs() <= 0.1,
        "after the reload {new_rate:.0} frames/s, --rx-rate 0.05 asked 50000\n{}",
        p.text()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A changed lcore list is refused with one line naming it (and the peer
/// MAC changed beside it is not applied: the reload is refused whole); a
/// file that no longer parses is refused with its parse error; the run
/// goes on with its settings, and ends clean.
#[test]
fn sighup_refuses_fixed_keys_and_a_broken_file() {
    let _g = serial();
    let dir = scratch("reload-refuse");
    let conf = dir.join("conf.toml");
    config(&conf, MAC_A, 0.02, "worker-lcores = \"1\"\n");
    let mut p = start(&dir, "0-1");
    config(&conf, MAC_B, 0.02, "worker-lcores = \"0\"\n");
    p.signal("HUP");
    p.wait_until("the refusal", Duration::from_secs(5), |t| {
        t.lines().any(|l| {
            l.contains("refused, nothing changed")
                && l.contains("'worker-lcores'")
                && !l.contains("'peer-mac'")
                && l.contains("cannot change while forwarding")
        })
    })
    .unwrap();
    std::fs::write(&conf, "rx-rate = = 1\n").unwrap();
    p.signal("HUP");
    p.wait_until("the parse error", Duration::from_secs(5), |t| {
        t.lines().any(|l| {
            l.contains("reload refused, nothing changed: config file") && l.contains("line 1")
        })
    })
    .unwrap();
    // The run goes on: a stats line (every 0.5 s) after the refusals.
    let lines_then = p.text().matches(" Mpps  tx ").count();
    p.wait_until(
        "a stats line after the refusals",
        Duration::from_secs(5),
        |t| t.matches(" Mpps  tx ").count() > lines_then,
    )
    .unwrap();
    let text = p.text();
    assert!(
        !text
            .lines()
            .any(|l| l.contains("reload ") && l.contains(": applied")),
        "a refused reload applied something\n{text}"
    );
    stop_clean(&mut p, &dir);
    let out = pcap::read_all(dir.join("out1.pcap")).expect("read out1.pcap");
    assert!(!out.is_empty());
    assert!(
        out.iter().all(|f| f.data[..6] == MAC_A),
        "a refused reload changed the peer MAC"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
