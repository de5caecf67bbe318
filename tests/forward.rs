//! End-to-end forwarding through real packets: generated pcaps in through
//! `net_pcap`, the full pipeline, `net_pcap` out, then every frame checked.

use crate::common::*;
use std::collections::HashMap;
use std::time::Duration;
use tqfwd::testkit::gen::{self, Flow};
use tqfwd::testkit::pcap;

pub(crate) const FRAMES_PER_FILE: usize = 6000;
const FLOWS_PER_FILE: usize = 48;

/// Writes one input file: flows `first_flow..first_flow+FLOWS_PER_FILE`,
/// round-robin, sequence numbers per flow.
pub(crate) fn write_input(
    path: &std::path::Path,
    first_flow: usize,
    frames: usize,
) -> Vec<Vec<u8>> {
    let flows: Vec<Flow> = (first_flow..first_flow + FLOWS_PER_FILE)
        .map(Flow::nth)
        .collect();
    let v: Vec<Vec<u8>> = (0..frames)
        .map(|i| {
            let f = i % FLOWS_PER_FILE;
            gen::udp_frame(
                &flows[f],
                (first_flow + f) as u32,
                (i / FLOWS_PER_FILE) as u64,
                64,
                gen::DEFAULT_SRC_MAC,
                gen::DEFAULT_DST_MAC,
            )
        })
        .collect();
    pcap::write_all(path, &v).expect("write pcap");
    v
}

/// Checks that `out` holds exactly the frames of `inputs`: each once, per-flow
/// order kept, MACs rewritten to (dst 02:00:00:00:00:<port>, src port MAC),
/// everything after the MACs untouched.
pub(crate) fn check_output(
    out: &[pcap::PcapPacket],
    inputs: &[Vec<u8>],
    out_port: u8,
    out_mac: [u8; 6],
) {
    let mut expected: HashMap<(u32, u64), &Vec<u8>> = HashMap::new();
    for f in inputs {
        let s = gen::test_payload(f).expect("stamped input");
        assert!(expected.insert((s.flow_id, s.seq), f).is_none());
    }
    assert_eq!(out.len(), inputs.len(), "frame count on port {out_port}");
    let mut last_seq: HashMap<u32, u64> = HashMap::new();
    for p in out {
        let s = gen::test_payload(&p.data).expect("stamped output frame");
        let orig = expected
            .remove(&(s.flow_id, s.seq))
            .unwrap_or_else(|| panic!("unexpected or duplicate frame {s:?} on port {out_port}"));
        if let Some(prev) = last_seq.insert(s.flow_id, s.seq) {
            assert!(
                s.seq > prev,
                "flow {} reordered: {} after {}",
                s.flow_id,
                s.seq,
                prev
            );
        }
        assert_eq!(&p.data[0..6], &[2, 0, 0, 0, 0, out_port], "dst MAC");
        assert_eq!(&p.data[6..12], &out_mac, "src MAC");
        assert_eq!(&p.data[12..], &orig[12..], "payload changed");
    }
    assert!(
        expected.is_empty(),
        "{} frames missing on port {out_port}",
        expected.len()
    );
}

