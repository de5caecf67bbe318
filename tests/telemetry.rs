//! DPDK telemetry: a running tqfwd answers `/tqfwd/*` through the standard
//! socket, read with DPDK's own `dpdk-telemetry.py`, and the figures agree
//! with the final JSON.

use crate::common::*;
use std::time::Duration;

#[test]
fn telemetry_reports_live_counters() {
    let _g = serial();
    let dir = scratch("telemetry");
    let json = dir.join("stats.json");
    let (mut child, prefix) = spawn_live_null(
        "0-1",
        &["--on-full", "wait", "--stats-json", json.to_str().unwrap()],
    );
    // Wait for the socket, then for packets to flow.
    let flowing = |v: &serde_json::Value| v["rx_packets"].as_u64().unwrap_or(0) > 0;
    let s1 = query_until(&mut child, &prefix, "/tqfwd/stats", "packets", flowing);
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

    stop_live(&mut child);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        j["rx_packets"].as_u64().unwrap() >= rx,
        "final count below a live one"
    );
    assert_eq!(j["conservation_ok"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `/tqfwd/capture` shows a `--capture` while it runs: the frames taken,
/// written and dropped, under the JSON's names, ending where the JSON does.
#[test]
fn capture_counters_over_telemetry() {
    let _g = serial();
    let dir = scratch("telemetry-capture");
    let json = dir.join("stats.json");
    let cap = dir.join("port0.pcapng");
    let capture = format!("0:{}", cap.display());
    let (mut child, prefix) = spawn_live_null(
        "0-1",
        &[
            "--capture",
            &capture,
            "--capture-count",
            "700",
            "--stats-json",
            json.to_str().unwrap(),
        ],
    );
    let done = |v: &serde_json::Value| {
        let p = &v["port0"];
        p["written"].as_u64().unwrap_or(0) + p["capture_dropped"].as_u64().unwrap_or(0) >= 700
    };
    let capture = query_until(&mut child, &prefix, "/tqfwd/capture", "700 frames", done);
    let port0 = &capture["port0"];
    assert_eq!(port0["count"], 700, "{port0}");
    assert_eq!(port0["taken"], 700, "{port0}");
    assert!(
        port0.as_object().unwrap().len() == 4,
        "count, taken, written, capture_dropped: {port0}"
    );
    stop_live(&mut child);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["capture"][0]["written"], port0["written"], "{j}");
    assert_eq!(
        j["capture"][0]["capture_dropped"], port0["capture_dropped"],
        "{j}"
    );
    assert_eq!(j["conservation_ok"], true, "{j}");
    assert_eq!(j["mbufs_in_use"], 0, "{j}");
    let _ = std::fs::remove_dir_all(&dir);
}
