//! L3 mode (`--routes`) with the Linux kernel as the hosts: tqfwd is the
//! router between two network namespaces on two subnets.
//!
//! ```text
//!  namespace A                      tqfwd (one lcore)                namespace B
//!  eth0 198.51.100.2/24 ── veth ── port 0 │ port 1 ── veth ── eth0 203.0.113.2/24
//!  default via .1 (tqfwd's port 0)  route file:          default via .1 (tqfwd's port 1)
//!                                   198.51.100.0/24 via host-a (port 0, A's eth0 MAC)
//!                                   203.0.113.0/24  via host-b (port 1, B's eth0 MAC)
//! ```
//!
//! tqfwd answers no ARP, so each namespace holds a permanent neighbour
//! entry for its gateway with the MAC of the tqfwd port facing it (an
//! `net_af_packet` port has its interface's MAC; the test reads it from
//! tqfwd's start line). No address is held by anything but the two
//! `eth0`: the gateways exist only as those neighbour entries. The frames
//! to a gateway are addressed to the host ends' own MACs, so this host's
//! kernel takes them up too: IPv4 forwarding goes off on those two
//! interfaces, so that only tqfwd routes.
//!
//! Then, through tqfwd:
//! - TCP both ways at once: A connects to B and sends 16 MiB, B connects
//!   to A and sends another 16 MiB; each receiver's SHA-256 equals its
//!   sender's;
//! - UDP datagrams sent with IP_TTL 1, 64, 17 and 2, each way: the receiver
//!   (IP_RECVTTL) reads 63, 16 and 1 (tqfwd is the one hop that decrements:
//!   a sending host writes the TTL it was given, a receiving host
//!   decrements nothing), and the TTL-1 datagram never arrives (tqfwd
//!   counts it as `ttl_exceeded`);
//! - one datagram from A to an address outside both prefixes (198.18.0.1,
//!   held by nobody; it goes no further than tqfwd): `no_route`.
//!
//! At the end tqfwd's own checks hold (conservation, 0 mbufs in use) and
//! rx = tx + Σ drops. Drops are allowed only for the reasons the kernels'
//! traffic explains: `ttl_exceeded` and `no_route` (the probes above) and
//! `l3_non_ip` (whatever non-IP chatter a kernel sends; IPv6 is off).
//!
//! Holds `serial()`. Skips (or fails with `TQFWD_REQUIRE_PEERS=1`) where
//! namespaces cannot be made or `ip`, `ethtool`, `sysctl` or `sha256sum`
//! is missing.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MAC_A: &str = "02:77:01:00:00:0a";
const MAC_B: &str = "02:77:01:00:00:0b";
/// A's and B's `eth0`, and the gateway each routes through (no one holds
/// the gateway addresses: they are neighbour entries for tqfwd's ports).
const IP_A: &str = "198.51.100.2";
const GW_A: &str = "198.51.100.1";
const IP_B: &str = "203.0.113.2";
const GW_B: &str = "203.0.113.1";
/// Bytes of each TCP transfer.
const BYTES: usize = 16 << 20;
/// The TTLs of the UDP probes, in the order sent: TTL 1 first, so once the
/// last one (TTL 2) arrives, the TTL-1 datagram, a flow's earlier
/// datagram, would have arrived before it.
const PROBE_TTLS: [u8; 4] = [1, 64, 17, 2];
/// How long any socket operation may block.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `f` on a thread that has joined the network namespace `ns` (made
/// by `ip netns add`) and returns its result: a socket it opens belongs to
/// `ns` for its whole life, whichever thread then uses it.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns(2) on an open namespace file moves this thread (only
        // it: CLONE_NEWNET is per thread) into that network namespace; no
        // memory is involved.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// `n` deterministic pseudo-random bytes.
fn payload(seed: u64, n: usize) -> Vec<u8> {
    let mut r = XorShift::new(seed);
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&r.next_u64().to_le_bytes());
    }
    v.truncate(n);
    v
}

