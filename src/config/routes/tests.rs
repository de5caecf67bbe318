use super::*;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

const FILE: &str = "dir/routes.txt";

/// DPDK 22.11's examples/l3fwd/lpm_default_v4.cfg, as shipped.
const L3FWD_V4: &str = "# Copy of hard-coded IPv4 FWD table for L3FWD LPM
R198.18.0.0/24 0
R198.18.1.0/24 1
R198.18.2.0/24 2
R198.18.3.0/24 3
R198.18.4.0/24 4
R198.18.5.0/24 5
R198.18.6.0/24 6
R198.18.7.0/24 7
R198.18.8.0/24 8
R198.18.9.0/24 9
R198.18.10.0/24 10
R198.18.11.0/24 11
R198.18.12.0/24 12
R198.18.13.0/24 13
R198.18.14.0/24 14
R198.18.15.0/24 15
";

/// DPDK 22.11's examples/l3fwd/lpm_default_v6.cfg, as shipped.
const L3FWD_V6: &str = "# Copy of hard-coded IPv6 FWD table for L3FWD LPM
R2001:0200:0000:0000:0000:0000:0000:0000/64 0
R2001:0200:0000:0001:0000:0000:0000:0000/64 1
R2001:0200:0000:0002:0000:0000:0000:0000/64 2
R2001:0200:0000:0003:0000:0000:0000:0000/64 3
R2001:0200:0000:0004:0000:0000:0000:0000/64 4
R2001:0200:0000:0005:0000:0000:0000:0000/64 5
R2001:0200:0000:0006:0000:0000:0000:0000/64 6
R2001:0200:0000:0007:0000:0000:0000:0000/64 7
R2001:0200:0000:0008:0000:0000:0000:0000/64 8
R2001:0200:0000:0009:0000:0000:0000:0000/64 9
R2001:0200:0000:000A:0000:0000:0000:0000/64 10
R2001:0200:0000:000B:0000:0000:0000:0000/64 11
R2001:0200:0000:000C:0000:0000:0000:0000/64 12
R2001:0200:0000:000D:0000:0000:0000:0000/64 13
R2001:0200:0000:000E:0000:0000:0000:0000/64 14
R2001:0200:0000:000F:0000:0000:0000:0000/64 15
";

