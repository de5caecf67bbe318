//! L3 mode (`--routes`) end to end: frames to nested IPv4 and IPv6
//! prefixes, with TTLs of 1, 2 and 64, bad checksums, bad lengths and
//! non-IP frames, in through `net_pcap` and out through `net_pcap`; every
//! frame is checked against a longest-prefix match computed here (not by
//! tqfwd's code), and its IPv4 header checksum by a sum written here.

use crate::common::*;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;
use tqfwd::testkit::gen;
use tqfwd::testkit::pcap;

/// The route file: l3fwd's lines and named next hops mixed; nested IPv4
/// prefixes (/8, /16, /24, /32, and a default route), nested IPv6 ones
/// (/32, /48, /64, /128) and no IPv6 default, so IPv6 misses.
const ROUTES: &str = "\
# l3fwd's form: the next hop is the port
R10.0.0.0/8 0
R10.1.0.0/16 1
R10.1.2.0/24 0
R10.1.2.3/32 1
nexthop gw-a port 1 mac 02:aa:00:00:00:01
route 172.16.0.0/12 via gw-a
route 0.0.0.0/0 via gw-b   # defined below
nexthop gw-b port 0 mac 02:bb:00:00:00:02
R2001:db8::/32 1
R2001:db8:1::/48 0
route 2001:db8:1:2::/64 via gw-a
route 2001:db8:1:2::5/128 via gw-b
";

/// A route of [`ROUTES`], as the test reads it: prefix, length, output
/// port and destination MAC (None: the port's default peer MAC).
struct Route {
    net: IpAddr,
    len: u8,
    port: u8,
    mac: Option<[u8; 6]>,
}

fn routes() -> Vec<Route> {
    let a = Some([0x02, 0xaa, 0, 0, 0, 1]);
    let b = Some([0x02, 0xbb, 0, 0, 0, 2]);
    let r = |net: &str, len, port, mac| Route {
        net: net.parse().unwrap(),
        len,
        port,
        mac,
    };
    vec![
        r("10.0.0.0", 8, 0, None),
        r("10.1.0.0", 16, 1, None),
        r("10.1.2.0", 24, 0, None),
        r("10.1.2.3", 32, 1, None),
        r("172.16.0.0", 12, 1, a),
        r("0.0.0.0", 0, 0, b),
        r("2001:db8::", 32, 1, None),
        r("2001:db8:1::", 48, 0, None),
        r("2001:db8:1:2::", 64, 1, a),
        r("2001:db8:1:2::5", 128, 0, b),
    ]
}

/// The address's bits as a 128-bit number, and its family's width.
fn bits(a: IpAddr) -> (u128, u32) {
    match a {
        IpAddr::V4(v) => (u128::from(u32::from(v)), 32),
        IpAddr::V6(v) => (u128::from(v), 128),
    }
}

/// The longest prefix of `routes` covering `dst`, by a plain scan.
fn lookup(routes: &[Route], dst: IpAddr) -> Option<&Route> {
    let (d, width) = bits(dst);
    routes
        .iter()
        .filter(|r| {
            let (n, w) = bits(r.net);
            let shift = w - u32::from(r.len);
            w == width && (r.len == 0 || (d >> shift) == (n >> shift))
        })
        .max_by_key(|r| r.len)
}

