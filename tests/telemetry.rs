//! DPDK telemetry: a running tqfwd answers `/tqfwd/*` through the standard
//! socket, read with DPDK's own `dpdk-telemetry.py`, and the figures agree
//! with the final JSON.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn telemetry_reports_live_counters() {
    let _g = serial();
    let dir = scratch("telemetry");
    let json = dir.join("stats.json");
    let eal = eal_args(
        "0-1",
        &[
            "net_null0,size=64".to_string(),
            "net_null1,size=64".to_string(),
        ],
    );
    let prefix = eal[eal.iter().position(|a| a == "--file-prefix").unwrap() + 1].clone();
    let mut child = Command::new(bin())
        .args(&eal)
        .arg("--")
        .args([
            "--on-full",
            "wait",
            "--duration",
            "4",
            "--stats-interval",
            "0",
            "--stats-json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the socket, then for packets to flow.
    let start = Instant::now();
    let first = loop {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no telemetry answer"
        );
        std::thread::sleep(Duration::from_millis(300));
        let r = query(&prefix, &["/tqfwd/stats"]);
        if let Some(v) = r.first() {
            if v["/tqfwd/stats"]["rx_packets"].as_u64().unwrap_or(0) > 0 {
                break v.clone();
            }
        }
    };
    std::thread::sleep(Duration::from_millis(500));
    let r = query(
        &prefix,
        &[
            "/tqfwd/stats",
            "/tqfwd/lcores",
            "/tqfwd/ports",
            "/tqfwd/queues",
        ],
    );
    assert_eq!(r.len(), 4, "four answers: {r:?}");
    let s1 = &first["/tqfwd/stats"];
    let s2 = &r[0]["/tqfwd/stats"];
    assert_eq!(s2["state"], "running");
    assert_eq!(s2["backend"], "tq");
    for key in [
        "rx_packets",
        "tx_packets",
        "drops_total",
        "mbufs_in_use",
        "in_flight",
    ] {
        assert!(s2[key].is_u64(), "{key} missing: {s2}");
    }
    for reason in ["runt", "rx_handoff_full", "worker_handoff_full", "tx_full"] {
        assert!(s2["drops"][reason].is_u64(), "drops.{reason} missing");
    }
    assert!(
        s2["rx_packets"].as_u64().unwrap() > s1["rx_packets"].as_u64().unwrap(),
        "counters move"
    );
    let (rx, tx, drops) = (
        s2["rx_packets"].as_u64().unwrap(),
        s2["tx_packets"].as_u64().unwrap(),
        s2["drops_total"].as_u64().unwrap(),
    );
    assert!(rx >= tx + drops, "a snapshot never shows more out than in");
    let lcores = &r[1]["/tqfwd/lcores"];
    assert_eq!(lcores["lcore0"]["roles"], "rx+tx");
    assert_eq!(lcores["lcore1"]["roles"], "worker");
    assert!(lcores["lcore1"]["worker_packets"].as_u64().unwrap() > 0);
    let ports = &r[2]["/tqfwd/ports"];
    assert_eq!(ports["port0"]["driver"], "net_null");
    assert!(ports["port1"]["rx_packets"].as_u64().unwrap() > 0);
    assert!(
        r[3]["/tqfwd/queues"]["port0"]["rxq0_lcore0"]
            .as_u64()
            .unwrap()
            > 0
    );

    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        j["rx_packets"].as_u64().unwrap() >= rx,
        "final count below a live one"
    );
    assert_eq!(j["conservation_ok"], true);
    let _ = std::fs::remove_dir_all(&dir);
}
