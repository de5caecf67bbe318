//! Frames longer than one mbuf: net_pcap reads them into chains of mbufs
//! (its jumbo path), and the pipeline must treat each chain as one frame:
//! classified as UDP (not malformed), hashed by 5-tuple so that a flow keeps
//! one worker and its order whatever the frame sizes, matched by `--class`,
//! MACs rewritten, every byte after them kept, every segment freed.

use crate::common::*;
use std::collections::HashMap;
use std::time::Duration;
use tqfwd::testkit::gen::{self, Flow};
use tqfwd::testkit::pcap;

/// Flows of the test traffic: even ones IPv4, odd ones IPv6; flow 3 goes
/// to UDP port 7777 (the `--class` one).
const FLOWS: usize = 8;
const CLASS_FLOW: usize = 3;
const CLASS_PORT: u16 = 7777;
const FRAMES: usize = 1200;

fn flow(i: usize) -> Flow {
    let mut f = Flow::nth(i);
    if i == CLASS_FLOW {
        f.dst_port = CLASS_PORT;
    }
    f
}

/// Mixed sizes, 64 to 9000 bytes (captured, no FCS): one-mbuf frames
/// (up to 2048 with the default pool), just over one mbuf, and up to five
/// segments, in a pseudo-random order per flow.
fn frames() -> Vec<Vec<u8>> {
    const SIZES: [usize; 12] = [
        64, 9000, 2048, 1514, 100, 2049, 4000, 8999, 3000, 128, 6144, 4097,
    ];
    let mut rng = XorShift::new(0x5e9_f1a3);
    let mut seq = [0u64; FLOWS];
    (0..FRAMES)
        .map(|_| {
            let f = rng.below(FLOWS);
            let ipv6 = f % 2 == 1;
            let len = SIZES[rng.below(SIZES.len())].max(if ipv6 { 78 } else { 64 });
            seq[f] += 1;
            gen::udp_frame_sized(
                &flow(f),
                f as u32,
                seq[f] - 1,
                len,
                ipv6,
                gen::DEFAULT_SRC_MAC,
                gen::DEFAULT_DST_MAC,
            )
        })
        .collect()
}