/// SHA-256 of `data` in hex, by coreutils' `sha256sum`.
fn sha256(data: &[u8]) -> String {
    let mut c = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sha256sum");
    // sha256sum reads all of stdin before it writes: no deadlock.
    c.stdin
        .take()
        .unwrap()
        .write_all(data)
        .expect("feed sha256sum");
    let out = c.wait_with_output().expect("sha256sum");
    assert!(out.status.success(), "sha256sum: {}", out.status);
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// One TCP connection from namespace `from` to `to_addr` (a listener of
/// the other namespace, `listener`), accepted: (client, server) ends, both
/// with [`IO_TIMEOUT`]s.
fn tcp_pair(from: &str, to_addr: SocketAddr, listener: &TcpListener) -> (TcpStream, TcpStream) {
    let client = in_netns(from, move || {
        TcpStream::connect_timeout(&to_addr, Duration::from_secs(20))
    })
    .unwrap_or_else(|e| panic!("connect to {to_addr} through tqfwd: {e}"));
    // The handshake is done: the connection waits in the backlog.
    let (server, _) = listener.accept().expect("accept");
    for s in [&client, &server] {
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    }
    (client, server)
}

/// Sends `data` on `tx` (then closes its sending side) while reading `rx`
/// to its end, on two threads; returns what `rx` read.
fn transfer(
    mut tx: TcpStream,
    mut rx: TcpStream,
    data: std::sync::Arc<Vec<u8>>,
) -> std::thread::JoinHandle<std::io::Result<Vec<u8>>> {
    std::thread::spawn(move || {
        let writer = std::thread::spawn(move || -> std::io::Result<()> {
            tx.write_all(&data)?;
            tx.shutdown(Shutdown::Write)
        });
        let mut got = Vec::with_capacity(BYTES);
        let read = rx.read_to_end(&mut got).map(|_| got);
        let wrote = writer.join().expect("writer thread");
        wrote.and(read)
    })
}

/// A UDP socket of namespace `ns` bound to `addr` that reports each
/// datagram's TTL (IP_RECVTTL), with a receive timeout of `timeout`.
fn ttl_receiver(ns: &str, addr: SocketAddr, timeout: Duration) -> UdpSocket {
    let s = in_netns(ns, move || UdpSocket::bind(addr))
        .unwrap_or_else(|e| panic!("bind {addr} in {ns}: {e}"));
    let one: libc::c_int = 1;
    // SAFETY: a valid socket, and a c_int option value of the size given.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_RECVTTL,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "IP_RECVTTL: {}", std::io::Error::last_os_error());
    s.set_read_timeout(Some(timeout)).unwrap();
    s
}

/// One datagram from `s` (see [`ttl_receiver`]): its payload and the TTL
/// its IP header carried.
fn recv_ttl(s: &UdpSocket) -> std::io::Result<(Vec<u8>, Option<u8>)> {
    let mut buf = [0u8; 512];
    // Room for a few control messages, aligned as cmsghdr wants.
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; all zeroes is an empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at `iov` (over `buf`) and `control`, all alive
    // and of the lengths given, for the duration of the call.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut ttl = None;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled
    // (msg_controllen bounds them); an IP_TTL message holds one c_int.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TTL {
                let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                ttl = u8::try_from(v).ok();
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((buf[..n as usize].to_vec(), ttl))
}

/// Sends the [`PROBE_TTLS`] datagrams from namespace `from` (address
/// `src`) to `rx`'s address, each with its TTL set by IP_TTL and named in
/// its payload, and returns (TTL sent, TTL read) of each that `rx` read,
/// in order, up to the last one sent.
fn ttl_probes(from: &str, src: &str, rx: &UdpSocket) -> Vec<(u8, Option<u8>)> {
    let dst = rx.local_addr().unwrap();
    let src: SocketAddr = format!("{src}:0").parse().unwrap();
    let tx = in_netns(from, move || UdpSocket::bind(src)).expect("bind the UDP sender");
    for ttl in PROBE_TTLS {
        tx.set_ttl(u32::from(ttl)).unwrap();
        tx.send_to(format!("ttl {ttl}").as_bytes(), dst)
            .expect("send a probe");
    }
    let last = *PROBE_TTLS.last().unwrap();
    let mut seen = Vec::new();
    loop {
        let (data, ttl) = recv_ttl(rx).unwrap_or_else(|e| {
            panic!("probes {from} -> {dst}: no datagram ({e}); got so far {seen:?}")
        });
        let text = String::from_utf8_lossy(&data);
        let sent: u8 = text
            .strip_prefix("ttl ")
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("a foreign datagram {text:?}"));
        seen.push((sent, ttl));
        if sent == last {
            return seen;
        }
    }
}