fn ok_with(text: &str, n_ports: usize) -> RouteTable {
    parse(text, FILE, n_ports, Limits::default()).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn ok(text: &str) -> RouteTable {
    ok_with(text, 4)
}

fn err_with(text: &str, n_ports: usize, limits: Limits) -> RouteError {
    match parse(text, FILE, n_ports, limits) {
        Ok(t) => panic!("{text:?} parsed: {t:?}"),
        Err(e) => e,
    }
}

fn err(text: &str) -> RouteError {
    err_with(text, 4, Limits::default())
}

/// Checks that `e` is the variant named `variant`, that its message is
/// one line, starts `FILE:line: ` (and that `line()` says so) and holds
/// each of `needles`; returns the message.
fn says(e: &RouteError, variant: &str, line: u32, needles: &[&str]) -> String {
    assert!(
        format!("{e:?}").starts_with(&format!("{variant} {{")),
        "not {variant}: {e:?}"
    );
    let m = e.to_string();
    assert!(m.starts_with(&format!("{FILE}:{line}: ")), "{m}");
    assert_eq!(e.line(), Some((FILE.to_string(), line)), "{m}");
    assert!(!m.contains('\n'), "{m}");
    for n in needles {
        assert!(m.contains(n), "{m:?} lacks {n:?}");
    }
    m
}

/// [`says`], and the message is exactly `FILE:line: ` and `rest`.
fn says_exactly(e: &RouteError, variant: &str, line: u32, rest: &str) {
    let m = says(e, variant, line, &[]);
    assert_eq!(m, format!("{FILE}:{line}: {rest}"));
}

fn ip4(s: &str) -> u32 {
    u32::from(s.parse::<Ipv4Addr>().unwrap())
}

fn ip6(s: &str) -> [u8; 16] {
    s.parse::<Ipv6Addr>().unwrap().octets()
}

fn hop(t: &RouteTable, i: u16) -> &NextHop {
    &t.next_hops[usize::from(i)]
}

fn port_hop(p: u16) -> NextHop {
    NextHop {
        name: format!("port {p}"),
        port: p,
        mac: None,
    }
}

fn mac(s: &str) -> Option<MacAddr> {
    Some(s.parse().unwrap())
}

// ------------------------------------------------------------ accepted

#[test]
fn l3fwd_default_files_concatenated_parse() {
    for text in [
        format!("{L3FWD_V4}{L3FWD_V6}"),
        format!("{L3FWD_V6}{L3FWD_V4}"),
    ] {
        let t = ok_with(&text, 16);
        assert_eq!(
            (t.v4.len(), t.v6.len(), t.len_v4(), t.len_v6()),
            (16, 16, 16, 16)
        );
        assert_eq!((t.default_v4, t.default_v6), (None, None));
        // One "port P" next hop per port, shared by both families.
        assert_eq!(t.next_hops.len(), 16);
        for (i, r) in t.v4.iter().enumerate() {
            assert_eq!((r.addr, r.len), (ip4(&format!("198.18.{i}.0")), 24));
            assert_eq!(*hop(&t, r.next_hop), port_hop(i as u16));
        }
        for (i, r) in t.v6.iter().enumerate() {
            assert_eq!((r.addr, r.len), (ip6(&format!("2001:200:0:{i:x}::")), 64));
            assert_eq!(*hop(&t, r.next_hop), port_hop(i as u16));
        }
    }
    let t = ok_with(L3FWD_V4, 16);
    assert_eq!((t.v4[0].line, t.v4[15].line), (2, 17));
    assert_eq!(t.source, FILE);
}

#[test]
fn l3fwd_lines_as_l3fwd_reads_them() {
    // Each line is 198.18.0.0/24 to port 1.
    for line in [
        "R198.18.0.0/24 1",
        "R198.18.0.0/24\t1",
        "R 198.18.0.0/24 1",
        "R\t198.18.0.0/24   \t 1",
        "R198.18.0.0/24 1   ",
        // l3fwd's strtoul(.., 0): hex, octal, a sign.
        "R198.18.0.0/0x18 1",
        "R198.18.0.0/0X18 0x1",
        "R198.18.0.0/030 01",
        "R198.18.0.0/+24 +1",
        "R198.18.0.0/24 -0x0",
        // What l3fwd refuses and tqfwd takes.
        "  R198.18.0.0/24 1",
        "R198.18.0.0/24 1\r",
        "R198.18.0.0/24 1 # to the peer of port 1",
        "R198.18.0.0/24 1#no space",
    ] {
        let t = ok(line);
        let r = t.v4[0];
        let want = if line.contains("-0x0") { 0 } else { 1 };
        assert_eq!(
            (r.addr, r.len, r.line),
            (ip4("198.18.0.0"), 24, 1),
            "{line:?}"
        );
        assert_eq!(*hop(&t, r.next_hop), port_hop(want), "{line:?}");
    }
    let t = ok("R2001:DB8::/0x20 3\nR2001:db8:1::/060 2\n");
    assert_eq!((t.v6[0].addr, t.v6[0].len), (ip6("2001:db8::"), 32));
    assert_eq!((t.v6[1].addr, t.v6[1].len), (ip6("2001:db8:1::"), 48));
    assert_eq!(t.next_hops, [port_hop(3), port_hop(2)]);
}

#[test]
fn c_number_is_strtoul_base_0() {
    for (s, want) in [
        ("0", Some(0)),
        ("24", Some(24)),
        ("0x18", Some(24)),
        ("0XfF", Some(255)),
        ("030", Some(24)),
        ("00", Some(0)),
        ("+7", Some(7)),
        ("-0", Some(0)),
        ("-1", Some(u64::MAX)),
        ("18446744073709551615", Some(u64::MAX)),
        ("18446744073709551616", None),
        ("08", None),
        ("0x", None),
        ("0xg", None),
        ("24/5", None),
        ("", None),
        ("+", None),
        ("+-1", None),
        ("1e3", None),
    ] {
        assert_eq!(c_number(s), want, "{s:?}");
    }
    assert_eq!(decimal("24"), Some(24));
    assert_eq!(decimal("0"), Some(0));
    for s in ["024", "0x18", "+1", "-0", "", "2 4"] {
        assert_eq!(decimal(s), None, "{s:?}");
    }
}

#[test]
fn named_next_hops_and_forward_references() {
    let t = ok("
route 10.0.0.0/8 via gw2
nexthop gw1 port 0 mac 02:00:00:00:00:01
route 10.1.0.0/16 via gw1
  nexthop\tgw2 port 3 mac AA-BB-CC-DD-EE-FF   # dash form
route 2001:db8::/32 via gw2
route 10.2.0.0/16 via gw2
nexthop unused port 1 mac 02:00:00:00:00:09
R10.3.0.0/16 3
");
    assert_eq!(
        t.next_hops,
        [
            NextHop {
                name: "gw2".into(),
                port: 3,
                mac: mac("aa:bb:cc:dd:ee:ff"),
            },
            NextHop {
                name: "gw1".into(),
                port: 0,
                mac: mac("02:00:00:00:00:01"),
            },
            NextHop {
                name: "unused".into(),
                port: 1,
                mac: mac("02:00:00:00:00:09"),
            },
            port_hop(3),
        ]
    );
    let v4: Vec<_> =
        t.v4.iter()
            .map(|r| (r.addr, r.len, r.next_hop, r.line))
            .collect();
    assert_eq!(
        v4,
        [
            (ip4("10.0.0.0"), 8, 0, 2),
            (ip4("10.1.0.0"), 16, 1, 4),
            (ip4("10.2.0.0"), 16, 0, 7),
            (ip4("10.3.0.0"), 16, 3, 9),
        ]
    );
    assert_eq!(
        t.v6,
        [Route {
            addr: ip6("2001:db8::"),
            len: 32,
            next_hop: 0,
            line: 6
        }]
    );
    // Names: letters, digits, _ - .
    let t = ok("nexthop Gw_1-a.b port 0 mac 02:00:00:00:00:01\nroute 1.0.0.0/8 via Gw_1-a.b\n");
    assert_eq!(t.next_hops[0].name, "Gw_1-a.b");
}

#[test]
fn default_routes_in_both_forms() {
    let t = ok("R0.0.0.0/0 2\nroute ::/0 via gw\nnexthop gw port 1 mac 02:00:00:00:00:01\n");
    assert!(t.v4.is_empty() && t.v6.is_empty());
    assert_eq!(*hop(&t, t.default_v4.unwrap()), port_hop(2));
    assert_eq!(hop(&t, t.default_v6.unwrap()).name, "gw");
    assert_eq!((t.len_v4(), t.len_v6()), (1, 1));
    let t = ok("route 0.0.0.0/0 via gw\nR::/0x0 0\nnexthop gw port 1 mac 02:00:00:00:00:01\n");
    assert_eq!(hop(&t, t.default_v4.unwrap()).name, "gw");
    assert_eq!(*hop(&t, t.default_v6.unwrap()), port_hop(0));
    // The longest prefixes.
    let t = ok("R1.2.3.4/32 0\nR2001:db8::1/128 0\n");
    assert_eq!((t.v4[0].len, t.v6[0].len), (32, 128));
}

#[test]
fn comments_blank_lines_and_empty_files() {
    let t = ok(
        "# a comment\n\n   \n\t# indented comment\n \x0b\x0c\r\n#R10.0.0.0/8 9\nR10.0.0.0/8 1 #\n#",
    );
    assert_eq!(t.v4.len(), 1);
    assert_eq!(t.v4[0].line, 7);
    for empty in ["", "\n", "# nothing\n", "\r\n\r\n"] {
        let t = ok(empty);
        assert_eq!((t.len_v4(), t.len_v6(), t.next_hops.len()), (0, 0, 0));
    }
    // The same address in both families' spellings is two routes.
    let t = ok("R10.0.0.0/8 0\nR::ffff:10.0.0.0/104 0\nR::a00:0/104 0\n");
    assert_eq!((t.v4.len(), t.v6.len()), (1, 2));
}

// ------------------------------------------------------------ refused

#[test]
fn malformed_lines() {
    for (text, line, needles) in [
        ("\nroute\n", 2, &["a route is route <prefix> via <name>"][..]),
        ("rout 10.0.0.0/8 via gw", 1, &["'rout' starts no statement", "R<prefix> <port>", "nexthop <name> port <port> mac <MAC>"]),
        ("r10.0.0.0/8 0", 1, &["'r10.0.0.0/8' starts no statement"]),
        ("10.0.0.0/8 0", 1, &["'10.0.0.0/8' starts no statement"]),
        ("R", 1, &["an l3fwd route needs a prefix and a port; write R<prefix> <port>"]),
        ("R10.0.0.0/8", 1, &["needs a prefix and a port"]),
        ("R10.0.0.0/8 # 1", 1, &["needs a prefix and a port"]),
        ("R10.0.0.0/8 1 2", 1, &["'2' after the port (l3fwd ignores it); remove it or start it with #"]),
        ("R10.0.0.0/8 x", 1, &["port 'x' is not a number; write the output port's number"]),
        ("R10.0.0.0/8 1\x00", 1, &["port '1\\0' is not a number"]),
        ("R10.0.0.0/8 08", 1, &["port '08' is not a number"]),
        ("route 10.0.0.0/8 gw", 1, &["a route is route <prefix> via <name>, e.g. route 198.18.0.0/24 via gw1"]),
        ("route 10.0.0.0/8 to gw", 1, &["a route is route"]),
        ("route 10.0.0.0/8 via gw extra", 1, &["a route is route"]),
        ("route 10.0.0.0/8 via g/w", 1, &["'g/w' is no next hop name; use letters, digits, '_', '-' and '.'"]),
        ("route 10.0.0.0/8 via gé", 1, &["'gé' is no next hop name"]),
        ("nexthop gw port 0", 1, &["a next hop is nexthop <name> port <port> mac <MAC>, e.g. nexthop gw1 port 0 mac 02:00:00:00:00:01"]),
        ("nexthop gw mac 02:00:00:00:00:01 port 0", 1, &["a next hop is nexthop"]),
        ("nexthop gw port 0 mac 02:00:00:00:00:01 x", 1, &["a next hop is nexthop"]),
        ("nexthop g,w port 0 mac 02:00:00:00:00:01", 1, &["'g,w' is no next hop name"]),
        ("nexthop gw port 0x1 mac 02:00:00:00:00:01", 1, &["port '0x1' is not a number"]),
        ("nexthop gw port 01 mac 02:00:00:00:00:01", 1, &["port '01' is not a number"]),
        ("Route 10.0.0.0/8 via gw", 1, &["'Route' starts no statement"]),
        ("Rule 10.0.0.0/8 0", 1, &["'Rule' starts no statement"]),
    ] {
        let e = err(text);
        says(&e, "Malformed", line, needles);
    }
    // A long or odd field is shown escaped and cut.
    let long = format!("x{}\u{1b}", "y".repeat(100));
    let m = says(&err(&long), "Malformed", 1, &["...' starts no statement"]);
    assert!(!m.contains('\u{1b}') && m.len() < 300, "{m}");
    let m = says(
        &err("bad\u{2028}word 1"),
        "Malformed",
        1,
        &["starts no statement"],
    );
    assert!(!m.contains('\u{2028}'), "{m}");
}

#[test]
fn bad_prefixes() {
    for (text, needle) in [
        ("R10.0.0.0 0", "bad prefix '10.0.0.0': no /length"),
        ("R10.0.0/8 0", "'10.0.0' is not an IPv4 or IPv6 address"),
        (
            "R010.0.0.0/8 0",
            "'010.0.0.0' is not an IPv4 or IPv6 address",
        ),
        ("R256.0.0.0/8 0", "is not an IPv4 or IPv6 address"),
        ("R/8 0", "'' is not an IPv4 or IPv6 address"),
        (
            "R2001:db8::g/32 0",
            "'2001:db8::g' is not an IPv4 or IPv6 address",
        ),
        ("R2001:db8::/ 0", "the length '' is not a number"),
        (
            "R10.0.0.0/33 0",
            "an IPv4 prefix is at most 32 bits long, not 33",
        ),
        ("R10.0.0.0/0x21 0", "at most 32 bits long, not 33"),
        (
            "R::/129 0",
            "an IPv6 prefix is at most 128 bits long, not 129",
        ),
        ("R10.0.0.0/8/9 0", "the length '8/9' is not a number"),
        ("R10.0.0.0//8 0", "the length '/8' is not a number"),
        (
            "R10.0.0.0/-8 0",
            "at most 32 bits long, not 18446744073709551608",
        ),
        (
            "route 10.0.0.0/08 via gw",
            "the length '08' is not a number",
        ),
        (
            "route 10.0.0.0/0x8 via gw",
            "the length '0x8' is not a number",
        ),
        (
            "route fe80::1%eth0/64 via gw",
            "'fe80::1%eth0' is not an IPv4 or IPv6 address",
        ),
    ] {
        let e = err(&format!("# first\n{text}\n"));
        let advice = "; write ADDRESS/LENGTH, e.g. 198.18.0.0/24 or 2001:db8::/32";
        says(&e, "BadPrefix", 2, &[needle, advice]);
    }
}

#[test]
fn host_bits_say_the_prefix_to_write() {
    for (text, want) in [
        (
            "R198.18.0.1/24 0",
            "198.18.0.1/24 has host bits set; write 198.18.0.0/24",
        ),
        (
            "R198.18.1.0/0x10 0",
            "198.18.1.0/0x10 has host bits set; write 198.18.0.0/16",
        ),
        (
            "route 10.0.0.0/0 via gw",
            "10.0.0.0/0 has host bits set; write 0.0.0.0/0",
        ),
        (
            "R2001:db8::1/64 0",
            "2001:db8::1/64 has host bits set; write 2001:db8::/64",
        ),
        (
            "R2001:db8:ffff::/33 0",
            "2001:db8:ffff::/33 has host bits set; write 2001:db8:8000::/33",
        ),
        ("R::1/0 0", "::1/0 has host bits set; write ::/0"),
    ] {
        let e = err(&format!("\n\n{text}"));
        says_exactly(&e, "HostBits", 3, want);
    }
}

#[test]
fn duplicate_prefixes_name_the_earlier_line() {
    for (text, line, want) in [
        (
            "R10.0.0.0/8 0\nR10.0.0.0/8 1",
            2,
            "10.0.0.0/8 is already routed on line 1; keep one of the two lines",
        ),
        (
            "R10.0.0.0/8 0\n#\nroute 10.0.0.0/8 via gw",
            3,
            "10.0.0.0/8 is already routed on line 1",
        ),
        (
            "R2001:db8::/32 0\nR2001:0db8:0::/32 0",
            2,
            "2001:db8::/32 is already routed on line 1",
        ),
        (
            "R0.0.0.0/0 0\nroute 0.0.0.0/0 via gw",
            2,
            "0.0.0.0/0 is already routed on line 1",
        ),
        (
            "R::/0 0\n\n\nR::/0 0",
            4,
            "::/0 is already routed on line 1",
        ),
    ] {
        let e = err(&format!(
            "{text}\nnexthop gw port 0 mac 02:00:00:00:00:01\n"
        ));
        says(
            &e,
            "Duplicate",
            line,
            &[want, "; keep one of the two lines"],
        );
    }
    // Found at the end, reported in line order with the other errors.
    for (text, variant, line) in [
        ("R10.0.0.0/8 0\nR10.0.0.0/8 0\nbogus\n", "Duplicate", 2),
        ("R10.0.0.0/8 0\nbogus\nR10.0.0.0/8 0\n", "Malformed", 2),
        (
            "R10.0.0.0/8 0\nR::/0 0\nR10.0.0.0/8 0\nR::/0 0\n",
            "Duplicate",
            3,
        ),
        (
            "R10.0.0.0/8 0\nR::/0 0\nR::/0 0\nR10.0.0.0/8 0\n",
            "Duplicate",
            3,
        ),
        (
            "R::/64 0\nR::/64 0\nR10.0.0.0/8 0\nR10.0.0.0/8 0\n",
            "Duplicate",
            2,
        ),
        (
            "R10.0.0.0/8 0\nroute ::/0 via nope\nR10.0.0.0/8 0\n",
            "UnknownNextHop",
            2,
        ),
        (
            "R10.0.0.0/8 0\nR10.0.0.0/8 0\nroute ::/0 via nope\n",
            "Duplicate",
            2,
        ),
        (
            "R10.0.0.0/8 0\nR10.0.0.0/8 0\nR10.0.0.0/8 0\n",
            "Duplicate",
            2,
        ),
    ] {
        says(&err(text), variant, line, &[]);
    }
    // Same address, other length: two routes.
    assert_eq!(ok("R10.0.0.0/8 0\nR10.0.0.0/16 0\n").v4.len(), 2);
}

#[test]
fn unknown_ports_say_the_ports_of_the_run() {
    for (text, n_ports, needles) in [
        ("R10.0.0.0/8 2", 2, &["port 2 is not a port of this run, which has ports 0-1; use one of those or remove the line (l3fwd skips such routes"][..]),
        ("R10.0.0.0/8 1", 1, &["port 1 is not a port of this run, which has port 0;"]),
        ("R10.0.0.0/8 0", 0, &["port 0 is not a port of this run, which has no ports;"]),
        ("R10.0.0.0/8 -1", 4, &["port 18446744073709551615 is not a port"]),
        ("R10.0.0.0/8 65536", 100_000, &["port 65536 is not a port of this run, which has ports 0-99999"]),
        ("nexthop gw port 4 mac 02:00:00:00:00:01", 4, &["port 4 is not a port of this run, which has ports 0-3"]),
    ] {
        let e = err_with(text, n_ports, Limits::default());
        says(&e, "UnknownPort", 1, needles);
    }
}

#[test]
fn unknown_next_hop_is_named_at_its_first_use() {
    let e = err("R10.0.0.0/8 0\nroute 10.1.0.0/16 via gw\nroute 10.2.0.0/16 via nope\nroute 10.3.0.0/16 via gw\nroute 10.4.0.0/16 via nope\nnexthop gw port 0 mac 02:00:00:00:00:01\n");
    let want = "next hop 'nope' is not defined; add a line `nexthop nope port <port> mac <MAC>` or fix the name";
    says_exactly(&e, "UnknownNextHop", 3, want);
    // A later syntax error is found first: the file is read to its end
    // before names are checked.
    says(
        &err("route 10.2.0.0/16 via nope\nbogus\n"),
        "Malformed",
        2,
        &["'bogus' starts no statement"],
    );
}

#[test]
fn next_hop_defined_twice() {
    let e = err("nexthop gw port 0 mac 02:00:00:00:00:01\nroute 10.0.0.0/8 via gw\nnexthop gw port 1 mac 02:00:00:00:00:02\n");
    let want = "next hop 'gw' is already defined on line 1; remove one definition or rename it";
    says_exactly(&e, "NextHopTwice", 3, want);
    // Used first, then defined twice.
    let e = err("route 10.0.0.0/8 via gw\nnexthop gw port 0 mac 02:00:00:00:00:01\nnexthop gw port 0 mac 02:00:00:00:00:01\n");
    says(&e, "NextHopTwice", 3, &["already defined on line 2"]);
}

#[test]
fn bad_mac() {
    for m in [
        "02:00:00:00:00",
        "02:00:00:00:00:zz",
        "02:00:00:00:00:01:02",
        "2:0:0:0:0:1",
    ] {
        let e = err(&format!("\nnexthop gw port 0 mac {m}\n"));
        says(
            &e,
            "BadMac",
            2,
            &[&format!(
                "invalid MAC address '{m}': expected six two-digit hex octets"
            )],
        );
    }
}

#[test]
fn too_many_routes_names_the_limit_and_the_option() {
    let limits = Limits { max_routes: 2 };
    for (text, line, family) in [
        ("R10.0.0.0/8 0\nR11.0.0.0/8 0\nR::/0 0\nR0.0.0.0/0 0\nR2001:db8::/32 0\nR12.0.0.0/8 0\n", 6, "IPv4"),
        ("R2001:db8::/32 0\nR10.0.0.0/8 0\nR2001:db9::/32 0\nR2001:dba::/32 0\n", 4, "IPv6"),
    ] {
        let e = err_with(text, 1, limits);
        let want =
            format!("more than 2 {family} routes; that is the limit, --max-routes raises it");
        says_exactly(&e, "TooManyRoutes", line, &want);
    }
    // The limit itself, default routes aside, is fine; a duplicate past the
    // limit is reported as the duplicate.
    let t = parse(
        "R10.0.0.0/8 0\nR0.0.0.0/0 0\nR11.0.0.0/8 0\n",
        FILE,
        1,
        limits,
    )
    .unwrap();
    assert_eq!(t.len_v4(), 3);
    let e = err_with("R10.0.0.0/8 0\nR11.0.0.0/8 0\nR10.0.0.0/8 0\n", 1, limits);
    says(
        &e,
        "Duplicate",
        3,
        &["10.0.0.0/8 is already routed on line 1"],
    );
    let e = err_with("R10.0.0.0/8 0\n", 1, Limits { max_routes: 0 });
    says(&e, "TooManyRoutes", 1, &["more than 0 IPv4 routes"]);
}

#[test]
fn too_many_next_hops() {
    let mut text = String::new();
    for i in 0..MAX_NEXT_HOPS {
        writeln!(text, "nexthop n{i} port 0 mac 02:00:00:00:00:01").unwrap();
    }
    let t = ok(&text);
    assert_eq!(t.next_hops.len(), MAX_NEXT_HOPS);
    // One more, of either form.
    for extra in ["route 10.0.0.0/8 via more", "R10.0.0.0/8 1"] {
        let e = err(&format!("{text}{extra}\n"));
        let want =
            "more than 32000 next hops, the most a table holds; share next hops between routes";
        says_exactly(&e, "TooManyNextHops", 32001, want);
    }
}

#[test]
fn file_errors() {
    let dir = std::env::temp_dir().join(format!("tqfwd-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.txt");
    std::fs::write(&good, format!("{L3FWD_V4}{L3FWD_V6}")).unwrap();
    let t = load(&good, 16, Limits::default()).unwrap();
    assert_eq!((t.len_v4(), t.len_v6()), (16, 16));
    assert_eq!(t.source, good.to_string_lossy());
    // A line's error names the file as given.
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "R10.0.0.0/8 0\nR10.0.0.1/8 0\n").unwrap();
    let e = load(&bad, 1, Limits::default()).unwrap_err();
    assert_eq!(e.line(), Some((bad.to_string_lossy().into_owned(), 2)));

    let latin1 = dir.join("latin1.txt");
    std::fs::write(&latin1, b"R10.0.0.0/8 0\n# caf\xe9\nR11.0.0.0/8 0\n").unwrap();
    let big = dir.join("big.txt");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(ROUTES_MAX_BYTES + 1)
        .unwrap();
    let at_limit = dir.join("at-limit.txt");
    std::fs::File::create(&at_limit)
        .unwrap()
        .set_len(ROUTES_MAX_BYTES)
        .unwrap();
    // Sparse: NUL bytes, which are UTF-8 and no statement.
    let e = load(&at_limit, 1, Limits::default()).unwrap_err();
    assert!(matches!(e, RouteError::Malformed { line: 1, .. }), "{e}");
    let path = |p: &Path| p.to_string_lossy().into_owned();
    for (p, want) in [
        (
            latin1.clone(),
            format!("{}:2: not UTF-8 text; a route file is ASCII text: fix that line", path(&latin1)),
        ),
        (
            big.clone(),
            format!("{} is larger than the limit of 64 MiB for a route file; check the path, or drop comments and unused lines", path(&big)),
        ),
        (
            "/dev/zero".into(),
            "/dev/zero is a character device, not a regular file; give a route file".into(),
        ),
        (dir.clone(), format!("{} is a directory, not a regular file; give a route file", path(&dir))),
    ] {
        let e = load(&p, 1, Limits::default()).unwrap_err();
        assert_eq!(e.to_string(), want);
    }
    let e = load(&dir.join("missing"), 1, Limits::default()).unwrap_err();
    let m = e.to_string();
    assert!(
        matches!(e, RouteError::Unreadable { .. }) && e.line().is_none(),
        "{e:?}"
    );
    assert!(
        m.starts_with(&format!(
            "{}: cannot read the route file: ",
            path(&dir.join("missing"))
        )) && m.ends_with("; check the path and its permissions")
            && !m.contains('\n'),
        "{m}"
    );
    assert!(matches!(
        load(&latin1, 1, Limits::default()).unwrap_err(),
        RouteError::NotUtf8 { line: 2, .. }
    ));
    assert!(matches!(
        load(&big, 1, Limits::default()).unwrap_err(),
        RouteError::TooLarge { .. }
    ));
    std::fs::remove_dir_all(&dir).ok();
}

// ------------------------------------------------------------ diff

/// (added, removed, changed).
fn counts(d: RouteDiff) -> (usize, usize, usize) {
    (d.added, d.removed, d.changed)
}

#[test]
fn diff_counts_added_removed_changed() {
    let old = ok("
nexthop a port 0 mac 02:00:00:00:00:01
nexthop b port 1 mac 02:00:00:00:00:02
route 10.0.0.0/8 via a
route 10.1.0.0/16 via a
route 10.2.0.0/16 via b
R10.3.0.0/16 2
R2001:db8::/32 0
R0.0.0.0/0 0
");
    // Renamed next hop with the same port and MAC: no change; a MAC or a
    // port that differs: a change; from a MAC to the port's peer: a
    // change.
    let new = ok("
nexthop renamed port 0 mac 02:00:00:00:00:01
nexthop b port 1 mac 02:00:00:00:00:03
route 10.0.0.0/8 via renamed
R10.1.0.0/16 0
route 10.2.0.0/16 via b
R10.3.0.0/16 3
R2001:db8::/32 0
R2001:db9::/32 1
R::/0 1
route 10.4.0.0/16 via renamed
");
    assert_eq!(counts(old.diff(&new)), (3, 1, 3));
    assert_eq!(counts(new.diff(&old)), (1, 3, 3));
    assert_eq!(old.diff(&old), RouteDiff::default());
    // A changed default route.
    let a = ok("R0.0.0.0/0 0\nR::/0 0\n");
    let b = ok("R0.0.0.0/0 1\nR::/0 0\n");
    assert_eq!(counts(a.diff(&b)), (0, 0, 1));
    let empty = ok("");
    assert_eq!(counts(empty.diff(&a)), (2, 0, 0));
    assert_eq!(counts(a.diff(&empty)), (0, 2, 0));
    // Same prefixes, other order and other lines: nothing.
    let c = ok("\n\nR::/0 0\nR0.0.0.0/0 0\n");
    assert_eq!(a.diff(&c), RouteDiff::default());
}

// ------------------------------------------------------------ scale

/// 1,000,000 IPv4 routes (half l3fwd's form, half named) and 200,000
/// IPv6: well under 2 s in release. Unoptimised it takes several seconds.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimised; cargo test --release runs it"
)]
fn scale_1m_v4_200k_v6() {
    let mut text = String::with_capacity(40 << 20);
    text.push_str("# generated\nnexthop gw port 1 mac 02:00:00:00:00:01\n");
    for i in 0u32..1_000_000 {
        let a = Ipv4Addr::from((10 << 24) + (i << 8));
        if i % 2 == 0 {
            writeln!(text, "R{a}/24 {}", i % 4).unwrap();
        } else {
            writeln!(text, "route {a}/24 via gw").unwrap();
        }
    }
    for i in 0u32..200_000 {
        writeln!(
            text,
            "R2001:db8:{:x}:{:x}::/64 {}",
            i >> 16,
            i & 0xffff,
            i % 4
        )
        .unwrap();
    }
    text.push_str("R0.0.0.0/0 0\nroute ::/0 via gw\n");
    // The fastest of three: the machine may be busy with other work.
    let mut took = Duration::MAX;
    let mut t = None;
    for _ in 0..3 {
        let start = Instant::now();
        t = Some(parse(&text, "scale", 4, Limits::default()).unwrap());
        took = took.min(start.elapsed());
    }
    let t = t.unwrap();
    let start = Instant::now();
    let d = t.diff(&t);
    let diff_took = start.elapsed();
    eprintln!(
        "parse of {} lines ({} MiB): {took:?}; diff with itself: {diff_took:?}",
        text.lines().count(),
        text.len() >> 20
    );
    assert_eq!(
        (t.v4.len(), t.v6.len(), t.len_v4(), t.len_v6()),
        (1_000_000, 200_000, 1_000_001, 200_001)
    );
    assert_eq!(t.next_hops.len(), 5);
    assert_eq!(t.v4[999_999].addr, ip4("25.66.63.0"));
    assert_eq!(t.v6[199_999].addr, ip6("2001:db8:3:d3f::"));
    assert_eq!(d, RouteDiff::default());
    if !cfg!(debug_assertions) {
        assert!(took < Duration::from_secs(2), "parse took {took:?}");
    }
}