/// Runs the frames in on port 0 and checks port 1's output: per flow, the
/// input frames in input order, each with its MACs rewritten and every
/// other byte unchanged; all counted UDP, nothing dropped, conservation and
/// 0 mbufs in use.
fn run_and_check(name: &str, app: &[&str]) -> (serde_json::Value, String) {
    let _g = serial();
    let dir = scratch(name);
    let input = frames();
    assert!(input.iter().any(|f| f.len() > 2048 * 4), "5-segment frames");
    let vdevs = one_way_pcap_ports(&dir, &input);
    let mut args = vec![
        "--on-full",
        "wait",
        "--duration",
        "2",
        "--stats-interval",
        "0",
    ];
    args.extend_from_slice(app);
    let run = run_tqfwd(
        &dir,
        &eal_args("0-1", &vdevs),
        &args,
        Duration::from_secs(60),
    );
    assert_clean_end(&run);
    let j = run.json().clone();
    let n = input.len() as u64;
    assert_eq!(j["rx_packets"].as_u64().unwrap(), n, "{}", run.describe());
    assert_eq!(j["tx_packets"].as_u64().unwrap(), n, "{}", run.describe());
    assert_eq!(j["drops_total"].as_u64().unwrap(), 0, "{}", run.describe());
    assert_eq!(
        j["classes"]["udp"].as_u64().unwrap(),
        n,
        "every frame is UDP, whatever its segments: {}",
        j["classes"]
    );
    assert_eq!(j["classes"]["malformed"].as_u64().unwrap(), 0);

    let mac1 = mac_bytes(j["ports"][1]["mac"].as_str().unwrap());
    let mut expected: HashMap<u32, Vec<Vec<u8>>> = HashMap::new();
    for f in &input {
        let mut e = f.clone();
        e[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        e[6..12].copy_from_slice(&mac1);
        let id = gen::test_payload(f).expect("stamped input").flow_id;
        expected.entry(id).or_default().push(e);
    }
    let out = pcap::read_all(dir.join("out1.pcap")).unwrap();
    assert_eq!(out.len(), input.len(), "frames out of port 1");
    let mut got: HashMap<u32, Vec<Vec<u8>>> = HashMap::new();
    for p in out {
        let id = gen::test_payload(&p.data).expect("stamped output").flow_id;
        got.entry(id).or_default().push(p.data);
    }
    for (id, want) in &expected {
        let have = &got[id];
        let sizes = |v: &[Vec<u8>]| v.iter().map(|f| f.len()).collect::<Vec<_>>();
        assert_eq!(
            sizes(have),
            sizes(want),
            "flow {id}: frame sizes in output order vs input order"
        );
        for (k, (h, w)) in have.iter().zip(want).enumerate() {
            assert!(h == w, "flow {id} frame {k} ({} bytes) differs", w.len());
        }
    }
    assert!(pcap::read_all(dir.join("out0.pcap")).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
    (j, run.stderr)
}

/// Two workers (on the machine's two lcores, sharing them with RX and TX)
/// fed by software flow hashing (net_pcap gives no RSS hash); the port set
/// up for 9000-byte frames.
#[test]
fn jumbo_chains_two_workers_keep_flow_order() {
    let (j, stderr) = run_and_check(
        "multiseg-hash",
        &[
            "--rx-lcores",
            "0",
            "--worker-lcores",
            "0-1",
            "--tx-lcores",
            "1",
            "--max-frame",
            "9000",
        ],
    );
    // net_pcap (DPDK 22.11) chains jumbo frames without offering scatter.
    assert!(stderr.contains("max frame 9000 in mbuf chains"), "{stderr}");
    let lcores = j["lcores"].as_array().unwrap();
    for l in [0, 1] {
        let w = lcores.iter().find(|x| x["lcore"] == l).unwrap()["worker_packets"]
            .as_u64()
            .unwrap();
        assert!(w > 0, "worker lcore {l} got no packets: flows not spread");
    }
}

/// `--class` on UDP port 7777: that flow's frames, chained or not, all go
/// to the class's worker.
#[test]
fn class_matches_multi_segment_frames() {
    let class_frames = frames()
        .iter()
        .filter(|f| gen::test_payload(f).unwrap().flow_id == CLASS_FLOW as u32)
        .count() as u64;
    let class_arg = format!("big:udp,dst-port={CLASS_PORT}:1");
    // Default frame size: net_pcap still chains what does not fit.
    let (j, _) = run_and_check(
        "multiseg-class",
        &[
            "--rx-lcores",
            "0",
            "--worker-lcores",
            "0",
            "--tx-lcores",
            "1",
            "--class",
            &class_arg,
        ],
    );
    let classes = j["app_classes"].as_array().expect("app_classes");
    assert_eq!(classes[1]["name"], "big");
    assert_eq!(classes[1]["packets"].as_u64().unwrap(), class_frames);
    assert_eq!(
        classes[1]["worker_lcores"]["1"].as_u64().unwrap(),
        class_frames,
        "class handled by lcore 1 only"
    );
    assert_eq!(
        classes[0]["packets"].as_u64().unwrap(),
        FRAMES as u64 - class_frames
    );
}

/// A port that offers RX scatter (net_ring) gets it, and its MTU, when
/// `--max-frame` needs chains; and runs clean.
#[test]
fn scatter_turned_on_where_offered() {
    let _g = serial();
    let dir = scratch("multiseg-ring");
    let vdevs = vec!["net_ring0".to_string(), "net_ring1".to_string()];
    for (max_frame, want) in [
        (
            "9000",
            "max frame 9000 in mbuf chains (RX scatter on), TX MULTI_SEGS on",
        ),
        ("2044", "max frame 2044 in one mbuf"),
    ] {
        let run = run_tqfwd(
            &dir,
            &eal_args("0-1", &vdevs),
            &[
                "--max-frame",
                max_frame,
                "--duration",
                "0.5",
                "--stats-interval",
                "0",
            ],
            Duration::from_secs(60),
        );
        assert_clean_end(&run);
        for port in 0..2 {
            let line = run
                .stderr
                .lines()
                .find(|l| l.contains(&format!("port {port}: net_ring{port} ")))
                .unwrap_or_else(|| panic!("no port {port} line\n{}", run.describe()));
            assert!(line.contains(want), "{line}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
