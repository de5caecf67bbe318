//! `--metrics ADDR:PORT`: Prometheus text served at `/metrics` while
//! tqfwd forwards on `net_null` (endless 64-byte frames). Two scrapes a
//! moment apart are parsed with a real parser (`prometheus-parse`); every
//! sample line must be parsed and typed, the counters must carry their
//! labels and grow, and the run must still end with its checks holding.
//! Usage: an address in use or unparsable is exit 2 naming `--metrics`,
//! before EAL starts.

mod common;

use common::*;
use prometheus_parse::{Scrape, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

/// A port nobody listens on right now: bind port 0, note it, release it.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    l.local_addr().unwrap().port()
}

/// One `GET path` over a plain TCP stream: (status line, headers, body).
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(String, String, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
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

/// Scrapes and parses; every sample line must become a typed sample (the
/// parser skips what it cannot read, so count the lines too).
fn scrape(addr: SocketAddr) -> Result<Scrape, String> {
    let (status, headers, body) = get(addr, "/metrics").map_err(|e| e.to_string())?;
    if status != "HTTP/1.1 200 OK" {
        return Err(format!("status {status:?}"));
    }
    assert!(
        headers.contains("Content-Type: text/plain; version=0.0.4"),
        "{headers}"
    );
    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("parse");
    let sample_lines = body
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(
        scrape.samples.len(),
        sample_lines,
        "every sample line parses\n{body}"
    );
    for s in &scrape.samples {
        assert!(
            matches!(s.value, Value::Counter(_) | Value::Gauge(_)),
            "{} has no TYPE line of its own: {:?}",
            s.metric,
            s.value
        );
        assert!(
            scrape.docs.contains_key(&s.metric),
            "{} has no HELP",
            s.metric
        );
    }
    Ok(scrape)
}

/// The value of `metric` with exactly these labels.
fn value(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| {
            x.metric == metric
                && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v))
                && x.labels.len() == labels.len()
        })
        .map(|x| match x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

fn must(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    value(s, metric, labels).unwrap_or_else(|| {
        let have: Vec<String> = s
            .samples
            .iter()
            .filter(|x| x.metric == metric)
            .map(|x| format!("{:?}", x.labels))
            .collect();
        panic!("{metric} {labels:?} missing; present: {have:?}")
    })
}

/// (metric, labels) that are counters and must grow between the scrapes.
const GROWING: &[(&str, &[(&str, &str)])] = &[
    ("tqfwd_rx_packets_total", &[]),
    ("tqfwd_tx_packets_total", &[]),
    (
        "tqfwd_port_rx_packets_total",
        &[("port", "0"), ("name", "net_null0")],
    ),
    (
        "tqfwd_port_tx_packets_total",
        &[("port", "1"), ("name", "net_null1")],
    ),
    (
        "tqfwd_port_ipackets_total",
        &[("port", "1"), ("name", "net_null1")],
    ),
    (
        "tqfwd_port_opackets_total",
        &[("port", "0"), ("name", "net_null0")],
    ),
    (
        "tqfwd_rxq_packets_total",
        &[
            ("port", "0"),
            ("name", "net_null0"),
            ("queue", "0"),
            ("lcore", "0"),
        ],
    ),
    (
        "tqfwd_lcore_rx_packets_total",
        &[("lcore", "0"), ("role", "rx+worker+tx")],
    ),
    (
        "tqfwd_lcore_worker_packets_total",
        &[("lcore", "0"), ("role", "rx+worker+tx")],
    ),
    (
        "tqfwd_lcore_tx_packets_total",
        &[("lcore", "0"), ("role", "rx+worker+tx")],
    ),
    (
        "tqfwd_lcore_busy_cycles_total",
        &[("lcore", "0"), ("role", "rx+worker+tx")],
    ),
    (
        "tqfwd_lcore_busy_polls_total",
        &[("lcore", "0"), ("role", "rx+worker+tx")],
    ),
    ("tqfwd_class_packets_total", &[("class", "default")]),
];

/// Present with these labels (values may stay put).
const PRESENT: &[(&str, &[(&str, &str)])] = &[
    ("tqfwd_up", &[]),
    ("tqfwd_tsc_hz", &[]),
    ("tqfwd_uptime_seconds", &[]),
    ("tqfwd_info", &[("backend", "tq"), ("topology", "sharded")]),
    ("tqfwd_mbufs_in_use", &[]),
    ("tqfwd_in_flight_packets", &[]),
    (
        "tqfwd_port_imissed_total",
        &[("port", "0"), ("name", "net_null0")],
    ),
    (
        "tqfwd_port_rx_nombuf_total",
        &[("port", "1"), ("name", "net_null1")],
    ),
    (
        "tqfwd_port_ierrors_total",
        &[("port", "0"), ("name", "net_null0")],
    ),
    (
        "tqfwd_port_oerrors_total",
        &[("port", "1"), ("name", "net_null1")],
    ),
    (
        "tqfwd_lcore_idle_cycles_total",
        &[("lcore", "1"), ("role", "rx+worker")],
    ),
    (
        "tqfwd_lcore_idle_polls_total",
        &[("lcore", "1"), ("role", "rx+worker")],
    ),
    (
        "tqfwd_lcore_worker_packets_total",
        &[("lcore", "1"), ("role", "rx+worker")],
    ),
    ("tqfwd_class_packets_total", &[("class", "kv")]),
    ("tqfwd_class_drops_total", &[("class", "default")]),
    ("tqfwd_class_drops_total", &[("class", "kv")]),
    (
        "tqfwd_class_dedicated_queue_packets_total",
        &[("class", "kv")],
    ),
];

#[test]
fn metrics_are_scraped_live_and_grow() {
    let _g = serial();
    let dir = scratch("metrics");
    let json = dir.join("stats.json");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let eal = eal_args(
        "0-1",
        &[
            "net_null0,size=64".to_string(),
            "net_null1,size=64".to_string(),
        ],
    );
    // lcore 0: RX, default worker, TX; lcore 1: the kv class's worker
    // (and RX of its dedicated queue where a port has one).
    let mut p = Proc::spawn(
        "tqfwd",
        Command::new(bin())
            .args(&eal)
            .arg("--")
            .args(["--worker-lcores", "0", "--class", "kv:udp:1"])
            .args(["--duration", "4", "--stats-interval", "0"])
            .arg("--metrics")
            .arg(addr.to_string())
            .arg("--stats-json")
            .arg(&json),
    );
    let start = Instant::now();
    let first = loop {
        assert!(
            start.elapsed() < Duration::from_secs(20) && p.exited().is_none(),
            "no scrape with packets\n{}",
            p.text()
        );
        std::thread::sleep(Duration::from_millis(200));
        if let Ok(s) = scrape(addr) {
            if value(&s, "tqfwd_rx_packets_total", &[]).unwrap_or(0.0) > 0.0 {
                break s;
            }
        }
    };
    std::thread::sleep(Duration::from_millis(700));
    // A client that connects and says nothing holds the server up to its
    // 1 s timeout, not more.
    let silent = TcpStream::connect(addr).expect("connect");
    let asked = Instant::now();
    let second = scrape(addr).unwrap_or_else(|e| panic!("second scrape: {e}\n{}", p.text()));
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "a silent client held the scrape {:?}",
        asked.elapsed()
    );
    drop(silent);

    for (metric, labels) in GROWING {
        let (a, b) = (must(&first, metric, labels), must(&second, metric, labels));
        assert!(b > a, "{metric} {labels:?} did not grow: {a} then {b}");
    }
    for s in [&first, &second] {
        for (metric, labels) in PRESENT {
            must(s, metric, labels);
        }
        for reason in ["runt", "rx_handoff_full", "worker_handoff_full", "tx_full"] {
            must(s, "tqfwd_drops_total", &[("reason", reason)]);
        }
        let drops: f64 = s
            .samples
            .iter()
            .filter(|x| x.metric == "tqfwd_drops_total")
            .map(|x| match x.value {
                Value::Counter(v) => v,
                _ => 0.0,
            })
            .sum();
        let (rx, tx) = (
            must(s, "tqfwd_rx_packets_total", &[]),
            must(s, "tqfwd_tx_packets_total", &[]),
        );
        assert!(rx >= tx + drops, "a snapshot never shows more out than in");
        assert_eq!(must(s, "tqfwd_up", &[]), 1.0);
        assert!(must(s, "tqfwd_tsc_hz", &[]) > 0.0);
        // A per-role metric exists only for lcores that hold the role.
        assert!(value(
            s,
            "tqfwd_lcore_tx_packets_total",
            &[("lcore", "1"), ("role", "rx+worker")]
        )
        .is_none());
    }
    assert_eq!(must(&first, "tqfwd_forwarding", &[]), 1.0);
    let (status, _, body) = get(addr, "/nothing").unwrap();
    assert!(status.contains("404"), "{status} {body}");

    let status = p
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("tqfwd did not exit\n{}", p.text()));
    let run = Run {
        status,
        stdout: p.text(),
        stderr: p.text(),
        json: std::fs::read_to_string(&json)
            .ok()
            .map(|s| serde_json::from_str(&s).expect("valid JSON")),
        elapsed: start.elapsed(),
    };
    assert_clean_end(&run);
    let final_rx = run.json()["rx_packets"].as_u64().unwrap() as f64;
    assert!(final_rx >= must(&second, "tqfwd_rx_packets_total", &[]));
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err(),
        "the metrics socket closes with the run"
    );
}

#[test]
fn metrics_address_in_use_or_bad_is_a_usage_error() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = holder.local_addr().unwrap().to_string();
    let eal = eal_args("0-1", &["net_null0".to_string(), "net_null1".to_string()]);
    for (bad, needle) in [
        (taken.as_str(), "already in use"),
        ("localhost", "is not ADDR:PORT"),
        ("127.0.0.1:99999", "is not ADDR:PORT"),
    ] {
        let mut args: Vec<&str> = eal.iter().map(|s| s.as_str()).collect();
        args.extend(["--", "--duration", "1", "--metrics", bad]);
        let run = run_raw(&args, Duration::from_secs(30));
        assert_eq!(run.code(), 2, "{bad}: {}", run.describe());
        let ours: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("tqfwd: error: "))
            .collect();
        assert_eq!(ours.len(), 1, "one error line: {}", run.describe());
        assert!(
            ours[0].contains("--metrics") && ours[0].contains(needle),
            "{bad}: {:?}",
            ours[0]
        );
        assert!(
            !run.stderr.contains("EAL:"),
            "{bad}: refused before EAL starts\n{}",
            run.describe()
        );
    }
    drop(holder);
}
