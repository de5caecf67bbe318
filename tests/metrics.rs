//! `--metrics ADDR:PORT`: Prometheus text served at `/metrics` while
//! tqfwd forwards on `net_null` (endless 64-byte frames). Two scrapes a
//! moment apart are parsed with a real parser (`prometheus-parse`); every
//! sample line must be parsed and typed, the counters must carry their
//! labels and grow, and the run must still end with its checks holding.
//! With `--latency` the quantiles are there, ordered, and their count
//! grows; every hand-off queue has its occupancy gauges with either
//! backend, and a stalled worker's input queue shows full.
//! Runs last until SIGINT, so a slow machine cannot run out of run before
//! the checks. Usage: an address in use or unparsable is exit 2 naming
//! `--metrics`, before EAL starts.

mod common;

use common::*;
use prometheus_parse::{Scrape, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
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
    // lcore 0: RX, default worker, TX; lcore 1: the kv class's worker
    // (and RX of its dedicated queue where a port has one).
    let (mut p, addr) = start(&[
        "--worker-lcores",
        "0",
        "--class",
        "kv:udp:1",
        "--stats-json",
        json.to_str().unwrap(),
    ]);
    let start = Instant::now();
    let first = scrape_until(&mut p, addr, "packets", |s| {
        value(s, "tqfwd_rx_packets_total", &[]).unwrap_or(0.0) > 0.0
    });
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
    // Sharded: RX lcores 0 and 1 to workers 0 (default) and 1 (kv), both
    // workers to TX lcore 0.
    let queues = [
        ("rx_to_worker", "0", "0"),
        ("rx_to_worker", "0", "1"),
        ("rx_to_worker", "1", "0"),
        ("rx_to_worker", "1", "1"),
        ("worker_to_tx", "0", "0"),
        ("worker_to_tx", "1", "0"),
    ];
    assert_queues(&second, &queues, 2048);
    assert!(
        value(&second, "tqfwd_latency_seconds", &[("quantile", "0.5")]).is_none(),
        "no latency metrics without --latency"
    );
    assert!(value(&second, "tqfwd_capture_written_total", &[("port", "0")]).is_none());
    p.signal("INT");

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

/// Exactly these hand-off queues (stage, from, to) have both gauges, with
/// 0 <= packets <= capacity = `capacity`.
fn assert_queues(s: &Scrape, queues: &[(&str, &str, &str)], capacity: u64) {
    for metric in [
        "tqfwd_handoff_queue_packets",
        "tqfwd_handoff_queue_capacity",
    ] {
        let n = s.samples.iter().filter(|x| x.metric == metric).count();
        assert_eq!(n, queues.len(), "{metric}: one per hand-off queue");
    }
    for (stage, from, to) in queues {
        let labels = [("stage", *stage), ("from", *from), ("to", *to)];
        let cap = must(s, "tqfwd_handoff_queue_capacity", &labels);
        let packets = must(s, "tqfwd_handoff_queue_packets", &labels);
        assert_eq!(cap, capacity as f64, "{labels:?}");
        assert!(
            (0.0..=cap).contains(&packets),
            "{labels:?}: {packets} of {cap}"
        );
    }
}

/// Starts tqfwd on two `net_null` ports with `--metrics` and `app`
/// (which sets no `--duration`: the run lasts until SIGINT).
fn start(app: &[&str]) -> (Proc, SocketAddr) {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let addr_arg = addr.to_string();
    let mut args = app.to_vec();
    args.extend(["--metrics", &addr_arg]);
    (spawn_live_null("0-1", &args).0, addr)
}

/// Scrapes every 100 ms until `ok` holds (20 s at most).
fn scrape_until(
    p: &mut Proc,
    addr: SocketAddr,
    what: &str,
    ok: impl Fn(&Scrape) -> bool,
) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && p.exited().is_none() {
        if let Some(s) = scrape(addr).ok().filter(&ok) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no scrape with {what}\n{}", p.text())
}

#[test]
fn latency_quantiles_are_scraped_live() {
    let _g = serial();
    let (mut p, addr) = start(&["--latency"]);
    let count = |s: &Scrape| value(s, "tqfwd_latency_seconds_count", &[]).unwrap_or(0.0);
    let first = scrape_until(&mut p, addr, "latency samples", |s| count(s) > 0.0);
    let second = scrape_until(&mut p, addr, "more latency samples", |s| {
        count(s) > count(&first)
    });
    for s in [&first, &second] {
        let q: Vec<f64> = ["0.5", "0.9", "0.99", "0.999"]
            .iter()
            .map(|q| must(s, "tqfwd_latency_seconds", &[("quantile", q)]))
            .collect();
        assert!(q[0] > 0.0, "{q:?}");
        assert!(
            q.windows(2).all(|w| w[0] <= w[1]),
            "quantiles in order: {q:?}"
        );
        // Below a second: cycles were turned into seconds.
        assert!(q[3] < 1.0, "{q:?}");
        let (sum, n) = (
            must(s, "tqfwd_latency_seconds_sum", &[]),
            must(s, "tqfwd_latency_seconds_count", &[]),
        );
        assert!(sum > 0.0 && n > 0.0, "sum {sum} count {n}");
    }
    stop_live(&mut p);
}

/// RX lcore 0 → worker lcore 1 → TX lcore 0, `--on-full wait`, the worker
/// asleep for 3 s at its first packet: its input queue fills up (RX waits,
/// drops nothing), whichever the backend; afterwards every gauge stays
/// within its capacity.
#[test]
fn handoff_queue_occupancy_with_both_backends() {
    let _g = serial();
    for (backend, topology) in [("tq", "shared"), ("ring", "sharded")] {
        let (mut p, addr) = start(&[
            "--backend",
            backend,
            "--topology",
            topology,
            "--rx-lcores",
            "0",
            "--worker-lcores",
            "1",
            "--tx-lcores",
            "0",
            "--depth",
            "1024",
            "--on-full",
            "wait",
            "--debug-stall-worker",
            "0:3000",
        ]);
        let queues = [("rx_to_worker", "0", "1"), ("worker_to_tx", "1", "0")];
        let stalled = [("stage", "rx_to_worker"), ("from", "0"), ("to", "1")];
        let full = scrape_until(&mut p, addr, &format!("{backend}: a full queue"), |s| {
            value(s, "tqfwd_handoff_queue_packets", &stalled) == Some(1024.0)
        });
        assert_queues(&full, &queues, 1024);
        let info = [("backend", backend), ("topology", topology)];
        must(&full, "tqfwd_info", &info);
        let moving = scrape_until(&mut p, addr, &format!("{backend}: traffic"), |s| {
            value(s, "tqfwd_tx_packets_total", &[]).unwrap_or(0.0) > 0.0
        });
        assert_queues(&moving, &queues, 1024);
        stop_live(&mut p);
    }
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