/// Two ports with two RX queues each (two rx_pcap files), two RX lcores and
/// `workers` (a corelist of lcores 0-1) on two EAL lcores, so hashing, both
/// topologies and several producers per consumer are exercised. With one
/// worker and `--handoff round-trip` (the default) or `zero-copy` every
/// stage hands off in place: RX into the worker's queue, the worker into
/// the TX queue, TX from its queue, or, where the TX lcores (`--tx-lcores`
/// in `extra`, else 0) are the RX lcores and the backend is tq, the worker
/// hands each unit back to its RX lcore, which transmits from it; with two
/// workers RX copies (it spreads flows) and the rest is in place;
/// `--handoff copy` in `extra` copies everywhere.
fn pcap_roundtrip(backend: &str, topology: &str, workers: &str, extra: &[&str]) {
    let _g = serial();
    let dir = scratch(&format!("{backend}-{topology}-w{workers}"));
    // One RX queue per port per RX lcore, each reading its own rx_pcap.
    let rx_lcores = match extra.iter().position(|a| *a == "--rx-lcores") {
        Some(i) => extra[i + 1],
        None => "0-1",
    };
    let n_rx: usize = if rx_lcores == "0-1" { 2 } else { 1 };
    let mut per_port_inputs: Vec<Vec<Vec<u8>>> = vec![Vec::new(), Vec::new()];
    let mut vdevs = Vec::new();
    for (port, inputs) in per_port_inputs.iter_mut().enumerate() {
        let mut args = format!("net_pcap{port}");
        for q in 0..n_rx {
            let path = dir.join(format!("in{port}_{q}.pcap"));
            let frames = write_input(&path, (port * 2 + q) * 1000, FRAMES_PER_FILE);
            inputs.extend(frames);
            args.push_str(&format!(",rx_pcap={}", path.display()));
        }
        args.push_str(&format!(
            ",tx_pcap={}",
            dir.join(format!("out{port}.pcap")).display()
        ));
        vdevs.push(args);
    }
    let eal = eal_args("0-1", &vdevs);
    let mut app = vec![
        "--backend",
        backend,
        "--topology",
        topology,
        "--worker-lcores",
        workers,
        "--on-full",
        "wait",
        "--depth",
        "256",
        // Ends once the pcaps are drained; the duration is a backstop.
        "--debug-exit-when-idle",
        "300",
        "--duration",
        "20",
        "--stats-interval",
        "0",
    ];
    if !extra.contains(&"--burst") {
        app.extend_from_slice(&["--burst", "16"]);
    }
    if !extra.contains(&"--rx-lcores") {
        app.extend_from_slice(&["--rx-lcores", "0-1"]);
    }
    let tx_lcores = match extra.iter().position(|a| *a == "--tx-lcores") {
        Some(i) => extra[i + 1],
        None => {
            app.extend_from_slice(&["--tx-lcores", "0"]);
            "0"
        }
    };
    app.extend_from_slice(extra);
    let run = run_tqfwd(&dir, &eal, &app, Duration::from_secs(60));
    assert_clean_end(&run);
    let j = run.json();
    let total = (2 * n_rx * FRAMES_PER_FILE) as u64;
    assert_eq!(j["rx_packets"], total, "{}", run.describe());
    assert_eq!(j["tx_packets"], total, "{}", run.describe());
    assert_eq!(j["backend"], backend);
    assert_eq!(j["topology"], topology);
    // The batch: what the test asks for, or twice the burst in place and
    // the burst with copy.
    let value = |name: &str| {
        let i = app.iter().rposition(|&a| a == name)?;
        app[i + 1].parse::<u64>().ok()
    };
    let burst = value("--burst").unwrap();
    let batch = value("--handoff-batch").unwrap_or(if extra.contains(&"copy") {
        burst
    } else {
        2 * burst
    });
    assert_eq!(j["handoff_batch"], batch, "{}", run.describe());
    assert_eq!(j["classes"]["udp"], total);
    for port in 0..2usize {
        let p = &j["ports"][port];
        let q = p["rx_queues"].as_array().unwrap();
        assert_eq!(q.len(), n_rx, "an RX queue per RX lcore on port {port}");
        for (i, c) in q.iter().enumerate() {
            assert_eq!(
                c.as_u64().unwrap(),
                FRAMES_PER_FILE as u64,
                "port {port} queue {i}"
            );
        }
    }
    // Every worker did work (flows were spread); every packet went
    // through exactly one.
    let lcores = j["lcores"].as_array().unwrap();
    assert_eq!(lcores.len(), 2);
    let mut through_workers = 0;
    for l in lcores {
        let n = l["worker_packets"].as_u64().unwrap();
        let lcore = l["lcore"].as_u64().unwrap();
        let is_worker = workers == "0-1" || workers == lcore.to_string();
        assert_eq!(n > 0, is_worker, "worker packets on lcore {lcore}: {n}");
        through_workers += n;
    }
    assert_eq!(through_workers, total);
    // The cache-line trip between the two lcores, measured on them as
    // forwarding started and after it stopped (a median of batches, so a
    // host stall of a few ms does not set it).
    let trip = &j["lcore_trip_ns"];
    assert_eq!(
        trip["between"],
        serde_json::json!([0, 1]),
        "{}",
        run.describe()
    );
    for when in ["start", "end"] {
        let ns = trip[when].as_f64().unwrap_or(-1.0);
        assert!(
            ns > 0.0 && ns < 100_000.0,
            "lcore_trip_ns.{when}: {trip}\n{}",
            run.describe()
        );
    }
    assert!(
        run.stdout
            .contains("cache line lcore 0 <-> lcore 1, one way: "),
        "{}",
        run.describe()
    );
    // Which stages handed off in place: RX only into one worker's queue;
    // the worker into the one TX lcore's queue; TX always.
    let handoff = match extra.iter().position(|a| *a == "--handoff") {
        Some(i) => extra[i + 1],
        None => "round-trip",
    };
    assert_eq!(j["handoff"], handoff);
    // Round trip where the layout allows it: tq, the RX lcores are the
    // TX lcores (any workers).
    let round_trip = handoff == "round-trip" && backend == "tq" && tx_lcores == rx_lcores;
    assert_eq!(j["round_trip"], round_trip, "{}", run.describe());
    let in_place = |lcore: usize| -> Vec<String> {
        j["lcores"][lcore]["in_place"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect()
    };
    let expect = |lcore: usize| -> Vec<&str> {
        if handoff == "copy" {
            return vec![];
        }
        let worker = workers == "0-1" || workers == lcore.to_string();
        [
            // RX in place whatever the workers: into one, or scattered.
            ("rx", lcore == 0 || rx_lcores == "0-1"),
            ("worker", worker),
            ("tx", lcore == 0 || tx_lcores == "0-1"),
        ]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(r, _)| *r)
        .collect()
    };
    for lcore in 0..2 {
        assert_eq!(
            in_place(lcore),
            expect(lcore),
            "in-place stages of lcore {lcore}"
        );
    }
    // --latency: every stamped packet measured once at TX.
    if let Some(i) = extra.iter().position(|a| *a == "--latency") {
        let sample: u64 = if extra.get(i + 1) == Some(&"--latency-sample") {
            extra[i + 2].parse().unwrap()
        } else {
            1
        };
        let l = &j["latency_ns"];
        // Each RX lcore stamps 1 in `sample` of the packets it receives.
        let per_lcore = 2 * FRAMES_PER_FILE as u64;
        let n_rx = n_rx as u64;
        assert_eq!(
            l["samples"].as_u64().unwrap(),
            n_rx * (per_lcore / sample),
            "{}",
            run.describe()
        );
        let (p50, p99, max) = (
            l["p50"].as_f64().unwrap(),
            l["p99"].as_f64().unwrap(),
            l["max"].as_f64().unwrap(),
        );
        assert!(
            p50 > 0.0 && p50 <= p99 && p99 <= max,
            "percentiles out of order: {l}"
        );
        // No sample outlasts the run: a stamp read on a core whose TSC is
        // ahead of TX's counts as 0, never as a wrapped 2^64 - d cycles.
        assert!(max < 60e9, "latency max above a minute: {l}");
    } else {
        assert!(j.get("latency_ns").is_none());
    }
    for (port, out_port) in [(0usize, 1u8), (1, 0)] {
        let out =
            pcap::read_all(dir.join(format!("out{out_port}.pcap"))).expect("read output pcap");
        let mac = mac_bytes(j["ports"][out_port as usize]["mac"].as_str().unwrap());
        check_output(&out, &per_port_inputs[port], out_port, mac);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pcap_tq_sharded() {
    pcap_roundtrip("tq", "sharded", "0-1", &[]);
}

#[test]
fn pcap_tq_shared() {
    pcap_roundtrip("tq", "shared", "0-1", &["--latency"]);
}

#[test]
fn pcap_ring_sharded() {
    pcap_roundtrip(
        "ring",
        "sharded",
        "0-1",
        &["--latency", "--latency-sample", "3"],
    );
}

#[test]
fn pcap_ring_shared() {
    pcap_roundtrip("ring", "shared", "0-1", &[]);
}

// Every stage in place: one worker, so each RX lcore hands all it receives
// to one queue (two producers into it when shared: a TransferQueue's
// several-producer path, an HTS ring).

#[test]
fn pcap_zero_copy_tq_sharded() {
    pcap_roundtrip("tq", "sharded", "1", &["--latency"]);
}

#[test]
fn pcap_zero_copy_tq_shared() {
    pcap_roundtrip("tq", "shared", "1", &[]);
}

#[test]
fn pcap_zero_copy_ring_sharded() {
    pcap_roundtrip("ring", "sharded", "1", &[]);
}

#[test]
fn pcap_zero_copy_ring_shared() {
    pcap_roundtrip(
        "ring",
        "shared",
        "1",
        &["--latency", "--latency-sample", "3"],
    );
}

// A batch of many PMD bursts: RX fills a unit with 16 bursts of 4 while
// they come back full, TX sends the unit's runs 4 at a time (latency
// samples on every packet, each measured once).

#[test]
fn pcap_zero_copy_batch_of_many_bursts() {
    pcap_roundtrip(
        "tq",
        "sharded",
        "1",
        &[
            "--burst",
            "4",
            "--handoff-batch",
            "64",
            "--latency",
            "--latency-sample",
            "1",
        ],
    );
}

#[test]
fn pcap_zero_copy_ring_batch_of_many_bursts() {
    pcap_roundtrip(
        "ring",
        "sharded",
        "1",
        &["--burst", "4", "--handoff-batch", "64"],
    );
}

// Round trip: RX lcore 0 also transmits (net_pcap has one TX queue, so
// one RX+TX lcore), polling both RX queues of each port, and the one
// worker hands each unit back to it. Runts the worker frees leave empty
// slots that TX passes over (`odd_frames_forwarded_and_counted`); several
// RX+TX lcores into one queue: `round_trip_several_rx_tx_lcores`.

const RT: [&str; 4] = ["--rx-lcores", "0", "--tx-lcores", "0"];

#[test]
fn pcap_round_trip_tq_sharded() {
    pcap_roundtrip("tq", "sharded", "1", &[&RT[..], &["--latency"]].concat());
}

#[test]
fn pcap_round_trip_tq_shared() {
    pcap_roundtrip("tq", "shared", "1", &RT);
}

#[test]
fn pcap_round_trip_batch_of_many_bursts() {
    pcap_roundtrip(
        "tq",
        "sharded",
        "1",
        &[
            "--rx-lcores",
            "0",
            "--tx-lcores",
            "0",
            "--burst",
            "4",
            "--handoff-batch",
            "64",
            "--latency",
            "--latency-sample",
            "1",
        ],
    );
}

// The ring has no round trip: it works as zero-copy.

#[test]
fn pcap_round_trip_ring_works_as_zero_copy() {
    pcap_roundtrip("ring", "sharded", "1", &RT);
}

// Every stage through bursts.

#[test]
fn pcap_copy_tq_sharded() {
    pcap_roundtrip("tq", "sharded", "1", &["--handoff", "copy"]);
}

#[test]
fn pcap_copy_ring_shared() {
    pcap_roundtrip("ring", "shared", "0-1", &["--handoff", "copy", "--latency"]);
}

/// Odd frames (runts, VLAN, QinQ, ARP, IPv6, truncated headers, 1518-byte)
/// through the default layout: no panic, runts dropped and counted, the rest
/// forwarded and counted by class.
#[test]
fn odd_frames_forwarded_and_counted() {
    let _g = serial();
    let dir = scratch("odd");
    let odd = gen::odd_frames();
    // Odd frames interleaved with normal ones, three rounds.
    let mut input: Vec<Vec<u8>> = Vec::new();
    for round in 0..3u64 {
        for (i, (_, f, _)) in odd.iter().enumerate() {
            input.push(f.clone());
            input.push(gen::udp_frame(
                &Flow::nth(i),
                i as u32,
                round,
                64,
                gen::DEFAULT_SRC_MAC,
                gen::DEFAULT_DST_MAC,
            ));
        }
    }
    let vdevs = one_way_pcap_ports(&dir, &input);
    let run = run_tqfwd(
        &dir,
        &eal_args("0-1", &vdevs),
        &[
            "--on-full",
            "wait",
            "--duration",
            "1.5",
            "--stats-interval",
            "0",
        ],
        Duration::from_secs(60),
    );
    assert_clean_end(&run);
    let j = run.json();
    let mut expect: HashMap<&str, u64> = HashMap::new();
    for (_, _, class) in &odd {
        *expect.entry(class.name()).or_default() += 3;
    }
    *expect.entry("udp").or_default() += 3 * odd.len() as u64;
    for (class, n) in &expect {
        assert_eq!(
            j["classes"][class].as_u64().unwrap(),
            *n,
            "class {class}\n{}",
            run.describe()
        );
    }
    let runts = expect.get("runt").copied().unwrap_or(0);
    assert!(runts >= 3, "the odd set has runts");
    assert_eq!(j["drops"]["runt"].as_u64().unwrap(), runts);
    assert_eq!(j["rx_packets"].as_u64().unwrap(), input.len() as u64);
    assert_eq!(
        j["tx_packets"].as_u64().unwrap(),
        input.len() as u64 - runts
    );
    // Every non-runt frame leaves port 1 once, in order, bytes after the MACs intact.
    let out = pcap::read_all(dir.join("out1.pcap")).unwrap();
    let forwarded: Vec<&Vec<u8>> = input.iter().filter(|f| f.len() >= 14).collect();
    assert_eq!(out.len(), forwarded.len());
    for (o, i) in out.iter().zip(forwarded) {
        assert_eq!(&o.data[12..], &i[12..]);
        assert_eq!(&o.data[0..6], &[2, 0, 0, 0, 0, 1]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tiny queue and a slowed worker with `--on-full drop --drop-after 0`
/// (drop at once instead of holding): drops are
/// counted under rx_handoff_full and conservation stays exact; what was
/// transmitted is exactly what the JSON says.
fn drops_counted(backend: &str) {
    let _g = serial();
    let dir = scratch(&format!("drop-{backend}"));
    let input = write_input(&dir.join("flows.pcap"), 0, 20_000);
    let vdevs = one_way_pcap_ports(&dir, &input);
    let run = run_2s_clean(
        &dir,
        &eal_args("0-1", &vdevs),
        &[
            "--backend",
            backend,
            "--on-full",
            "drop",
            "--drop-after",
            "0",
            "--depth",
            "8",
            "--burst",
            "8",
            "--worker-cycles",
            "20000",
        ],
    );
    let j = run.json();
    assert_eq!(j["rx_packets"].as_u64().unwrap(), input.len() as u64);
    let dropped = j["drops"]["rx_handoff_full"].as_u64().unwrap();
    assert!(
        dropped > 0,
        "a slowed worker behind an 8-packet queue must overflow\n{}",
        run.describe()
    );
    let out = pcap::read_all(dir.join("out1.pcap")).unwrap();
    assert_eq!(out.len() as u64, j["tx_packets"].as_u64().unwrap());
    // What did get through kept per-flow order.
    let mut last: HashMap<u32, u64> = HashMap::new();
    for p in &out {
        let s = gen::test_payload(&p.data).unwrap();
        if let Some(prev) = last.insert(s.flow_id, s.seq) {
            assert!(s.seq > prev);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn drops_counted_tq() {
    drops_counted("tq");
}

#[test]
fn drops_counted_ring() {
    drops_counted("ring");
}

/// `--class`: UDP to port 8080 is handled only by the class's worker
/// (lcore 1), everything else by the default worker (lcore 0); the software
/// path (net_pcap has no rte_flow) with per-class counters in the JSON.
#[test]
fn class_steers_to_dedicated_worker() {
    let _g = serial();
    let dir = scratch("class");
    let mut frames = Vec::new();
    let mut n_kv = 0u64;
    for i in 0..8000usize {
        let f = i % 40;
        let mut flow = Flow::nth(f);
        if f % 4 == 0 {
            flow.dst_port = 8080;
            n_kv += 1;
        }
        frames.push(gen::udp_frame(
            &flow,
            f as u32,
            (i / 40) as u64,
            64,
            gen::DEFAULT_SRC_MAC,
            gen::DEFAULT_DST_MAC,
        ));
    }
    let vdevs = one_way_pcap_ports(&dir, &frames);
    let run = run_tqfwd(
        &dir,
        &eal_args("0-1", &vdevs),
        &[
            "--worker-lcores",
            "0",
            "--class",
            "kv:udp,dst-port=8080:1",
            "--on-full",
            "wait",
            "--duration",
            "1.5",
            "--stats-interval",
            "0",
        ],
        Duration::from_secs(60),
    );
    assert_clean_end(&run);
    let j = run.json();
    assert_eq!(
        j["tx_packets"].as_u64().unwrap(),
        frames.len() as u64,
        "{}",
        run.describe()
    );
    let classes = j["app_classes"].as_array().expect("app_classes");
    assert_eq!(classes.len(), 2);
    assert_eq!(classes[0]["name"], "default");
    assert_eq!(classes[1]["name"], "kv");
    assert_eq!(classes[1]["packets"].as_u64().unwrap(), n_kv);
    assert_eq!(
        classes[0]["packets"].as_u64().unwrap(),
        frames.len() as u64 - n_kv
    );
    assert_eq!(
        classes[1]["worker_lcores"]["1"].as_u64().unwrap(),
        n_kv,
        "kv handled only by lcore 1"
    );
    assert_eq!(
        classes[0]["worker_lcores"]["0"].as_u64().unwrap(),
        frames.len() as u64 - n_kv
    );
    assert!(
        classes[1]["steering"][0]
            .as_str()
            .unwrap()
            .contains("software"),
        "net_pcap has no rte_flow"
    );
    let lcores = j["lcores"].as_array().unwrap();
    let worker_of = |l: u64| {
        lcores.iter().find(|x| x["lcore"] == l).unwrap()["worker_packets"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(worker_of(1), n_kv);
    assert_eq!(worker_of(0), frames.len() as u64 - n_kv);
    let out = pcap::read_all(dir.join("out1.pcap")).unwrap();
    let mac = mac_bytes(j["ports"][1]["mac"].as_str().unwrap());
    check_output(&out, &frames, 1, mac);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One lcore holding every role: no other lcore to measure a cache-line
/// trip to, so the report has none (and the end checks hold).
#[test]
fn one_lcore_reports_no_trip() {
    let _g = serial();
    let dir = scratch("onelcore");
    let run = run_tqfwd(
        &dir,
        &eal_args(
            "0",
            &[
                "net_null0,size=64".to_string(),
                "net_null1,size=64".to_string(),
            ],
        ),
        &["--duration", "1", "--stats-interval", "0"],
        Duration::from_secs(60),
    );
    assert_clean_end(&run);
    let j = run.json();
    assert_eq!(j["lcores"].as_array().unwrap().len(), 1);
    assert!(j["tx_packets"].as_u64().unwrap() > 0, "{}", run.describe());
    assert!(j.get("lcore_trip_ns").is_none(), "{}", run.describe());
    // RX, worker and TX on one lcore: the round trip applies.
    assert_eq!(j["round_trip"], true, "{}", run.describe());
    assert!(
        !run.stdout.contains("cache line lcore"),
        "{}",
        run.describe()
    );
}

/// Round trip with two RX+TX lcores and one worker (on lcore 1), both
/// topologies: each RX lcore takes back and transmits its own packets
/// (sharded: a queue each; shared: one queue both feed, the
/// several-producer return). Nothing dropped with `--on-full wait`, every
/// packet accounted for, 0 mbufs in use.
#[test]
fn round_trip_several_rx_tx_lcores() {
    let _g = serial();
    for topology in ["sharded", "shared"] {
        let dir = scratch(&format!("rt-{topology}"));
        let run = run_tqfwd(
            &dir,
            &eal_args(
                "0-1",
                &[
                    "net_null0,size=64".to_string(),
                    "net_null1,size=64".to_string(),
                ],
            ),
            &[
                "--topology",
                topology,
                "--rx-lcores",
                "0-1",
                "--worker-lcores",
                "1",
                "--tx-lcores",
                "0-1",
                "--on-full",
                "wait",
                "--latency",
                "--duration",
                "1",
                "--stats-interval",
                "0",
            ],
            Duration::from_secs(60),
        );
        assert_clean_end(&run);
        let j = run.json();
        assert_eq!(j["round_trip"], true, "{}", run.describe());
        assert_eq!(j["drops_total"], 0, "{}", run.describe());
        for l in 0..2 {
            let tx = j["lcores"][l]["tx_packets"].as_u64().unwrap();
            assert!(tx > 0, "lcore {l} transmitted: {}", run.describe());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Two RX lcores on net_null ports (which offer RSS configuration): RSS is
/// enabled through the ethdev API, both queues of each port receive, and the
/// end checks hold.
#[test]
fn multi_queue_rx_with_rss_on_net_null() {
    let _g = serial();
    let dir = scratch("rss");
    let run = run_tqfwd(
        &dir,
        &eal_args(
            "0-1",
            &[
                "net_null0,size=64".to_string(),
                "net_null1,size=64".to_string(),
            ],
        ),
        &[
            "--rx-lcores",
            "0-1",
            "--worker-lcores",
            "0-1",
            "--on-full",
            "wait",
            "--duration",
            "1",
            "--stats-interval",
            "0",
        ],
        Duration::from_secs(60),
    );
    assert_clean_end(&run);
    assert!(
        run.stderr.contains("2 RX x") && run.stderr.contains("RSS on"),
        "{}",
        run.describe()
    );
    let j = run.json();
    for p in 0..2 {
        let q = j["ports"][p]["rx_queues"].as_array().unwrap();
        assert_eq!(q.len(), 2);
        assert!(
            q.iter().all(|c| c.as_u64().unwrap() > 0),
            "both queues of port {p} received: {q:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
