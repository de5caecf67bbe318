//! tqfwd between real peers, set up and torn down by each test:
//!
//! - **DPDK peers over `net_memif`:** `dpdk-testpmd` txonly (memif client)
//!   → tqfwd port 0 (memif server) … tqfwd port 1 (memif server) →
//!   `dpdk-testpmd` rxonly (memif client): three DPDK primaries, each with
//!   its own `--file-prefix` and memory. What the sink counted must equal
//!   what tqfwd says it transmitted on port 1, for both backends.
//! - **The Linux kernel over `net_af_packet`:** a UDP sender in namespace A
//!   → veth → tqfwd (two af_packet ports, two queue pairs each, two RX
//!   lcores) → veth → a UDP receiver in namespace B. Every datagram arrives
//!   exactly once, in order per flow, and kernel fanout spread the flows
//!   over both RX queues of the receiving port.
//!
//! The tests hold `serial()` (busy-polling processes on a 2-core machine).
//! When the machine refuses what a test needs (`ip netns`, a missing
//! `dpdk-testpmd` or `ethtool`), the test says so on stderr with
//! `*** SKIPPED … ***` (or fails with `TQFWD_REQUIRE_PEERS=1`).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Numbers following `key` in testpmd output (`RX-packets: 123`), in order.
fn counter_values(text: &str, key: &str, line_must_contain: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.contains(line_must_contain))
        .filter_map(|l| l.split(key).nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// The cumulative RX count testpmd printed in its periodic NIC statistics
/// (`RX-packets: N  RX-missed: M  RX-bytes: B`).
fn nic_rx(text: &str) -> Vec<u64> {
    counter_values(text, "RX-packets:", "RX-missed:")
}

fn nic_tx(text: &str) -> Vec<u64> {
    counter_values(text, "TX-packets:", "TX-errors:")
}

/// `dpdk-testpmd` as a memif client on `socket`, interactive (commands on
/// stdin, `stdbuf` so its answers arrive line by line), forwarding from the
/// start. `main_lcore` picks which of the two CPUs its busy forwarding
/// lcore gets: the other one.
fn testpmd(prefix: &str, main_lcore: u32, socket: &Path, mode: &[&str]) -> Command {
    testpmd_role(prefix, main_lcore, socket, "client", mode)
}

/// [`testpmd`] with its memif port in `role` (client or server).
fn testpmd_role(
    prefix: &str,
    main_lcore: u32,
    socket: &Path,
    role: &str,
    mode: &[&str],
) -> Command {
    let mut c = Command::new("stdbuf");
    c.args(["-oL", "-eL", "dpdk-testpmd"]);
    c.args([
        "-l",
        "0-1",
        "--main-lcore",
        &main_lcore.to_string(),
        "--no-pci",
        "--file-prefix",
        prefix,
    ]);
    // testpmd's default pool is sized for many ports; 8192 mbufs fit 128 MB.
    c.args(mem_args_mb(128));
    c.arg(format!(
        "--vdev=net_memif0,role={role},socket={},socket-abstract=no,id=0",
        socket.display()
    ));
    c.arg("--");
    c.args(mode);
    c.args([
        "-i",
        "--auto-start",
        "--total-num-mbufs=8192",
        "--nb-cores=1",
        "--rxq=1",
        "--txq=1",
        "--no-mlockall",
    ]);
    c
}

/// Asks an interactive testpmd for its port 0 counters and returns the
/// cumulative RX and TX it printed.
fn port_stats(p: &mut Proc) -> (u64, u64) {
    let before = nic_rx(&p.text()).len();
    p.send_line("show port stats 0");
    p.wait_until("port stats", Duration::from_secs(10), |t| {
        nic_rx(t).len() > before && nic_tx(t).len() > before
    })
    .unwrap();
    let t = p.text();
    (*nic_rx(&t).last().unwrap(), *nic_tx(&t).last().unwrap())
}

/// Stops an interactive testpmd's forwarding (ports stay up and connected)
/// and returns the RX and TX of its "Forward statistics for port 0".
fn stop_forwarding(p: &mut Proc) -> (u64, u64) {
    let key = "Forward statistics for port 0";
    let before = p.text().matches(key).count();
    p.send_line("stop");
    p.wait_until("forward statistics", Duration::from_secs(10), |t| {
        t.matches(key).count() > before
            && t.rsplit(key)
                .next()
                .map(|tail| tail.contains("TX-packets:"))
                .unwrap_or(false)
    })
    .unwrap();
    let t = p.text();
    let tail = t.rsplit(key).next().unwrap();
    let rx = counter_values(tail, "RX-packets:", "RX-dropped:")
        .first()
        .copied()
        .unwrap();
    let tx = counter_values(tail, "TX-packets:", "TX-dropped:")
        .first()
        .copied()
        .unwrap();
    (rx, tx)
}

/// tqfwd on both CPUs (lcores 0-1) for these tests: [`peer_tqfwd_cmd`].
fn tqfwd_cmd(prefix: &str, vdevs: &[String], app: &[&str], json: &Path) -> Command {
    peer_tqfwd_cmd("0-1", prefix, vdevs, app, json)
}

/// testpmd generator → memif → tqfwd → memif → testpmd sink, started and
/// forwarding (see `memif_chain` for the shutdown order these tests keep).
struct MemifChain {
    dir: PathBuf,
    json_path: PathBuf,
    tq: Proc,
    sink: Proc,
    gen: Proc,
}

impl MemifChain {
    /// None (after printing why) when testpmd is not installed.
    fn start(test: &str, app: &[&str]) -> Option<MemifChain> {
        for tool in ["dpdk-testpmd", "stdbuf"] {
            if !have_command(tool) {
                skip_test(
                    test,
                    &format!(
                        "`{tool}` not found (scripts/install-deps.sh installs the `dpdk` package)"
                    ),
                );
                return None;
            }
        }
        let dir = scratch(test);
        let gen_sock = dir.join("gen.sock");
        let sink_sock = dir.join("sink.sock");
        let json_path = dir.join("stats.json");
        let vdevs = vec![
            format!(
                "net_memif0,role=server,socket={},socket-abstract=no,id=0",
                gen_sock.display()
            ),
            format!(
                "net_memif1,role=server,socket={},socket-abstract=no,id=0",
                sink_sock.display()
            ),
        ];
        let mut tq = Proc::spawn(
            "tqfwd",
            &mut tqfwd_cmd(&unique_name("tqfwdpeer"), &vdevs, app, &json_path),
        );
        // memif servers create their listening sockets when the ports probe.
        tq.wait_until("memif sockets", Duration::from_secs(20), |_| {
            gen_sock.exists() && sink_sock.exists()
        })
        .unwrap();
        let mut sink = Proc::spawn_interactive(
            "sink testpmd",
            &mut testpmd(
                &unique_name("tqsink"),
                1,
                &sink_sock,
                &["--forward-mode=rxonly"],
            ),
        );
        sink.wait_until("forwarding start", Duration::from_secs(30), |t| {
            t.contains("packet forwarding - ports=")
        })
        .unwrap();
        let mut gen = Proc::spawn_interactive(
            "generator testpmd",
            &mut testpmd(
                &unique_name("tqgen"),
                0,
                &gen_sock,
                &["--forward-mode=txonly", "--txpkts=64"],
            ),
        );
        gen.wait_until("forwarding start", Duration::from_secs(30), |t| {
            t.contains("packet forwarding - ports=")
        })
        .unwrap();
        Some(MemifChain {
            dir,
            json_path,
            tq,
            sink,
            gen,
        })
    }

    /// [`start`](Self::start) with `app` and the options every chain test
    /// adds (`--link-timeout 10`, every packet a latency sample), then
    /// waits at least `warm` and until the sink has seen packets (at most
    /// 30 s).
    fn start_forwarding(test: &str, app: &[&str], warm: Duration) -> Option<MemifChain> {
        let mut args = app.to_vec();
        args.extend(["--link-timeout", "10", "--latency", "--latency-sample", "1"]);
        let mut c = MemifChain::start(test, &args)?;
        let t = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            if port_stats(&mut c.sink).0 > 0 && t.elapsed() > warm {
                return Some(c);
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "no packets at the sink after 30 s\n--- tqfwd ---\n{}\n--- generator ---\n{}\n--- sink ---\n{}",
                c.tq.text(),
                c.gen.text(),
                c.sink.text()
            );
        }
    }
}