/// The MAC tqfwd's start line gives port `port` (`port N: NAME (DRIVER),
/// socket S, mac M, …`), and that line's device name.
fn port_mac(text: &str, port: u16) -> Option<(String, String)> {
    let head = format!("port {port}: ");
    text.lines().find_map(|l| {
        let rest = &l[l.find(&head)? + head.len()..];
        let name = rest.split_whitespace().next()?.to_string();
        let mac = rest.split(", mac ").nth(1)?.split(',').next()?.to_string();
        Some((name, mac))
    })
}

/// A namespace's TCP counters (`/proc/net/snmp`'s Tcp lines:
/// RetransSegs, InErrs, …) and its link statistics, for the record.
fn kernel_side(ns: &NetnsPair, name: &str) -> String {
    let snmp = run_cmd("ip", &["netns", "exec", name, "cat", "/proc/net/snmp"]).unwrap_or_default();
    let tcp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Tcp:")).collect();
    let neigh = run_cmd("ip", &["-n", name, "neigh", "show"]).unwrap_or_default();
    let route = run_cmd("ip", &["-n", name, "route", "show"]).unwrap_or_default();
    let link = run_cmd("ip", &["-n", name, "-s", "link", "show", "eth0"]).unwrap_or_default();
    format!(
        "--- {name} ---\nroutes:\n{route}neighbours:\n{neigh}{link}{}\n{}",
        tcp.join("\n"),
        ns.udp_counters(name)
    )
}

