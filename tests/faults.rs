//! Faults on software PMDs: mempool exhaustion (a pool far smaller than
//! the queues), with every frame accounted for and no stall afterwards.

use crate::common::*;
use tqfwd::testkit::{gen, pcap};

/// 600 mbufs behind 1024-packet queues and a slowed worker (128 RX
/// descriptors per port, so the pool covers them as tqfwd requires): the PMD runs
/// out of mbufs (`rx_nombuf`), tqfwd keeps forwarding as the pool refills,
/// and every frame of the file is either forwarded or counted by the PMD.
#[test]
fn mempool_exhaustion_counts_nombuf_and_recovers() {
    let _g = serial();
    let dir = scratch("nombuf");
    let frames = gen::udp_stream(64, 20_000, 64);
    let vdevs = one_way_pcap_ports(&dir, &frames);
    let run = run_2s_clean(
        &dir,
        &eal_args("0-1", &vdevs),
        &[
            "--mbufs",
            "600",
            "--rx-desc",
            "128",
            "--depth",
            "1024",
            "--worker-cycles",
            "3000",
            "--debug-stall-worker",
            "0:300",
            "--on-full",
            "wait",
        ],
    );
    let j = run.json();
    let p0 = &j["ports"][0];
    let nombuf = p0["hw_rx_nombuf"].as_u64().unwrap();
    let received = p0["hw_ipackets"].as_u64().unwrap();
    assert!(
        nombuf > 0,
        "a 600-mbuf pool must run dry\n{}",
        run.describe()
    );
    assert_eq!(
        received + nombuf,
        frames.len() as u64,
        "every frame received or counted as rx_nombuf"
    );
    assert_eq!(p0["rx_packets"].as_u64().unwrap(), received);
    // No stall: everything received after the pool ran dry got through.
    assert_eq!(
        j["tx_packets"].as_u64().unwrap(),
        j["rx_packets"].as_u64().unwrap()
    );
    let out = pcap::read_all(dir.join("out1.pcap")).unwrap();
    assert_eq!(out.len() as u64, received);
    let _ = std::fs::remove_dir_all(&dir);
}

/// stdout that fails (a closed pipe, as with `tqfwd … | head -1`, and
/// `/dev/full`): forwarding goes on, the stats lines stop with one warning,
/// the summary goes to stderr, the JSON is written and the exit code is 0.
#[test]
fn failing_stdout_keeps_the_run_and_its_summary() {
    use std::process::{Command, Stdio};
    let _g = serial();
    let dir = scratch("stdout");
    for target in ["closed pipe", "/dev/full"] {
        let json = dir.join("stats.json");
        let _ = std::fs::remove_file(&json);
        let mut cmd = Command::new(bin());
        cmd.args(eal_args(
            "0-1",
            &[
                "net_null0,size=64".to_string(),
                "net_null1,size=64".to_string(),
            ],
        ))
        .args([
            "--",
            "--duration",
            "1",
            "--stats-interval",
            "0.1",
            "--stats-json",
        ])
        .arg(&json)
        .stderr(Stdio::piped());
        if target == "/dev/full" {
            cmd.stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .expect("/dev/full"),
            );
        } else {
            cmd.stdout(Stdio::piped());
        }
        let mut child = cmd.spawn().expect("spawn tqfwd");
        // The reader goes away at once: every write to the pipe fails.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("tqfwd output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{target}: {:?}\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains("conservation rx = tx + drops") && stderr.contains("-> OK"),
            "{target}: no summary on stderr\n{stderr}"
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
                .expect("valid JSON");
        assert_eq!(j["conservation_ok"], true);
        assert_eq!(j["mbufs_in_use"], 0);
        assert!(
            j["tx_packets"].as_u64().unwrap() > 0,
            "{target}: nothing forwarded"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Port error counters (`ierrors`, `oerrors`) are in the summary and the
/// JSON with the PMD's values. Jumbo frames (5 mbufs each) behind a small
/// pool: net_pcap counts a frame whose first mbuf is missing as
/// `rx_nombuf` and one whose later segments find none as `ierrors` (rarely
/// hit: the pool usually runs dry at a frame's first mbuf), so every frame
/// of the file is received, `rx_nombuf` or `ierrors`. The worker stalls
/// for 300 ms at its first packet, so the hand-off queue (1024 packets,
/// 5 mbufs each) holds the pool's 600 mbufs whatever the timing.
#[test]
fn port_error_counters_in_summary_and_json() {
    let _g = serial();
    let dir = scratch("ierrors");
    // 9000-byte frames of a local experimental EtherType (0x88b5).
    let frames: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| {
            let mut f = vec![0u8; 9000];
            f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
            f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
            f[12..14].copy_from_slice(&[0x88, 0xb5]);
            f[14..18].copy_from_slice(&i.to_be_bytes());
            f
        })
        .collect();
    let vdevs = one_way_pcap_ports(&dir, &frames);
    let run = run_2s_clean(
        &dir,
        &eal_args("0-1", &vdevs),
        &[
            "--mbufs",
            "600",
            "--rx-desc",
            "128",
            "--tx-desc",
            "128",
            "--depth",
            "1024",
            "--worker-cycles",
            "3000",
            "--debug-stall-worker",
            "0:300",
            "--on-full",
            "wait",
        ],
    );
    let j = run.json();
    for (i, p) in j["ports"].as_array().unwrap().iter().enumerate() {
        for key in ["hw_ierrors", "hw_oerrors", "hw_imissed", "hw_rx_nombuf"] {
            assert!(
                p[key].is_u64(),
                "port {i}: {key} missing from the JSON\n{}",
                run.describe()
            );
        }
        let line = run
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("port {i} (")))
            .unwrap_or_else(|| panic!("no summary line for port {i}\n{}", run.describe()));
        for (key, word) in [("hw_ierrors", "ierrors"), ("hw_oerrors", "oerrors")] {
            let v = p[key].as_u64().unwrap();
            assert!(
                line.contains(&format!(" {word} {v}")),
                "port {i}: summary lacks `{word} {v}`: {line}"
            );
        }
    }
    let p0 = &j["ports"][0];
    let received = p0["hw_ipackets"].as_u64().unwrap();
    let nombuf = p0["hw_rx_nombuf"].as_u64().unwrap();
    let ierrors = p0["hw_ierrors"].as_u64().unwrap();
    assert!(
        nombuf + ierrors > 0,
        "jumbo frames behind a 600-mbuf pool must run it dry\n{}",
        run.describe()
    );
    assert_eq!(
        received + nombuf + ierrors,
        frames.len() as u64,
        "every frame received, rx_nombuf or ierrors\n{}",
        run.describe()
    );
    assert_eq!(p0["rx_packets"].as_u64().unwrap(), received);
    let _ = std::fs::remove_dir_all(&dir);
}
