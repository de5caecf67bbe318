//! `--metrics ADDR:PORT`: Prometheus text served at `/metrics` while
//! tqfwd forwards on `net_null` (endless 64-byte frames). Two scrapes a
//! moment apart are parsed with a real parser (`prometheus-parse`); every
//! sample line must be parsed and typed, the counters must carry their
//! labels and grow, and the run must still end with its checks holding.
//! With `--latency` the histogram is there with its `le` bounds, its
//! buckets cumulative and its count growing; every hand-off queue has its occupancy gauges with either
//! backend, and a stalled worker's input queue shows full.
//! Runs last until SIGINT, so a slow machine cannot run out of run before
//! the checks. Usage: an address in use or unparsable is exit 2 naming
//! `--metrics`, before EAL starts.

use crate::common::*;
use prometheus_parse::{Scrape, Value};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Scrapes and parses; every sample line must become a typed sample (the
/// parser skips what it cannot read, so count the lines too).
fn scrape(addr: SocketAddr) -> Result<Scrape, String> {
    let (status, headers, body) = http_get(addr, "/metrics").map_err(|e| e.to_string())?;
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
    // The parser folds a histogram's `_bucket` lines into one sample.
    let parsed_lines: usize = scrape
        .samples
        .iter()
        .map(|s| match &s.value {
            Value::Histogram(b) => b.len(),
            _ => 1,
        })
        .sum();
    assert_eq!(
        parsed_lines, sample_lines,
        "every sample line parses\n{body}"
    );
    let histograms: Vec<&str> = scrape
        .samples
        .iter()
        .filter(|s| matches!(s.value, Value::Histogram(_)))
        .map(|s| s.metric.as_str())
        .collect();
    for s in &scrape.samples {
        // A histogram's `_sum` and `_count` have no TYPE line of their own.
        let family = ["_sum", "_count"]
            .iter()
            .find_map(|x| s.metric.strip_suffix(x))
            .filter(|base| histograms.contains(base));
        match family {
            Some(_) => assert!(matches!(s.value, Value::Untyped(_)), "{}", s.metric),
            None => assert!(
                matches!(
                    s.value,
                    Value::Counter(_) | Value::Gauge(_) | Value::Histogram(_)
                ),
                "{} has no TYPE line of its own: {:?}",
                s.metric,
                s.value
            ),
        }
        let family = family.unwrap_or(&s.metric);
        assert!(scrape.docs.contains_key(family), "{family} has no HELP");
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
        "tqfwd_port_link_up",
        &[("port", "0"), ("name", "net_null0")],
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
    let (mut p, addr) = spawn_live_metrics(&[
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
        // net_null's link is always up.
        for port in [("0", "net_null0"), ("1", "net_null1")] {
            assert_eq!(
                must(
                    s,
                    "tqfwd_port_link_up",
                    &[("port", port.0), ("name", port.1)]
                ),
                1.0,
                "port {} link gauge",
                port.0
            );
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
    let (status, _, body) = http_get(addr, "/nothing").unwrap();
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
        !second
            .samples
            .iter()
            .any(|x| x.metric.starts_with("tqfwd_latency")),
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

/// The `le` bounds of `tqfwd_latency_seconds`: 1-2-5 steps from 100 ns
/// to 100 ms, then `+Inf`.
const LATENCY_LE: [f64; 19] = [
    1e-7, 2e-7, 5e-7, 1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2,
    2e-2, 5e-2, 1e-1,
];

/// `tqfwd_latency_seconds` buckets as (le, cumulative count), checked:
/// the expected bounds in order, counts never decreasing, `+Inf` equal to
/// `_count`.
fn latency_buckets(s: &Scrape) -> Vec<(f64, f64)> {
    let h = s
        .samples
        .iter()
        .find(|x| x.metric == "tqfwd_latency_seconds")
        .unwrap_or_else(|| panic!("no tqfwd_latency_seconds histogram"));
    assert!(h.labels.is_empty(), "{:?}", h.labels);
    let Value::Histogram(b) = &h.value else {
        panic!("tqfwd_latency_seconds is not a histogram: {:?}", h.value)
    };
    let b: Vec<(f64, f64)> = b.iter().map(|c| (c.less_than, c.count)).collect();
    let les: Vec<f64> = b.iter().map(|c| c.0).collect();
    assert_eq!(les[..les.len() - 1], LATENCY_LE, "le bounds");
    assert_eq!(les.last(), Some(&f64::INFINITY));
    assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative: {b:?}");
    let count = must(s, "tqfwd_latency_seconds_count", &[]);
    assert_eq!(b.last().unwrap().1, count, "+Inf is _count");
    b
}

#[test]
fn latency_histogram_is_scraped_live() {
    let _g = serial();
    let (mut p, addr) = spawn_live_metrics(&["--latency"]);
    let count = |s: &Scrape| value(s, "tqfwd_latency_seconds_count", &[]).unwrap_or(0.0);
    let first = scrape_until(&mut p, addr, "latency samples", |s| count(s) > 0.0);
    let second = scrape_until(&mut p, addr, "more latency samples", |s| {
        count(s) > count(&first)
    });
    let (a, b) = (latency_buckets(&first), latency_buckets(&second));
    for (x, y) in a.iter().zip(&b) {
        assert!(x.1 <= y.1, "a bucket never shrinks: {a:?} then {b:?}");
    }
    for s in [&first, &second] {
        let (sum, n) = (
            must(s, "tqfwd_latency_seconds_sum", &[]),
            must(s, "tqfwd_latency_seconds_count", &[]),
        );
        // Seconds, not cycles: the mean is far below a second, and most
        // samples on net_null lie below 100 ms.
        assert!(sum > 0.0 && sum / n < 0.1, "sum {sum} count {n}");
        let below_100ms = latency_buckets(s)[LATENCY_LE.len() - 1].1;
        assert!(below_100ms >= n / 2.0, "{below_100ms} of {n} below 100 ms");
        assert!(
            !s.samples.iter().any(|x| x.labels.get("quantile").is_some()),
            "no quantile gauges beside the histogram"
        );
    }
    stop_live(&mut p);
}

/// RX lcore 0 → worker lcore 1 → TX lcore 0, `--on-full wait`, the worker
/// asleep for 3 s at its first packet: its input queue fills up (RX waits,
/// drops nothing), whichever the backend; afterwards every gauge stays
/// within its capacity. (tq's round trip has no worker→TX queue.)
#[test]
fn handoff_queue_occupancy_with_both_backends() {
    let _g = serial();
    for (backend, topology) in [("tq", "shared"), ("ring", "sharded")] {
        let (mut p, addr) = spawn_live_metrics(&[
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
        // tq: round trip (the default `--handoff`; RX and TX share lcore
        // 0), so the worker hands units back and has no queue to TX.
        let queues: &[(&str, &str, &str)] = if backend == "tq" {
            &[("rx_to_worker", "0", "1")]
        } else {
            &[("rx_to_worker", "0", "1"), ("worker_to_tx", "1", "0")]
        };
        let stalled = [("stage", "rx_to_worker"), ("from", "0"), ("to", "1")];
        let full = scrape_until(&mut p, addr, &format!("{backend}: a full queue"), |s| {
            value(s, "tqfwd_handoff_queue_packets", &stalled) == Some(1024.0)
        });
        assert_queues(&full, queues, 1024);
        let info = [("backend", backend), ("topology", topology)];
        must(&full, "tqfwd_info", &info);
        let moving = scrape_until(&mut p, addr, &format!("{backend}: traffic"), |s| {
            value(s, "tqfwd_tx_packets_total", &[]).unwrap_or(0.0) > 0.0
        });
        assert_queues(&moving, queues, 1024);
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
