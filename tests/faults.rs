//! Faults on software PMDs: mempool exhaustion (a pool far smaller than
//! the queues), with every frame accounted for and no stall afterwards.

mod common;

use common::*;
use std::time::Duration;
use tqfwd::{gen, pcap};

/// 600 mbufs behind 1024-packet queues and a slowed worker: the PMD runs
/// out of mbufs (`rx_nombuf`), tqfwd keeps forwarding as the pool refills,
/// and every frame of the file is either forwarded or counted by the PMD.
#[test]
fn mempool_exhaustion_counts_nombuf_and_recovers() {
    let _g = serial();
    let dir = scratch("nombuf");
    let frames = gen::udp_stream(64, 20_000, 64);
    let vdevs = one_way_pcap_ports(&dir, &frames);
    let run = run_tqfwd(
        &dir,
        &eal_args("0-1", &vdevs),
        &[
            "--mbufs",
            "600",
            "--depth",
            "1024",
            "--worker-cycles",
            "3000",
            "--on-full",
            "wait",
            "--duration",
            "2",
            "--stats-interval",
            "0",
        ],
        Duration::from_secs(60),
    );
    assert_clean_end(&run);
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