/// The IPv4 header checksum is valid: its 16-bit ones' complement sum is
/// 0xffff (summed here, not by tqfwd's `wire::checksum`).
fn ipv4_header_ok(h: &[u8]) -> bool {
    let mut sum: u32 = 0;
    for w in h.chunks(2) {
        sum += u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// What the input holds: each stamped frame's expected fate.
enum Fate {
    Out {
        port: u8,
        mac: [u8; 6],
        frame: Vec<u8>,
    },
    Drop(&'static str),
}

/// The input frames, each stamped frame's fate, and the drops expected
/// per reason.
type Input = (
    Vec<Vec<u8>>,
    HashMap<(u32, u64), Fate>,
    HashMap<&'static str, u64>,
);

/// The input frames (port 0 replays them) and, per stamp, what must
/// become of each; plus the expected count per drop reason.
fn input() -> Input {
    let table = routes();
    let dsts = [
        "10.9.9.9",
        "10.1.9.9",
        "10.1.2.9",
        "10.1.2.3",
        "172.20.0.1",
        "8.8.8.8",
        "2001:db8:5::1",
        "2001:db8:1:7::1",
        "2001:db8:1:2::9",
        "2001:db8:1:2::5",
        "2001:dead::1",
    ];
    let mut frames = Vec::new();
    let mut fates = HashMap::new();
    let mut drops: HashMap<&'static str, u64> = HashMap::new();
    for round in 0..30u64 {
        for (flow, dst) in dsts.iter().enumerate() {
            let dst: IpAddr = dst.parse().unwrap();
            let src: IpAddr = if dst.is_ipv4() {
                "192.0.2.1".parse().unwrap()
            } else {
                "2001:db8:ffff::1".parse().unwrap()
            };
            for (k, ttl) in [64u8, 2, 1].into_iter().enumerate() {
                let flow_id = (flow * 3 + k) as u32;
                let f = gen::routed_udp_frame(src, dst, ttl, flow_id, round, 64 + 8 * (flow % 3));
                let fate = if ttl <= 1 {
                    Fate::Drop("ttl_exceeded")
                } else {
                    match lookup(&table, dst) {
                        None => Fate::Drop("no_route"),
                        Some(r) => Fate::Out {
                            port: r.port,
                            mac: r.mac.unwrap_or([2, 0, 0, 0, 0, r.port]),
                            frame: f.clone(),
                        },
                    }
                };
                if let Fate::Drop(d) = fate {
                    *drops.entry(d).or_default() += 1;
                }
                fates.insert((flow_id, round), fate);
                frames.push(f);
            }
        }
        // Frames that fail a check (stamped as flows 1000+: none may
        // leave).
        let v4 = || {
            gen::routed_udp_frame(
                "192.0.2.1".parse().unwrap(),
                "10.1.2.9".parse().unwrap(),
                64,
                1000,
                round,
                64,
            )
        };
        let mut bad_sum = v4();
        bad_sum[24] ^= 0x40;
        let mut long = v4();
        long[16..18].copy_from_slice(&200u16.to_be_bytes());
        let mut ihl = v4();
        ihl[14] = 0x44;
        let mut v6 = gen::routed_udp_frame(
            "2001:db8:ffff::1".parse().unwrap(),
            "2001:db8:1::1".parse().unwrap(),
            64,
            1003,
            round,
            80,
        );
        v6[18..20].copy_from_slice(&500u16.to_be_bytes());
        let mut arp = vec![0xffu8; 6];
        arp.extend_from_slice(&gen::DEFAULT_SRC_MAC);
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.resize(60, 0);
        for (f, why) in [
            (bad_sum, "ipv4_bad_checksum"),
            (long, "ipv4_bad_header"),
            (ihl, "ipv4_bad_header"),
            (v6, "ipv6_bad_header"),
            (arp, "l3_non_ip"),
        ] {
            *drops.entry(why).or_default() += 1;
            frames.push(f);
        }
    }
    (frames, fates, drops)
}

/// One run of `ROUTES` over [`input`] with `app` options; checks every
/// frame out and every drop.
fn route_roundtrip(name: &str, app_extra: &[&str]) -> serde_json::Value {
    let _g = serial();
    let dir = scratch(&format!("routes-{name}"));
    let (frames, mut fates, drops) = input();
    let route_file = dir.join("routes.txt");
    std::fs::write(&route_file, ROUTES).unwrap();
    let vdevs = one_way_pcap_ports(&dir, &frames);
    let eal = eal_args("0-1", &vdevs);
    let route_arg = route_file.display().to_string();
    let mut app = vec![
        "--routes",
        route_arg.as_str(),
        "--on-full",
        "wait",
        "--depth",
        "256",
        "--burst",
        "16",
        "--debug-exit-when-idle",
        "300",
        "--duration",
        "20",
        "--stats-interval",
        "0",
    ];
    app.extend_from_slice(app_extra);
    let run = run_tqfwd(&dir, &eal, &app, Duration::from_secs(60));
    assert_clean_end(&run);
    let j = run.json();
    assert!(
        run.stderr.contains("routes ") && run.stderr.contains("IPv4: 6 routes"),
        "start line with the tables: {}",
        run.describe()
    );
    assert_eq!(j["rx_packets"].as_u64().unwrap(), frames.len() as u64);
    for (reason, n) in &drops {
        assert_eq!(
            j["drops"][*reason].as_u64().unwrap(),
            *n,
            "drops {reason}: {}",
            run.describe()
        );
    }
    let total_drops: u64 = drops.values().sum();
    assert_eq!(
        j["drops_total"].as_u64().unwrap(),
        total_drops,
        "{}",
        run.describe()
    );
    let mut seen = 0;
    for port in 0..2u8 {
        let out = pcap::read_all(dir.join(format!("out{port}.pcap"))).unwrap();
        let own = mac_bytes(j["ports"][port as usize]["mac"].as_str().unwrap());
        let mut last: HashMap<u32, u64> = HashMap::new();
        for p in &out {
            let s = gen::test_payload(&p.data).expect("a stamped frame");
            let fate = fates
                .remove(&(s.flow_id, s.seq))
                .unwrap_or_else(|| panic!("frame {s:?} out of port {port} twice or never sent"));
            let Fate::Out {
                port: want,
                mac,
                frame,
            } = fate
            else {
                panic!("frame {s:?} should have been dropped, left by port {port}");
            };
            assert_eq!(port, want, "frame {s:?} left by the wrong port");
            assert_eq!(&p.data[0..6], &mac, "dst MAC of {s:?}");
            assert_eq!(&p.data[6..12], &own, "src MAC of {s:?}");
            if let Some(prev) = last.insert(s.flow_id, s.seq) {
                assert!(s.seq > prev, "flow {} reordered", s.flow_id);
            }
            let d = &p.data;
            if frame[12..14] == [0x08, 0x00] {
                assert_eq!(d[22], frame[22] - 1, "TTL of {s:?}");
                assert!(ipv4_header_ok(&d[14..34]), "IPv4 header checksum of {s:?}");
                // Nothing else changed.
                assert_eq!(&d[12..22], &frame[12..22]);
                assert_eq!(&d[23..24], &frame[23..24]);
                assert_eq!(&d[26..], &frame[26..]);
            } else {
                assert_eq!(d[21], frame[21] - 1, "hop limit of {s:?}");
                assert_eq!(&d[12..21], &frame[12..21]);
                assert_eq!(&d[22..], &frame[22..]);
            }
            seen += 1;
        }
    }
    let missing: Vec<_> = fates
        .iter()
        .filter(|(_, f)| matches!(f, Fate::Out { .. }))
        .map(|(k, _)| *k)
        .collect();
    assert!(missing.is_empty(), "never forwarded: {missing:?}");
    assert_eq!(seen, j["tx_packets"].as_u64().unwrap());
    j.clone()
}

#[test]
fn routes_round_trip_default_layout() {
    route_roundtrip("default", &[]);
}

#[test]
fn routes_ring_shared() {
    route_roundtrip(
        "ring-shared",
        &["--backend", "ring", "--topology", "shared"],
    );
}

#[test]
fn routes_zero_copy_two_workers() {
    route_roundtrip(
        "zc-2w",
        &[
            "--handoff",
            "zero-copy",
            "--rx-lcores",
            "0",
            "--worker-lcores",
            "0-1",
            "--tx-lcores",
            "1",
        ],
    );
}

#[test]
fn routes_copy_tq_shared() {
    route_roundtrip("copy", &["--handoff", "copy", "--topology", "shared"]);
}

/// A class still picks the worker (here the one on lcore 1, for
/// everything to 10.0.0.0/8), and that worker routes.
#[test]
fn routes_with_a_class() {
    let j = route_roundtrip(
        "class",
        &["--worker-lcores", "0", "--class", "ten:dst=10.0.0.0/8:1"],
    );
    let classes = j["app_classes"].as_array().expect("app_classes");
    assert_eq!(classes[1]["name"], "ten");
    // Per round: four of the IPv4 destinations are in 10/8, three TTLs
    // each, and the frame to 10.1.2.9 with a bad checksum (the class
    // parser checks no checksum; the other bad headers match no class).
    let n = classes[1]["packets"].as_u64().unwrap();
    assert_eq!(n, 30 * (4 * 3 + 1), "{j}");
    assert_eq!(classes[1]["worker_lcores"]["1"].as_u64().unwrap(), n);
}

#[test]
fn routes_refuse_no_mac_rewrite_and_bad_lines() {
    let _g = serial();
    let dir = scratch("routes-refused");
    let vdevs = one_way_pcap_ports(&dir, &[]);
    let eal = eal_args("0-1", &vdevs);
    let file = dir.join("routes.txt");
    std::fs::write(&file, "R10.0.0.0/8 0\n").unwrap();
    let f = file.display().to_string();
    let run = run_tqfwd(
        &dir,
        &eal,
        &["--routes", &f, "--no-mac-rewrite"],
        Duration::from_secs(30),
    );
    assert_usage_error(&run, &["--routes", "--no-mac-rewrite"]);
    std::fs::write(&file, "R10.0.0.0/8 0\nR10.0.0.1/8 1\n").unwrap();
    let run = run_tqfwd(&dir, &eal, &["--routes", &f], Duration::from_secs(30));
    assert_usage_error(&run, &["routes.txt:2", "10.0.0.0/8"]);
    std::fs::write(&file, "R10.0.0.0/8 7\n").unwrap();
    let run = run_tqfwd(&dir, &eal, &["--routes", &f], Duration::from_secs(30));
    assert_usage_error(&run, &["routes.txt:1", "port"]);
}

/// Frames of the reload test: `n` frames, round-robin over 12 flows, four
/// each to 10.1.x (the prefix the reload moves), 10.2.x (the one it adds)
/// and 10.3.x (unchanged); frame `i` is flow `i % 12`, seq `i / 12`.
const RELOAD_FLOWS: usize = 12;

fn reload_frames(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let flow = i % RELOAD_FLOWS;
            let net = 1 + flow / 4;
            let dst: IpAddr = format!("10.{net}.0.{}", flow % 4 + 1).parse().unwrap();
            gen::routed_udp_frame(
                "192.0.2.1".parse().unwrap(),
                dst,
                64,
                flow as u32,
                (i / RELOAD_FLOWS) as u64,
                64,
            )
        })
        .collect()
}

/// A forwarder on two pcap ports, port 0 replaying `frames` once at
/// `--rx-rate`, with `app` options; stats JSON to DIR/stats.json.
fn start_routed(dir: &std::path::Path, frames: &[Vec<u8>], app: &[&str]) -> Proc {
    let vdevs = one_way_pcap_ports(dir, frames);
    let eal = eal_args("0-1", &vdevs);
    let mut p = Proc::spawn(
        "tqfwd",
        std::process::Command::new(bin())
            .args(&eal)
            .arg("--")
            .args(app)
            .args([
                "--rx-rate",
                "0.02",
                "--on-full",
                "wait",
                "--stats-interval",
                "0.5",
            ])
            .args(["--debug-exit-when-idle", "1000", "--duration", "60"])
            .arg("--stats-json")
            .arg(dir.join("stats.json"))
            .env("RUST_LOG", "info"),
    );
    p.wait_until("forwarding", Duration::from_secs(30), |t| {
        t.contains("forwarding: backend")
    })
    .unwrap();
    p
}

/// Waits for `n` stats lines (`--stats-interval 0.5`): the run is
/// forwarding.
fn stats_lines(p: &mut Proc, n: usize) {
    p.wait_until("stats lines", Duration::from_secs(10), |t| {
        t.matches(" Mpps  tx ").count() >= n
    })
    .unwrap();
}

/// Per output port, the global input index (`seq * flows + flow`) of
/// each frame of `flow` that left by it.
fn indices_by_port(dir: &std::path::Path, flows: usize) -> [Vec<Vec<usize>>; 2] {
    let mut out: [Vec<Vec<usize>>; 2] = [vec![Vec::new(); flows], vec![Vec::new(); flows]];
    for (port, per_flow) in out.iter_mut().enumerate() {
        for p in pcap::read_all(dir.join(format!("out{port}.pcap"))).unwrap() {
            let s = gen::test_payload(&p.data).expect("stamped");
            per_flow[s.flow_id as usize].push(s.seq as usize * flows + s.flow_id as usize);
        }
    }
    out
}

/// The done-when case of a live route change: started with `--routes`
/// and no `--config`, a SIGHUP reads the changed file while port 0
/// replays at a steady rate; the moved prefix's frames leave by port 0 up
/// to one point and by port 1 after it, the added prefix's likewise (it
/// was covered by the /8 before), the rest by port 0 throughout; every
/// frame exactly once, in order, nothing dropped.
#[test]
fn sighup_moves_a_prefix_under_traffic() {
    let _g = serial();
    let dir = scratch("routes-reload");
    let file = dir.join("routes.txt");
    std::fs::write(&file, "R10.0.0.0/8 0\nR10.1.0.0/16 0\n").unwrap();
    let frames = reload_frames(60_000);
    let f = file.display().to_string();
    let mut p = start_routed(&dir, &frames, &["--routes", &f]);
    // Two stats lines (0.5 s apart): about 1 s of frames by the old table.
    stats_lines(&mut p, 2);
    std::fs::write(
        &file,
        "R10.0.0.0/8 0\nR10.1.0.0/16 1\nroute 10.2.0.0/16 via b\nnexthop b port 1 mac 02:bb:00:00:00:02\n",
    )
    .unwrap();
    p.signal("HUP");
    p.wait_until("the reload", Duration::from_secs(10), |t| {
        t.contains("1 added, 0 removed, 1 changed")
    })
    .unwrap();
    let j = clean_exit_json(&mut p, &dir, Duration::from_secs(30));
    let text = p.text();
    assert_eq!(
        j["rx_packets"].as_u64().unwrap(),
        frames.len() as u64,
        "{text}"
    );
    assert_eq!(j["drops_total"], 0, "{text}");
    assert_eq!(j["rx_packets"], j["tx_packets"], "{text}");
    let by_port = indices_by_port(&dir, RELOAD_FLOWS);
    let per_flow = frames.len() / RELOAD_FLOWS;
    for (flow, (a, b)) in by_port[0].iter().zip(&by_port[1]).enumerate() {
        assert_eq!(a.len() + b.len(), per_flow, "flow {flow}: every frame once");
        assert!(
            a.windows(2).all(|w| w[0] < w[1]),
            "flow {flow} reordered on port 0"
        );
        assert!(
            b.windows(2).all(|w| w[0] < w[1]),
            "flow {flow} reordered on port 1"
        );
        if flow / 4 == 2 {
            assert!(
                b.is_empty(),
                "unchanged prefix, flow {flow}, left by port 1"
            );
        } else {
            // Moved (10.1/16) or added (10.2/16): port 0, then port 1.
            assert!(
                !a.is_empty() && !b.is_empty(),
                "flow {flow}: {} then {}\n{text}",
                a.len(),
                b.len()
            );
            assert!(
                a.last() < b.first(),
                "flow {flow}: port 1 before the change"
            );
        }
    }
    // Port 1's frames carry their next hop's MAC: the moved prefix port
    // 1's peer, the added one next hop b's.
    for p in pcap::read_all(dir.join("out1.pcap")).unwrap() {
        let s = gen::test_payload(&p.data).unwrap();
        let want = if s.flow_id / 4 == 0 {
            [2, 0, 0, 0, 0, 1]
        } else {
            [2, 0xbb, 0, 0, 0, 2]
        };
        assert_eq!(&p.data[0..6], &want, "dst MAC of {s:?}");
    }
}

/// A reload whose route file has a bad line is refused whole (the peer
/// MAC changed beside it is not applied either), with one line naming
/// the file and line, and the running table stays; so is a reload that
/// removes `routes` (L3 to L2).
#[test]
fn sighup_refuses_a_bad_route_file_and_a_mode_change() {
    let _g = serial();
    let dir = scratch("routes-reload-refused");
    let file = dir.join("routes.txt");
    std::fs::write(&file, "R10.0.0.0/8 1\n").unwrap();
    let conf = dir.join("conf.toml");
    let conf_text = |peer: &str, routes: bool| {
        let r = if routes {
            format!("routes = \"{}\"\n", file.display())
        } else {
            String::new()
        };
        format!("peer-mac = [\"1={peer}\"]\n{r}")
    };
    std::fs::write(&conf, conf_text("02:aa:00:00:00:01", true)).unwrap();
    let frames = reload_frames(40_000);
    let c = conf.display().to_string();
    let mut p = start_routed(&dir, &frames, &["--config", &c]);
    stats_lines(&mut p, 1);
    std::fs::write(&file, "R10.0.0.0/8 1\nR10.1.0.0/15 0\n").unwrap();
    std::fs::write(&conf, conf_text("02:bb:00:00:00:02", true)).unwrap();
    p.signal("HUP");
    p.wait_until("the refusal", Duration::from_secs(10), |t| {
        t.lines()
            .any(|l| l.contains("refused") && l.contains("routes.txt:2"))
    })
    .unwrap();
    std::fs::write(&conf, conf_text("02:aa:00:00:00:01", false)).unwrap();
    p.signal("HUP");
    p.wait_until("the mode change refused", Duration::from_secs(10), |t| {
        t.lines()
            .any(|l| l.contains("refused") && l.contains("'routes' cannot be removed"))
    })
    .unwrap();
    let j = clean_exit_json(&mut p, &dir, Duration::from_secs(40));
    let text = p.text();
    assert_eq!(j["drops_total"], 0, "{text}");
    assert_eq!(
        j["tx_packets"].as_u64().unwrap(),
        frames.len() as u64,
        "{text}"
    );
    // Everything by the running table: port 1, the first peer MAC.
    let out1 = pcap::read_all(dir.join("out1.pcap")).unwrap();
    assert_eq!(out1.len(), frames.len(), "{text}");
    for p in &out1 {
        assert_eq!(&p.data[0..6], &[2, 0xaa, 0, 0, 0, 1]);
    }
}

/// The scale of the L3 mode: 1,000,000 IPv4 routes (/16 to /24, and
/// /25 to /32 in a range of their own) and 200,000 IPv6 routes (/32,
/// /40 and /48), in l3fwd's form, load (the start line gives each
/// table's routes, memory and build time) and forward: a frame to each of
/// 64 IPv4 /24s and 64 IPv6 /48s leaves by that route's port.
#[test]
fn a_million_routes_load_and_forward() {
    let _g = serial();
    let dir = scratch("routes-scale");
    let mut rng = XorShift::new(0x1e6);
    let mut text = String::with_capacity(40 << 20);
    let mut v4_24 = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // 980,000 /24s outside 100.64.0.0/10, 20,000 longer prefixes inside.
    while seen.len() < 980_000 {
        let a = (rng.next_u64() as u32) & 0xffff_ff00;
        let first = a >> 24;
        if (a >> 22) == (100 << 2 | 1)
            || first == 0
            || first == 127
            || first >= 224
            || !seen.insert(a)
        {
            continue;
        }
        let port = (rng.next_u64() & 1) as u8;
        text.push_str(&format!("R{}/24 {port}\n", std::net::Ipv4Addr::from(a)));
        if v4_24.len() < 64 {
            v4_24.push((a, port));
        }
    }
    let mut long = std::collections::HashSet::new();
    while long.len() < 20_000 {
        let len = 25 + (rng.next_u64() % 8) as u32;
        let a = (100 << 24 | 64 << 16) | ((rng.next_u64() as u32) & 0x003f_ffff);
        let a = a & (u32::MAX << (32 - len));
        if long.insert((a, len)) {
            text.push_str(&format!("R{}/{len} 1\n", std::net::Ipv4Addr::from(a)));
        }
    }
    let mut v6_48 = Vec::new();
    let mut seen6 = std::collections::HashSet::new();
    while seen6.len() < 200_000 {
        let r = rng.next_u64();
        let (net, len) = match r % 10 {
            // /48s under 2400::/12, /32s and /40s under 2a00::/12.
            0..=4 => (
                (0x2400u128 << 112) | (u128::from(r >> 16 & 0xf_ffff_ffff) << 80),
                48,
            ),
            5..=6 => (
                (0x2a00u128 << 112) | (u128::from(r >> 40 & 0xfffff) << 96),
                32,
            ),
            _ => (
                (0x2a00u128 << 112) | (u128::from(r >> 28 & 0xfff_ffff) << 88),
                40,
            ),
        };
        if !seen6.insert((net, len)) {
            continue;
        }
        let port = ((r >> 8) & 1) as u8;
        text.push_str(&format!(
            "R{}/{len} {port}\n",
            std::net::Ipv6Addr::from(net)
        ));
        if len == 48 && v6_48.len() < 64 {
            v6_48.push((net, port));
        }
    }
    let file = dir.join("routes.txt");
    std::fs::write(&file, &text).unwrap();
    let mut frames = Vec::new();
    let mut want = HashMap::new();
    for (i, (a, port)) in v4_24.iter().enumerate() {
        let dst = IpAddr::V4((a | 7).into());
        frames.push(gen::routed_udp_frame(
            "192.0.2.1".parse().unwrap(),
            dst,
            64,
            i as u32,
            0,
            64,
        ));
        want.insert(i as u32, *port);
    }
    for (i, (net, port)) in v6_48.iter().enumerate() {
        let dst = IpAddr::V6((net | 9).into());
        let id = 1000 + i as u32;
        frames.push(gen::routed_udp_frame(
            "2001:db8::1".parse().unwrap(),
            dst,
            64,
            id,
            0,
            80,
        ));
        want.insert(id, *port);
    }
    let vdevs = one_way_pcap_ports(&dir, &frames);
    let mut eal = eal_args("0-1", &vdevs);
    // The tables need more memory than the suite's other runs.
    let at = eal.iter().position(|a| a == "-m").unwrap();
    eal.splice(at - 1..at + 2, mem_args_mb(2560));
    let f = file.display().to_string();
    let run = run_tqfwd(
        &dir,
        &eal,
        &[
            "--routes",
            &f,
            "--debug-exit-when-idle",
            "500",
            "--duration",
            "60",
            "--stats-interval",
            "0",
        ],
        Duration::from_secs(240),
    );
    assert_clean_end(&run);
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("routes ") && l.contains("built in"))
        .unwrap_or_else(|| panic!("no start line: {}", run.describe()));
    assert!(
        line.contains("IPv4: 1000000 routes") && line.contains("IPv6: 200000 routes"),
        "{line}"
    );
    eprintln!("{line}");
    let j = run.json();
    assert_eq!(
        j["tx_packets"].as_u64().unwrap(),
        frames.len() as u64,
        "{}",
        run.describe()
    );
    for port in 0..2u8 {
        for p in pcap::read_all(dir.join(format!("out{port}.pcap"))).unwrap() {
            let s = gen::test_payload(&p.data).unwrap();
            assert_eq!(want[&s.flow_id], port, "frame {s:?}");
            assert_eq!(&p.data[0..6], &[2, 0, 0, 0, 0, port]);
        }
    }
}