/// The value after `RetransSegs` in a namespace's Tcp lines (0 if absent).
fn retransmits(kernel: &str) -> u64 {
    let tcp: Vec<Vec<&str>> = kernel
        .lines()
        .filter(|l| l.starts_with("Tcp:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let (Some(names), Some(values)) = (tcp.first(), tcp.get(1)) else {
        return 0;
    };
    names
        .iter()
        .position(|n| *n == "RetransSegs")
        .and_then(|i| values.get(i)?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn kernel_hosts_routed_tcp_and_ttl() {
    let _g = serial();
    let test = "routes_kernel::kernel_hosts_routed_tcp_and_ttl";
    let t0 = Instant::now();
    if !have_command("sha256sum") {
        skip_test(test, "`sha256sum` not found (coreutils)");
        return;
    }
    let Some(ns) = kernel_netns(
        test,
        MAC_A,
        &format!("{IP_A}/24"),
        MAC_B,
        &format!("{IP_B}/24"),
    ) else {
        return;
    };
    // The frames to a gateway are addressed to tqfwd's ports, whose MACs
    // are the host ends' own: the host's kernel takes them up too. It must
    // not route them itself (where IPv4 forwarding is on, it would), so
    // forwarding goes off on these two interfaces.
    for host in [&ns.host_a, &ns.host_b] {
        run_cmd(
            "sysctl",
            &["-qw", &format!("net.ipv4.conf.{host}.forwarding=0")],
        )
        .expect("IPv4 forwarding off on the host ends");
    }
    let dir = scratch("routes-kernel");
    let json_path = dir.join("stats.json");
    let route_file = dir.join("routes.txt");
    std::fs::write(
        &route_file,
        format!(
            "nexthop host-a port 0 mac {MAC_A}\n\
             nexthop host-b port 1 mac {MAC_B}\n\
             route 198.51.100.0/24 via host-a\n\
             route 203.0.113.0/24 via host-b\n"
        ),
    )
    .unwrap();
    // framecnt=4096 (default 512): deeper af_packet rings ride out the
    // lcore losing its CPU to the kernels' TCP for a while.
    let vdevs = vec![
        format!("net_af_packet0,iface={},framecnt=4096", ns.host_a),
        format!("net_af_packet1,iface={},framecnt=4096", ns.host_b),
    ];
    let routes = route_file.display().to_string();
    let app = [
        "--routes",
        routes.as_str(),
        "--on-full",
        "wait",
        "--stats-interval",
        "1",
        "--link-timeout",
        "5",
    ];
    // One lcore: the other CPU is the kernels' (TCP, softirqs, the test's
    // threads), which a second busy-polling lcore would starve.
    let mut tq = Proc::spawn(
        "tqfwd",
        &mut peer_tqfwd_cmd("0", &unique_name("tqfwdl3k"), &vdevs, &app, &json_path),
    );
    tq.wait_until("forwarding", Duration::from_secs(30), |t| {
        t.contains("forwarding: backend")
    })
    .unwrap();
    let start = tq.text();
    assert!(
        start.contains("IPv4: 2 routes"),
        "the route table's start line\n{start}"
    );
    // Port N is net_af_packetN, facing namespace A (0) or B (1).
    let mut tq_macs = Vec::new();
    for (port, dev) in [(0, "net_af_packet0"), (1, "net_af_packet1")] {
        let (name, mac) =
            port_mac(&start, port).unwrap_or_else(|| panic!("no port {port} line\n{start}"));
        assert_eq!(name, dev, "port {port}\n{start}");
        tq_macs.push(mac);
    }

    // Each namespace: a default route through its gateway, and the
    // gateway's MAC (tqfwd's port facing it) as a permanent neighbour.
    for (name, gw, mac) in [(&ns.a, GW_A, &tq_macs[0]), (&ns.b, GW_B, &tq_macs[1])] {
        let n = name.as_str();
        run_cmd(
            "ip",
            &[
                "-n",
                n,
                "neigh",
                "add",
                gw,
                "lladdr",
                mac,
                "nud",
                "permanent",
                "dev",
                "eth0",
            ],
        )
        .unwrap();
        run_cmd(
            "ip",
            &["-n", n, "route", "add", "default", "via", gw, "dev", "eth0"],
        )
        .unwrap();
    }

    // TCP both ways at once: A → B and B → A, one connection each.
    let addr_a: SocketAddr = format!("{IP_A}:5002").parse().unwrap();
    let addr_b: SocketAddr = format!("{IP_B}:5001").parse().unwrap();
    let listen_a = in_netns(&ns.a, move || TcpListener::bind(addr_a)).expect("listen in A");
    let listen_b = in_netns(&ns.b, move || TcpListener::bind(addr_b)).expect("listen in B");
    let data_ab = std::sync::Arc::new(payload(0xab, BYTES));
    let data_ba = std::sync::Arc::new(payload(0xba, BYTES));
    let (a_client, b_server) = tcp_pair(&ns.a, addr_b, &listen_b);
    let (b_client, a_server) = tcp_pair(&ns.b, addr_a, &listen_a);
    let tcp_start = Instant::now();
    let ab = transfer(a_client, b_server, data_ab.clone());
    let ba = transfer(b_client, a_server, data_ba.clone());
    let got_b = ab.join().expect("A -> B thread");
    let got_a = ba.join().expect("B -> A thread");
    let tcp_s = tcp_start.elapsed().as_secs_f64();

    // The TTLs, each way, then one datagram without a route.
    let probe_rx_b = ttl_receiver(&ns.b, format!("{IP_B}:6001").parse().unwrap(), IO_TIMEOUT);
    let probe_rx_a = ttl_receiver(&ns.a, format!("{IP_A}:6002").parse().unwrap(), IO_TIMEOUT);
    let ttl_ab = ttl_probes(&ns.a, IP_A, &probe_rx_b);
    let ttl_ba = ttl_probes(&ns.b, IP_B, &probe_rx_a);
    // To an address nobody holds (RFC 2544's benchmark range) that no
    // route of tqfwd covers: A's default route takes it to tqfwd, which
    // is as far as it goes.
    let no_route_sent = in_netns(&ns.a, || UdpSocket::bind(format!("{IP_A}:0")))
        .and_then(|s| s.send_to(b"no route", "198.18.0.1:6003"))
        .map(|_| ());
    // Give tqfwd the time to take it and count it.
    std::thread::sleep(Duration::from_millis(300));

    let kernel_a = kernel_side(&ns, &ns.a);
    let kernel_b = kernel_side(&ns, &ns.b);
    let host_links = run_cmd("ip", &["-s", "link", "show", &ns.host_a]).unwrap_or_default()
        + &run_cmd("ip", &["-s", "link", "show", &ns.host_b]).unwrap_or_default();
    tq.signal("INT");
    let run = finish_tqfwd(&mut tq, &json_path, t0);
    drop(ns); // namespaces and veths go now, whatever the asserts below say

    let context = format!(
        "{kernel_a}\n{kernel_b}\n--- tqfwd's interfaces ---\n{host_links}\n{}",
        run.describe()
    );
    let got_b = got_b.unwrap_or_else(|e| panic!("A -> B transfer: {e}\n{context}"));
    let got_a = got_a.unwrap_or_else(|e| panic!("B -> A transfer: {e}\n{context}"));
    assert_eq!(got_b.len(), BYTES, "bytes B read from A\n{context}");
    assert_eq!(got_a.len(), BYTES, "bytes A read from B\n{context}");
    let (sent_ab, recv_ab) = (sha256(&data_ab), sha256(&got_b));
    let (sent_ba, recv_ba) = (sha256(&data_ba), sha256(&got_a));
    assert_eq!(sent_ab, recv_ab, "SHA-256 A -> B\n{context}");
    assert_eq!(sent_ba, recv_ba, "SHA-256 B -> A\n{context}");

    // tqfwd is the only hop, and it decrements once; TTL 1 stops there.
    let want: Vec<(u8, Option<u8>)> = PROBE_TTLS
        .iter()
        .filter(|&&t| t > 1)
        .map(|&t| (t, Some(t - 1)))
        .collect();
    assert_eq!(ttl_ab, want, "(TTL sent, TTL read) A -> B\n{context}");
    assert_eq!(ttl_ba, want, "(TTL sent, TTL read) B -> A\n{context}");
    assert!(
        no_route_sent.is_ok(),
        "send to 198.18.0.1: {no_route_sent:?}\n{context}"
    );

    assert_clean_end(&run);
    let j = run.json();
    let drops = j["drops"].as_object().unwrap();
    for (reason, n) in drops {
        let n = n.as_u64().unwrap();
        match reason.as_str() {
            // One TTL-1 probe each way; the kernels send nothing else
            // with TTL 1 here (IGMP reports would: none without groups).
            "ttl_exceeded" => assert!(n >= 2, "ttl_exceeded {n}\n{context}"),
            "no_route" => assert!(n >= 1, "no_route {n}\n{context}"),
            "l3_non_ip" => {}
            _ => assert_eq!(n, 0, "drops {reason}\n{context}"),
        }
    }
    // What the kernels sent each way: at least one full frame per
    // 1500-byte MTU of the transfer, and its ACKs back.
    let frames = (BYTES / 1500) as u64;
    for p in 0..2 {
        let port = &j["ports"][p];
        assert_eq!(
            port["mac"].as_str().unwrap(),
            tq_macs[p],
            "port {p} MAC: JSON and start line\n{context}"
        );
        for dir in ["rx_packets", "tx_packets"] {
            assert!(
                port[dir].as_u64().unwrap() > frames,
                "port {p} {dir}\n{context}"
            );
        }
    }
    // L3 mode reads no L4 header: no class counts anything.
    for (class, n) in j["classes"].as_object().unwrap() {
        assert_eq!(n, 0, "class {class} in L3 mode\n{context}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{test}: 2 x {} MiB TCP in {tcp_s:.1} s ({:.0} MiB/s each way, retransmitted segments A {} B {}), TTLs {ttl_ab:?}; tqfwd rx {} tx {} drops {}; {:.1} s",
        BYTES >> 20,
        (BYTES >> 20) as f64 / tcp_s,
        retransmits(&kernel_a),
        retransmits(&kernel_b),
        j["rx_packets"],
        j["tx_packets"],
        j["drops"],
        t0.elapsed().as_secs_f64()
    );
}
