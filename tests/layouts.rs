//! Layouts beyond two lcores, forwarding real packets: one RX lcore
//! scattering by flow to two workers that hand to a separate TX lcore;
//! RX lcores that are also the TX lcores, with two workers; two RX lcores,
//! three workers and a TX lcore (also with both RX lcores on one CPU, so
//! that one is preempted while it holds reservations in the shared
//! rings); a `--class` on a dedicated worker. EAL's `--lcores` maps the lcores onto
//! this machine's two CPUs (correct, not fast: lcores sharing a CPU look
//! stalled to each other for a scheduler slice, so `--on-full drop` runs
//! with a `--drop-after` longer than that). Each RX lcore reads its own
//! pcap on every port (one `rx_pcap` per RX queue), each TX lcore writes
//! its own (one `tx_pcap` per TX queue); every frame must come out once,
//! in per-flow order, MACs rewritten, with conservation and 0 mbufs in
//! use, and the summary must say which roles handed off in place.

use crate::common::*;
use crate::forward::{check_output, write_input, FRAMES_PER_FILE};
use std::time::Duration;
use tqfwd::testkit::pcap;

/// A role layout on `lcores` (an EAL `--lcores` map), and the roles each
/// lcore hands off in place (`lcores[].in_place`) with `--handoff
/// zero-copy` (the default round trip falls back to it here: the RX
/// lcores are not the TX lcores, or there are several workers).
struct Layout {
    lcores: &'static str,
    rx: &'static str,
    workers: &'static str,
    tx: &'static str,
    n_rx: usize,
    n_workers: usize,
    n_tx: usize,
    in_place: &'static [&'static [&'static str]],
}

/// 1 RX -> 2 workers -> 1 TX: RX scatters into the workers' slots; each
/// worker writes the one TX lcore's queue in place; TX sends from its
/// slots.
const SCATTER: Layout = Layout {
    lcores: "0@0,1@1,2@0,3@1",
    rx: "0",
    workers: "1-2",
    tx: "3",
    n_rx: 1,
    n_workers: 2,
    n_tx: 1,
    in_place: &[&["rx"], &["worker"], &["worker"], &["tx"]],
};

/// RX lcores 0-1 are the TX lcores, workers 2-3: RX scatters into the
/// workers' slots; with tq each worker hands every unit back to the RX
/// lcore that filled it, which transmits it (the round trip), else the
/// workers scatter into the two TX lcores' slots.
const RX_TX_TWO_WORKERS: Layout = Layout {
    lcores: "0@0,1@1,2@0,3@1",
    rx: "0-1",
    workers: "2-3",
    tx: "0-1",
    n_rx: 2,
    n_workers: 2,
    n_tx: 2,
    in_place: &[&["rx", "tx"], &["rx", "tx"], &["worker"], &["worker"]],
};

/// 2 RX -> 3 workers -> 1 TX.
const TWO_RX_THREE_WORKERS: Layout = Layout {
    lcores: "0@0,1@1,2@0,3@1,4@0,5@1",
    rx: "0-1",
    workers: "2-4",
    tx: "5",
    n_rx: 2,
    n_workers: 3,
    n_tx: 1,
    in_place: &[
        &["rx"],
        &["rx"],
        &["worker"],
        &["worker"],
        &["worker"],
        &["tx"],
    ],
};

/// As [`TWO_RX_THREE_WORKERS`], both RX lcores on CPU 0: each is
/// preempted in the middle of its scatters, holding runs of the workers'
/// queues (with the shared ring: HTS reservations the other RX lcore
/// would wait for).
const TWO_RX_ONE_CPU: Layout = Layout {
    lcores: "0@0,1@0,2@1,3@1,4@1,5@0",
    ..TWO_RX_THREE_WORKERS
};

/// 1 RX -> the default worker (lcore 1) and a class's dedicated worker
/// (lcore 2, which also polls the class's dedicated RX queues: none here,
/// no PMD of this machine takes a flow rule) -> 1 TX: RX classifies and
/// scatters into both.
const CLASS: Layout = Layout {
    lcores: "0@0,1@1,2@0,3@1",
    rx: "0",
    workers: "1",
    tx: "3",
    n_rx: 1,
    n_workers: 2,
    n_tx: 1,
    in_place: &[&["rx"], &["worker"], &["rx", "worker"], &["tx"]],
};

fn run_layout(layout: &Layout, backend: &str, topology: &str, extra: &[&str]) -> serde_json::Value {
    let _g = serial();
    let dir = scratch(&format!("layout-{backend}-{topology}-{}", layout.workers));
    let mut inputs: Vec<Vec<Vec<u8>>> = vec![Vec::new(), Vec::new()];
    let mut vdevs = Vec::new();
    for (port, frames) in inputs.iter_mut().enumerate() {
        let mut args = format!("net_pcap{port}");
        for q in 0..layout.n_rx {
            let path = dir.join(format!("in{port}_{q}.pcap"));
            frames.extend(write_input(&path, (port * 2 + q) * 1000, FRAMES_PER_FILE));
            args.push_str(&format!(",rx_pcap={}", path.display()));
        }
        for q in 0..layout.n_tx {
            let out = dir.join(format!("out{port}_{q}.pcap"));
            args.push_str(&format!(",tx_pcap={}", out.display()));
        }
        vdevs.push(args);
    }
    // Several lcores per CPU: `--lcores` instead of the harness's `-l`.
    let mut eal = eal_args("0", &vdevs);
    let l = eal.iter().position(|a| a == "-l").expect("-l");
    eal[l] = "--lcores".into();
    eal[l + 1] = layout.lcores.into();
    // `--depth` from `extra`, else 1024.
    let depth = extra
        .iter()
        .position(|a| *a == "--depth")
        .map_or("1024", |i| extra[i + 1]);
    let extra: Vec<&str> = match extra.iter().position(|a| *a == "--depth") {
        Some(i) => [&extra[..i], &extra[i + 2..]].concat(),
        None => extra.to_vec(),
    };
    let extra = &extra[..];
    let mut app = vec![
        "--backend",
        backend,
        "--topology",
        topology,
        "--rx-lcores",
        layout.rx,
        "--worker-lcores",
        layout.workers,
        "--tx-lcores",
        layout.tx,
        "--depth",
        depth,
        "--burst",
        "16",
        // Ends once the pcaps are drained; the duration is a backstop.
        "--debug-exit-when-idle",
        "300",
        "--duration",
        "30",
        "--stats-interval",
        "0",
    ];
    app.extend_from_slice(extra);
    if !extra.contains(&"--on-full") {
        app.extend_from_slice(&["--on-full", "wait"]);
    }
    let run = run_tqfwd(&dir, &eal, &app, Duration::from_secs(90));
    assert_clean_end(&run);
    let j = run.json().clone();
    let total = (2 * layout.n_rx * FRAMES_PER_FILE) as u64;
    assert_eq!(j["rx_packets"], total, "{}", run.describe());
    assert_eq!(j["tx_packets"], total, "{}", run.describe());
    let copy = extra.contains(&"copy");
    for (lcore, expect) in layout.in_place.iter().enumerate() {
        let got: Vec<&str> = j["lcores"][lcore]["in_place"]
            .as_array()
            .unwrap_or_else(|| panic!("lcore {lcore} in the JSON: {j}"))
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let expect: &[&str] = if copy { &[] } else { expect };
        assert_eq!(got, expect, "in-place roles of lcore {lcore}");
    }
    // Every worker took some flows; every packet went through one.
    let lcores = j["lcores"].as_array().unwrap();
    let worker_packets: Vec<u64> = lcores
        .iter()
        .map(|l| l["worker_packets"].as_u64().unwrap())
        .filter(|&n| n > 0)
        .collect();
    assert_eq!(worker_packets.len(), layout.n_workers, "{j}");
    assert_eq!(worker_packets.iter().sum::<u64>(), total);
    for (port, out_port) in [(0usize, 1u8), (1, 0)] {
        let mut out = Vec::new();
        for q in 0..layout.n_tx {
            let path = dir.join(format!("out{out_port}_{q}.pcap"));
            out.extend(pcap::read_all(path).expect("read output pcap"));
        }
        let mac = mac_bytes(j["ports"][out_port as usize]["mac"].as_str().unwrap());
        check_output(&out, &inputs[port], out_port, mac);
    }
    let _ = std::fs::remove_dir_all(&dir);
    j
}

#[test]
fn scatter_tq_sharded() {
    run_layout(&SCATTER, "tq", "sharded", &[]);
}

#[test]
fn scatter_tq_shared() {
    run_layout(&SCATTER, "tq", "shared", &[]);
}

#[test]
fn scatter_ring_sharded() {
    run_layout(&SCATTER, "ring", "sharded", &[]);
}

#[test]
fn scatter_ring_shared() {
    run_layout(&SCATTER, "ring", "shared", &[]);
}

#[test]
fn scatter_tq_drop_mode() {
    run_layout(
        &SCATTER,
        "tq",
        "sharded",
        &["--on-full", "drop", "--drop-after", "2000000"],
    );
}

/// A shallow queue (64 packets a producer, two units) is often full: the
/// scatter gives packets back to the RX lcore's bucket for that worker,
/// which hands them on before it scatters again (every frame once, in
/// per-flow order, with `--on-full wait`).
#[test]
fn scatter_tq_shallow_queue() {
    run_layout(&SCATTER, "tq", "sharded", &["--depth", "64"]);
}

#[test]
fn scatter_tq_copy() {
    run_layout(&SCATTER, "tq", "shared", &["--handoff", "copy"]);
}

#[test]
fn rx_tx_lcores_with_two_workers_round_trip() {
    let j = run_layout(&RX_TX_TWO_WORKERS, "tq", "sharded", &[]);
    assert_eq!(j["round_trip"], true);
}

#[test]
fn rx_tx_lcores_with_two_workers_round_trip_shared() {
    let j = run_layout(&RX_TX_TWO_WORKERS, "tq", "shared", &[]);
    assert_eq!(j["round_trip"], true);
}

#[test]
fn rx_tx_lcores_with_two_workers_zero_copy() {
    let j = run_layout(
        &RX_TX_TWO_WORKERS,
        "tq",
        "sharded",
        &["--handoff", "zero-copy"],
    );
    assert_eq!(j["round_trip"], false);
}

#[test]
fn rx_tx_lcores_with_two_workers_ring() {
    run_layout(&RX_TX_TWO_WORKERS, "ring", "shared", &[]);
}

#[test]
fn two_rx_three_workers() {
    run_layout(&TWO_RX_THREE_WORKERS, "ring", "shared", &[]);
}

#[test]
fn two_rx_on_one_cpu_shared_ring() {
    run_layout(&TWO_RX_ONE_CPU, "ring", "shared", &[]);
}

#[test]
fn two_rx_on_one_cpu_shared_tq_drop_mode() {
    run_layout(
        &TWO_RX_ONE_CPU,
        "tq",
        "shared",
        &["--on-full", "drop", "--drop-after", "2000000"],
    );
}

/// Port 0's flows (sources 10.0.0.0/22: flows 0-1023) belong to the
/// class; port 1's (flows from 2000) do not.
#[test]
fn class_on_a_dedicated_worker() {
    let j = run_layout(
        &CLASS,
        "tq",
        "sharded",
        &["--class", "c:udp,src=10.0.0.0/22:2"],
    );
    let worker_of = |l: u64| {
        j["lcores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["lcore"] == l)
            .unwrap()["worker_packets"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(worker_of(2), FRAMES_PER_FILE as u64, "{j}");
    assert_eq!(worker_of(1), FRAMES_PER_FILE as u64, "{j}");
}