/// The count of testpmd `p`'s port 0 once nothing is in flight: the same
/// twice, 500 ms apart (at most 20 s).
fn settled_count(p: &mut Proc) -> u64 {
    let mut last = port_stats(p).0;
    let settle = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let rx = port_stats(p).0;
        if rx == last {
            return rx;
        }
        last = rx;
        assert!(
            settle.elapsed() < Duration::from_secs(20),
            "the count never settled\n{}",
            p.text()
        );
    }
}

/// testpmd txonly → memif → tqfwd → memif → testpmd rxonly.
///
/// Shutdown: the generator stops sending first; once the sink's count has
/// stopped moving (nothing left in flight), the sink's count is read, tqfwd
/// gets SIGINT (drains, checks, writes its JSON), then both testpmds quit.
///
/// Two facts about `net_memif` in DPDK 22.11 shape this order:
/// - its counters belong to the *current* connection: once tqfwd (the memif
///   server) has gone, the sink's port statistics read 0 again, so the
///   sink is read while still connected;
/// - a process polling a memif queue can crash (SIGSEGV in `eth_memif_rx`)
///   when its peer disconnects at that moment: the interrupt thread unmaps
///   the shared regions under the polling lcore. So no peer is killed while
///   the other side polls: testpmd's forwarding is *stopped* (interactive
///   `stop`, ports stay connected) before tqfwd leaves, and tqfwd leaves
///   before the testpmds disconnect.
fn memif_chain(backend: &str) {
    let _g = serial();
    let test = format!("memif_testpmd_chain_{backend}");
    let t0 = Instant::now();
    // Traffic for at least 2 s and until the sink has seen some of it.
    let app = ["--backend", backend, "--stats-interval", "1"];
    let Some(MemifChain {
        dir,
        json_path,
        mut tq,
        mut sink,
        mut gen,
    }) = MemifChain::start_forwarding(&test, &app, Duration::from_secs(2))
    else {
        return;
    };

    // 1. The generator stops sending (its port stays connected).
    let (_, gen_tx) = stop_forwarding(&mut gen);

    // 2. Nothing in flight: the sink's count is the same twice, 500 ms apart.
    settled_count(&mut sink);
    // 3. The sink's count, read while it is still connected.
    let (sink_rx, _) = stop_forwarding(&mut sink);

    // 4. SIGINT tqfwd: it drains, checks, writes the JSON, disconnects.
    tq.signal("INT");
    let run = finish_tqfwd(&mut tq, &json_path, t0);

    // 5. The testpmds quit.
    let mut peer_exits = Vec::new();
    for p in [&mut gen, &mut sink] {
        p.send_line("quit");
        let st = p.wait_exit(Duration::from_secs(15));
        if st.is_none() {
            p.signal("KILL");
        }
        peer_exits.push(format!("{}: {st:?}", p.name));
    }

    let context = format!(
        "generator TX {gen_tx}, sink RX {sink_rx}\n{}\n--- sink (tail) ---\n{}",
        run.describe(),
        sink.text()
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_clean_end(&run);
    let j = run.json();
    assert_eq!(j["backend"], backend);
    let port0_rx = j["ports"][0]["rx_packets"].as_u64().unwrap();
    let port1_tx = j["ports"][1]["tx_packets"].as_u64().unwrap();
    assert!(port1_tx > 0, "tqfwd forwarded nothing\n{context}");
    assert_eq!(
        sink_rx, port1_tx,
        "sink RX != tqfwd port 1 tx_packets\n{context}"
    );
    // The generator stopped with its link up, so tqfwd read all it sent.
    assert_eq!(
        port0_rx, gen_tx,
        "tqfwd port 0 rx_packets != generator TX\n{context}"
    );
    assert_eq!(
        j["ports"][0]["tx_packets"], 0,
        "nothing comes back from the rxonly sink\n{context}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{test}: generator {gen_tx}, tqfwd rx {port0_rx} tx {port1_tx}, sink {sink_rx}, {:.1} s; {}",
        t0.elapsed().as_secs_f64(),
        peer_exits.join(", ")
    );
}

/// tqfwd's cumulative TX from its last stats line (`total rx N tx M`).
fn tqfwd_total_tx(text: &str) -> u64 {
    text.lines()
        .rev()
        .filter_map(|l| l.split(" total rx ").nth(1))
        .filter_map(|rest| rest.split(" tx ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .find_map(|v| v.parse().ok())
        .unwrap_or(0)
}

/// memif peers that go away and come back, 8 times, while tqfwd forwards:
/// testpmd txonly as memif *server* → tqfwd port 0 (memif client) … tqfwd
/// port 1 (memif server) → testpmd rxonly (memif client). Each round stops
/// one peer, alternately the generator and the sink, by SIGINT or SIGKILL
/// (each pair twice; the soak, `scripts/soak.sh`, restarts peers for as
/// long as it runs),
/// starts a new one, and waits until tqfwd's TX grows again (the whole path
/// works). tqfwd must never crash (DPDK's memif PMD unmaps the shared
/// regions on a peer's disconnect: see `forward::lifecycle`), must log
/// each link change, reconnect its client port, and end with its checks.
fn memif_peer_restarts(backend: &str) {
    let _g = serial();
    let test = format!("memif_peer_restarts_{backend}");
    let t0 = Instant::now();
    for tool in ["dpdk-testpmd", "stdbuf"] {
        if !have_command(tool) {
            skip_test(&test, &format!("`{tool}` not found"));
            return;
        }
    }
    const ROUNDS: usize = 8;
    let dir = scratch(&test);
    let gen_sock = dir.join("gen.sock");
    let sink_sock = dir.join("sink.sock");
    let json_path = dir.join("stats.json");
    let start_gen = || {
        let _ = std::fs::remove_file(&gen_sock);
        let mut p = Proc::spawn_interactive(
            "generator testpmd",
            &mut testpmd_role(
                &unique_name("tqgen"),
                0,
                &gen_sock,
                "server",
                &["--forward-mode=txonly", "--txpkts=64"],
            ),
        );
        p.wait_until("forwarding start", Duration::from_secs(30), |t| {
            t.contains("packet forwarding - ports=")
        })
        .unwrap();
        p
    };
    let start_sink = || {
        let mut p = Proc::spawn_interactive(
            "sink testpmd",
            &mut testpmd(
                &unique_name("tqsink"),
                1,
                &sink_sock,
                &["--forward-mode=rxonly"],
            ),
        );
        p.wait_until("forwarding start", Duration::from_secs(30), |t| {
            t.contains("packet forwarding - ports=")
        })
        .unwrap();
        p
    };
    let mut gen = start_gen();
    let vdevs = vec![
        format!(
            "net_memif0,role=client,socket={},socket-abstract=no,id=0",
            gen_sock.display()
        ),
        format!(
            "net_memif1,role=server,socket={},socket-abstract=no,id=0",
            sink_sock.display()
        ),
    ];
    let app = [
        "--backend",
        backend,
        "--stats-interval",
        "0.2",
        "--link-timeout",
        "10",
    ];
    let mut tq = Proc::spawn(
        "tqfwd",
        &mut tqfwd_cmd(&unique_name("tqfwdrestart"), &vdevs, &app, &json_path),
    );
    tq.wait_until("memif server socket", Duration::from_secs(20), |_| {
        sink_sock.exists()
    })
    .unwrap();
    let mut sink = start_sink();
    let resumed = |tq: &mut Proc, what: &str| {
        let before = tqfwd_total_tx(&tq.text());
        tq.wait_until(what, Duration::from_secs(30), |t| {
            tqfwd_total_tx(t) > before + 1000
        })
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    };
    resumed(&mut tq, "forwarding");
    for round in 0..ROUNDS {
        let sig = if (round / 2) % 2 == 0 { "INT" } else { "KILL" };
        let victim = if round % 2 == 0 { &mut gen } else { &mut sink };
        let name = victim.name.clone();
        victim.signal(sig);
        assert!(
            victim.wait_exit(Duration::from_secs(15)).is_some(),
            "{name} did not exit on SIG{sig}"
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            tq.exited().is_none(),
            "round {round}: tqfwd died after the {name} got SIG{sig}\n{}",
            tq.text()
        );
        if round % 2 == 0 {
            gen = start_gen();
        } else {
            sink = start_sink();
        }
        resumed(
            &mut tq,
            &format!("forwarding after round {round} (SIG{sig} to the {name})"),
        );
    }
    tq.signal("INT");
    let run = finish_tqfwd(&mut tq, &json_path, t0);
    for p in [&mut gen, &mut sink] {
        p.send_line("quit");
        if p.wait_exit(Duration::from_secs(15)).is_none() {
            p.signal("KILL");
        }
    }
    assert_clean_end(&run);
    let downs = run.stdout.matches("link down: not polled").count();
    let ups = run.stdout.matches("polled again").count();
    assert!(
        downs >= ROUNDS && ups >= ROUNDS,
        "each peer restart must be seen: {downs} link-down and {ups} link-up lines for {ROUNDS} restarts\n{}",
        run.describe()
    );
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{test}: {ROUNDS} peer restarts survived, tqfwd tx {}, {:.1} s",
        run.json()["tx_packets"],
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn memif_peer_restarts_tq() {
    memif_peer_restarts("tq");
}

#[test]
fn memif_peer_restarts_ring() {
    memif_peer_restarts("ring");
}

#[test]
fn memif_testpmd_chain_tq() {
    memif_chain("tq");
}

#[test]
fn memif_testpmd_chain_ring() {
    memif_chain("ring");
}

const MAC_A: &str = "02:77:00:00:00:0a";
const MAC_B: &str = "02:77:00:00:00:0b";
const FLOWS: u64 = 16;
const DATAGRAMS: u64 = 8000;
/// Paced well below what tqfwd forwards even when starved: the weak spot on
/// a loaded 2-core machine is the receiver's default socket buffer (~200
/// KiB, a few hundred datagrams).
const PPS: &str = "4000";

/// tqfwd on the kernel-peer ports, forwarding: started once both links are
/// up (the veths are), so this waits for its "forwarding: …" log line, or
/// past --link-timeout (5 s) at the latest.
fn spawn_forwarding(prefix: &str, vdevs: &[String], app: &[&str], json: &Path) -> Proc {
    let mut tq = Proc::spawn("tqfwd", &mut tqfwd_cmd(prefix, vdevs, app, json));
    let spawned = Instant::now();
    tq.wait_until("forwarding", Duration::from_secs(20), |t| {
        t.contains("forwarding") || spawned.elapsed() > Duration::from_secs(6)
    })
    .unwrap();
    tq
}

/// The UDP receiver in namespace B, listening, expecting `count`
/// datagrams within `timeout_s` seconds.
fn kernel_receiver(ns: &NetnsPair, count: u64, timeout_s: &str) -> Proc {
    let expect = count.to_string();
    let mut recv = Proc::spawn(
        "udp receiver",
        ns.exec_prio(&ns.b, peer_bin()).args([
            "recv",
            "--bind",
            "10.77.0.2:9000",
            "--expect",
            &expect,
            "--timeout",
            timeout_s,
        ]),
    );
    recv.wait_until("listening", Duration::from_secs(10), |t| {
        t.contains("listening on")
    })
    .unwrap();
    recv
}

/// The UDP sender in namespace A: `count` datagrams over [`FLOWS`] flows
/// from source ports `src_port_base`.., at [`PPS`], after a 500 ms
/// warm-up datagram.
fn kernel_sender(ns: &NetnsPair, count: u64, src_port_base: &str) -> Command {
    let mut cmd = ns.exec_prio(&ns.a, peer_bin());
    cmd.args([
        "send",
        "--dst",
        "10.77.0.2:9000",
        "--flows",
        &FLOWS.to_string(),
        "--count",
        &count.to_string(),
        "--src-port-base",
        src_port_base,
        "--pps",
        PPS,
        "--warmup-ms",
        "500",
    ]);
    cmd
}

/// The two namespaces and veths of a kernel-peer test on 10.77.0.0/24,
/// or None (after saying why): [`kernel_netns`].
fn kernel_namespaces(test: &str) -> Option<NetnsPair> {
    kernel_netns(test, MAC_A, "10.77.0.1/24", MAC_B, "10.77.0.2/24")
}

/// The one-line JSON result `tqfwd-udp-peer recv` prints.
fn receiver_result(recv_text: &str, context: &str) -> serde_json::Value {
    recv_text
        .lines()
        .find(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("receiver JSON"))
        .unwrap_or_else(|| panic!("no receiver JSON\n{context}"))
}

/// Kernel UDP (namespace A) → af_packet → tqfwd → af_packet → kernel UDP
/// (namespace B), both ports with two queue pairs polled by two RX lcores.
///
/// MACs: tqfwd rewrites them (the default, the path under test) with
/// `--peer-mac` set to the namespaces' `eth0` MACs, so every frame leaves
/// addressed to the receiving interface and its kernel accepts it. With
/// the default `02:00:00:00:00:0N` the kernel would discard them as
/// PACKET_OTHERHOST; `--no-mac-rewrite` would also work (a transparent
/// bridge) but would leave the rewrite untested.
fn kernel_peer(backend: &str) {
    let _g = serial();
    let test = format!("kernel_udp_af_packet_{backend}");
    let t0 = Instant::now();
    let Some(ns) = kernel_namespaces(&test) else {
        return;
    };
    let dir = scratch(&format!("kernel-{backend}"));
    let json_path = dir.join("stats.json");
    // framecnt=4096 (default 512): the kernel fans a flow out to another
    // queue's socket (22.11 sets PACKET_FANOUT_FLAG_ROLLOVER with HASH) once
    // its ring is three-quarters full, and drops when all are full. A ring
    // deep enough to ride out an RX lcore descheduled for over a second
    // keeps every flow on its queue, hence in order, on a loaded machine.
    let vdevs = vec![
        format!("net_af_packet0,iface={},qpairs=2,framecnt=4096", ns.host_a),
        format!("net_af_packet1,iface={},qpairs=2,framecnt=4096", ns.host_b),
    ];
    let peer0 = format!("0={MAC_A}");
    let peer1 = format!("1={MAC_B}");
    let app = [
        "--backend",
        backend,
        "--rx-lcores",
        "0-1",
        "--worker-lcores",
        "0-1",
        "--tx-lcores",
        "0",
        "--on-full",
        "wait",
        "--peer-mac",
        &peer0,
        "--peer-mac",
        &peer1,
        "--stats-interval",
        "1",
        "--link-timeout",
        "5",
    ];
    let mut tq = spawn_forwarding(&unique_name("tqfwdpeer"), &vdevs, &app, &json_path);
    let mut recv = kernel_receiver(&ns, DATAGRAMS, "30");
    // One warm-up datagram resolves ARP (through tqfwd) before the counted ones.
    let send = kernel_sender(&ns, DATAGRAMS, "40000")
        .output()
        .expect("run sender");
    let send_text =
        String::from_utf8_lossy(&send.stdout).into_owned() + &String::from_utf8_lossy(&send.stderr);
    let recv_status = recv.wait_exit(Duration::from_secs(40));
    tq.signal("INT");
    let run = finish_tqfwd(&mut tq, &json_path, t0);
    let neigh = run_cmd("ip", &["-n", &ns.a, "neigh", "show"]).unwrap_or_default();
    // Where a datagram could be lost besides tqfwd: B's socket buffer
    // (RcvbufErrors), B's stack (InErrors: bad checksums); tqfwd's af_packet
    // rings show up as hw_imissed in its JSON.
    let udp_b = ns.udp_counters(&ns.b);
    drop(ns); // namespaces and veths go now, whatever the asserts below say

    let recv_text = recv.text();
    let context = format!(
        "sender: {send_text}\nreceiver ({recv_status:?}): {recv_text}\nA's neighbours: {neigh}\nB's UDP counters:\n{udp_b}\n{}",
        run.describe()
    );
    assert!(send.status.success(), "sender failed\n{context}");
    let r = receiver_result(&recv_text, &context);
    assert_eq!(r["unique"], DATAGRAMS, "every datagram arrives\n{context}");
    assert_eq!(r["missing"], 0, "{context}");
    assert_eq!(r["duplicates"], 0, "exactly once\n{context}");
    assert_eq!(r["order_violations"], 0, "in order per flow\n{context}");
    assert_eq!(r["foreign"], 0, "{context}");
    assert_eq!(r["flows"], FLOWS, "{context}");
    assert_eq!(
        r["warmup"], 1,
        "the warm-up datagram went through too\n{context}"
    );

    assert_clean_end(&run);
    let j = run.json();
    assert_eq!(j["backend"], backend);
    // Port 0 (facing the sender) received every datagram plus the warm-up,
    // on both of its RX queues (kernel PACKET_FANOUT_HASH by flow).
    let p0 = &j["ports"][0];
    let q: Vec<u64> = p0["rx_queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(q.len(), 2, "two RX queues on port 0\n{context}");
    assert!(
        q.iter().all(|&n| n > 0),
        "kernel fanout left an RX queue of port 0 idle: {q:?}\n{context}"
    );
    assert_eq!(
        q.iter().sum::<u64>(),
        p0["rx_packets"].as_u64().unwrap(),
        "{context}"
    );
    assert!(p0["rx_packets"].as_u64().unwrap() > DATAGRAMS, "{context}");
    assert!(
        j["ports"][1]["tx_packets"].as_u64().unwrap() > DATAGRAMS,
        "{context}"
    );
    assert!(
        j["classes"]["udp"].as_u64().unwrap() > DATAGRAMS,
        "{context}"
    );
    // Both RX lcores polled traffic.
    for l in j["lcores"].as_array().unwrap() {
        assert!(
            l["rx_packets"].as_u64().unwrap() > 0,
            "RX lcore {} idle\n{context}",
            l["lcore"]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{test}: {DATAGRAMS} datagrams in {FLOWS} flows, port 0 RX queues {q:?}, {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn kernel_udp_af_packet_tq() {
    kernel_peer("tq");
}

#[test]
fn kernel_udp_af_packet_ring() {
    kernel_peer("ring");
}

/// Link down / up while traffic flows: tqfwd's port 1 interface (the veth
/// end it transmits on) goes down for 0.8 s in the middle of a kernel UDP
/// stream and comes back. Forwarding resumes (every flow's last datagrams
/// arrive), nothing is duplicated or reordered, what tqfwd could not send
/// is counted, and the end checks hold.
#[test]
fn link_down_up_while_forwarding() {
    let _g = serial();
    let test = "link_down_up_while_forwarding";
    let t0 = Instant::now();
    let Some(ns) = kernel_namespaces(test) else {
        return;
    };
    let dir = scratch("linkflap");
    let json_path = dir.join("stats.json");
    let vdevs = vec![
        format!("net_af_packet0,iface={},framecnt=4096", ns.host_a),
        // Port 1 keeps the default 512-frame TX ring: 0.8 s down at 4000/s
        // overflows it, so the drop accounting is exercised too.
        format!("net_af_packet1,iface={}", ns.host_b),
    ];
    let peer0 = format!("0={MAC_A}");
    let peer1 = format!("1={MAC_B}");
    let app = [
        "--on-full",
        "drop",
        "--peer-mac",
        &peer0,
        "--peer-mac",
        &peer1,
        "--stats-interval",
        "0.5",
        "--link-timeout",
        "5",
    ];
    let mut tq = spawn_forwarding(&unique_name("tqfwdflap"), &vdevs, &app, &json_path);
    const COUNT: u64 = 12_000; // 3 s at 4000 datagrams/s over FLOWS flows
    let mut recv = kernel_receiver(&ns, COUNT, "8");
    let mut send = Proc::spawn("udp sender", &mut kernel_sender(&ns, COUNT, "41000"));
    // 0.5 s warm-up, then ~1 s of traffic, then the link flaps.
    std::thread::sleep(Duration::from_millis(1500));
    let down = run_cmd("ip", &["link", "set", "dev", &ns.host_b, "down"]);
    std::thread::sleep(Duration::from_millis(800));
    let up = run_cmd("ip", &["link", "set", "dev", &ns.host_b, "up"]);
    let send_status = send.wait_exit(Duration::from_secs(20));
    let recv_status = recv.wait_exit(Duration::from_secs(20));
    tq.signal("INT");
    let run = finish_tqfwd(&mut tq, &json_path, t0);
    drop(ns);
    let context = format!("link down: {down:?}, up: {up:?}\nsender ({send_status:?}): {}\nreceiver ({recv_status:?}): {}\n{}", send.text(), recv.text(), run.describe());
    assert!(down.is_ok() && up.is_ok(), "{context}");
    let recv_text = recv.text();
    let r = receiver_result(&recv_text, &context);
    let per_flow = COUNT / FLOWS;
    assert_eq!(r["duplicates"], 0, "{context}");
    assert_eq!(r["order_violations"], 0, "{context}");
    assert!(r["unique"].as_u64().unwrap() > 0, "{context}");
    // Resumed: every flow's datagrams from the last ~10 % after the link
    // came back made it.
    assert!(
        r["last_seq_min"].as_u64().unwrap() >= per_flow * 9 / 10,
        "forwarding did not resume\n{context}"
    );
    assert_clean_end(&run);
    let j = run.json();
    let lost = COUNT - r["unique"].as_u64().unwrap();
    let tx_full = j["drops"]["tx_full"].as_u64().unwrap();
    eprintln!(
        "link flap: {lost} of {COUNT} datagrams lost while port 1 was down; tqfwd drops {}",
        j["drops"]
    );
    // What the down port could not take is counted by tqfwd (tx_full); the
    // kernel may lose more elsewhere, never less.
    assert!(
        tx_full > 0,
        "a 512-frame TX ring cannot hold 0.8 s of traffic\n{context}"
    );
    assert!(
        lost >= tx_full,
        "tqfwd counted drops that arrived?\n{context}"
    );
}

/// A TX peer that stops reading: the sink testpmd stops polling (its memif
/// link stays up) for 1.5 s mid-traffic, then starts again.
/// - `--on-full drop`: once the port has refused for `--drop-after`, what
///   the full memif ring refuses is freed and counted as `tx_full`; memory
///   stays bounded (0 mbufs in use at the end).
/// - `--on-full wait`: nothing is dropped anywhere in tqfwd; the pressure
///   goes back to the generator, whose memif TX is refused instead.
///
/// Both: forwarding resumes, the sink's cumulative count equals tqfwd's
/// port 1 `tx_packets`, tqfwd read everything the generator sent. Every
/// packet is a latency sample (`--latency-sample 1`), and each is measured
/// once however often a refused burst is retried: samples = packets that
/// left the TX stage (sent or `tx_full`), minus, in drop mode, samples
/// freed before TX.
fn tx_stall(on_full: &str) {
    let _g = serial();
    let test = format!("tx_stall_{on_full}");
    let t0 = Instant::now();
    let app = ["--on-full", on_full, "--stats-interval", "0.5"];
    let Some(MemifChain {
        dir,
        json_path,
        mut tq,
        mut sink,
        mut gen,
    }) = MemifChain::start_forwarding(&test, &app, Duration::from_secs(1))
    else {
        return;
    };
    // The sink stops reading for 1.5 s, then reads again.
    stop_forwarding(&mut sink);
    let stalled_at = port_stats(&mut sink).0;
    std::thread::sleep(Duration::from_millis(1500));
    sink.send_line("start");
    sink.wait_until("forwarding restart", Duration::from_secs(10), |t| {
        t.matches("packet forwarding - ports=").count() >= 2
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let (_, gen_tx) = stop_forwarding(&mut gen);
    let sink_rx = settled_count(&mut sink);
    stop_forwarding(&mut sink);
    tq.signal("INT");
    let run = finish_tqfwd(&mut tq, &json_path, t0);
    for p in [&mut gen, &mut sink] {
        p.send_line("quit");
        if p.wait_exit(Duration::from_secs(15)).is_none() {
            p.signal("KILL");
        }
    }
    let context = format!(
        "generator TX {gen_tx}, sink RX {sink_rx} (at stall {stalled_at})\n{}",
        run.describe()
    );
    assert_clean_end(&run);
    let j = run.json();
    let port1_tx = j["ports"][1]["tx_packets"].as_u64().unwrap();
    assert!(
        sink_rx > stalled_at,
        "forwarding resumed after the stall\n{context}"
    );
    assert_eq!(
        sink_rx, port1_tx,
        "sink RX == tqfwd port 1 tx_packets\n{context}"
    );
    assert_eq!(
        j["ports"][0]["rx_packets"].as_u64().unwrap(),
        gen_tx,
        "tqfwd read all the generator sent\n{context}"
    );
    let tx_full = j["drops"]["tx_full"].as_u64().unwrap();
    let left_tx: u64 = (0..2)
        .map(|p| j["ports"][p]["tx_packets"].as_u64().unwrap())
        .sum::<u64>()
        + tx_full;
    let samples = j["latency_ns"]["samples"].as_u64().unwrap();
    if on_full == "drop" {
        assert!(
            samples <= left_tx,
            "each sample measured once: {samples} samples, {left_tx} packets left TX\n{context}"
        );
    } else {
        assert_eq!(
            samples, left_tx,
            "each packet (all samples) measured once\n{context}"
        );
    }
    if on_full == "drop" {
        assert!(
            tx_full > 0,
            "a stalled peer for 1.5 s must overflow the memif ring\n{context}"
        );
    } else {
        assert_eq!(
            j["drops_total"], 0,
            "--on-full wait drops nothing\n{context}"
        );
    }
    eprintln!(
        "{test}: generator {gen_tx}, sink {sink_rx}, tqfwd drops {}",
        j["drops"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tx_stall_drop() {
    tx_stall("drop");
}

#[test]
fn tx_stall_wait() {
    tx_stall("wait");
}
