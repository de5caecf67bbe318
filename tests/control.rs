//! Live control over DPDK telemetry, driven with DPDK's own
//! `dpdk-telemetry.py`: `/tqfwd/clear` rebases rates and per-lcore cycles
//! but not the totals, `/tqfwd/port_stop,N` / `/tqfwd/port_start,N` stop
//! and resume polling a port while traffic flows (nothing lost: the end
//! checks hold), `/tqfwd/log_level,LEVEL` changes tqfwd's log level; log
//! lines carry timestamps.

use crate::common::*;
use std::time::Duration;

/// One command's answer (the value under its name).
fn ask(prefix: &str, cmd: &str) -> serde_json::Value {
    let r = query(prefix, &[cmd]);
    let name = cmd.split(',').next().unwrap();
    r.first()
        .map(|v| v[name].clone())
        .unwrap_or_else(|| panic!("no answer to {cmd}"))
}

fn port_rx(prefix: &str, port: u32) -> u64 {
    ask(prefix, "/tqfwd/ports")[format!("port{port}")]["rx_packets"]
        .as_u64()
        .unwrap()
}

#[test]
fn clear_port_stop_start_and_log_level() {
    let _g = serial();
    let dir = scratch("control");
    let json = dir.join("stats.json");
    let (mut p, prefix) = spawn_live_null("0-1", &["--stats-json", json.to_str().unwrap()]);
    query_until(&mut p, &prefix, "/tqfwd/stats", "packets", |v| {
        v["rx_packets"].as_u64().unwrap_or(0) > 0
    });
    std::thread::sleep(Duration::from_millis(300));

    // clear: cycles and rates restart, totals do not.
    let before = ask(&prefix, "/tqfwd/lcores");
    let stats_before = ask(&prefix, "/tqfwd/stats");
    assert_eq!(ask(&prefix, "/tqfwd/clear")["cleared"], 1);
    let after = ask(&prefix, "/tqfwd/lcores");
    let stats_after = ask(&prefix, "/tqfwd/stats");
    let busy = |v: &serde_json::Value| v["lcore0"]["busy_cycles"].as_u64().unwrap();
    assert!(
        busy(&after) < busy(&before),
        "busy cycles restart at the clear: {} then {}",
        busy(&before),
        busy(&after)
    );
    assert!(
        after["lcore0"]["since_clear_ms"].as_u64().unwrap()
            < before["lcore0"]["since_clear_ms"].as_u64().unwrap()
    );
    assert!(
        stats_after["rx_packets"].as_u64().unwrap() >= stats_before["rx_packets"].as_u64().unwrap(),
        "totals are not cleared"
    );
    assert!(stats_after["rx_pps"].is_u64());

    // port_stop: port 1 is no longer polled while port 0 still is.
    let stopped = ask(&prefix, "/tqfwd/port_stop,1");
    assert_eq!(stopped["ok"], "port 1 stopped", "{stopped}");
    let (p0, p1) = (port_rx(&prefix, 0), port_rx(&prefix, 1));
    std::thread::sleep(Duration::from_millis(500));
    assert!(port_rx(&prefix, 0) > p0, "port 0 still forwards");
    assert_eq!(port_rx(&prefix, 1), p1, "port 1 is not polled");
    assert_eq!(
        ask(&prefix, "/tqfwd/port_stop,1")["ok"],
        "port 1 is already stopped"
    );
    assert!(ask(&prefix, "/tqfwd/port_stop,7")["error"]
        .as_str()
        .unwrap()
        .contains("no port 7"));
    assert!(ask(&prefix, "/tqfwd/port_start,x")["error"]
        .as_str()
        .unwrap()
        .contains("not a port number"));

    // port_start: polled again.
    assert_eq!(ask(&prefix, "/tqfwd/port_start,1")["ok"], "port 1 started");
    let p1 = port_rx(&prefix, 1);
    std::thread::sleep(Duration::from_millis(500));
    assert!(port_rx(&prefix, 1) > p1, "port 1 polled again");

    // log level: refused, then set.
    assert!(ask(&prefix, "/tqfwd/log_level,verbose")["error"]
        .as_str()
        .unwrap()
        .contains("'verbose'"));
    assert_eq!(ask(&prefix, "/tqfwd/log_level,debug")["log_level"], "DEBUG");

    assert!(
        p.exited().is_none(),
        "tqfwd runs until the operator stops it\n{}",
        p.text()
    );
    let err = stop_live(&mut p);
    for line in [
        "stopped by the operator",
        "started by the operator",
        "log level set to debug",
        "/tqfwd/clear",
    ] {
        assert!(err.contains(line), "log has '{line}': {err}");
    }
    // Timestamps: [2026-11-30T21:00:00.123Z INFO  tqfwd] ...
    let stamped = err
        .lines()
        .filter(|l| l.starts_with("[20") && l.as_bytes().get(11) == Some(&b'T'))
        .count();
    assert!(stamped >= 4, "log lines carry timestamps: {err}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["conservation_ok"], true, "{j}");
    assert_eq!(j["mbufs_in_use"], 0, "{j}");
    let _ = std::fs::remove_dir_all(&dir);
}
