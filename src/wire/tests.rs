//! Classifier tests: one per rule, every truncation point of valid frames, and
//! a pseudo-random robustness loop.

use super::*;

const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

fn eth(tpids: &[u16], et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&DST);
    f.extend_from_slice(&SRC);
    for (i, tpid) in tpids.iter().enumerate() {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&(100 + i as u16).to_be_bytes());
    }
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn ipv4_full(opt_words: usize, frag: u16, proto: u8, payload: &[u8], src: [u8; 4]) -> Vec<u8> {
    let hl = 20 + 4 * opt_words;
    let mut h = vec![0u8; hl];
    h[0] = 0x40 | (hl / 4) as u8;
    h[2..4].copy_from_slice(&((hl + payload.len()) as u16).to_be_bytes());
    h[6..8].copy_from_slice(&frag.to_be_bytes());
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&[10, 1, 0, 1]);
    let c = checksum::internet_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    ipv4_full(0, 0, proto, payload, [10, 0, 0, 1])
}

fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0x60, 0, 0, 0];
    b.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    b.push(nh);
    b.push(64);
    b.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    b.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    b.extend_from_slice(payload);
    b
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn tcp(sport: u16, dport: u16, opt_words: usize, payload: &[u8]) -> Vec<u8> {
    let hl = 20 + 4 * opt_words;
    let mut t = vec![0u8; hl];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[12] = ((hl / 4) as u8) << 4;
    t[13] = 0x10;
    t.extend_from_slice(payload);
    t
}

fn v4_udp() -> Vec<u8> {
    eth(&[], 0x0800, &ipv4(17, &udp(1024, 9000, &[0xab; 18])))
}

/// parse() plus the invariants every result must satisfy.
fn check(frame: &[u8]) -> FrameInfo {
    let i = parse(frame);
    let n = frame.len();
    assert_eq!(i.flow_hash, flow_hash(frame));
    // The worker's parse: the same but for the hash it does not need.
    assert_eq!(classify_head(frame, n), FrameInfo { flow_hash: 0, ..i });
    assert!(usize::from(i.l3_offset) <= n, "{i:?} len {n}");
    assert!(usize::from(i.l4_offset) <= n, "{i:?} len {n}");
    assert!(i.vlan_tags <= 2);
    assert_eq!(i.class == FrameClass::Runt, n < ETH_HDR_LEN);
    match i.class {
        FrameClass::Udp => {
            assert!(i.l4_offset > i.l3_offset && usize::from(i.l4_offset) + 8 <= n);
        }
        FrameClass::Tcp => {
            assert!(i.l4_offset > i.l3_offset && usize::from(i.l4_offset) + 20 <= n);
        }
        FrameClass::Runt => assert_eq!(i, FrameInfo::RUNT),
        _ => assert_eq!(i.l4_offset, 0),
    }
    if i.class != FrameClass::Runt && i.l3_offset != 0 {
        assert_eq!(usize::from(i.l3_offset), 14 + 4 * usize::from(i.vlan_tags));
    }
    check_heads(frame, &i);
    i
}

/// parse_head over the frame's first `h` bytes, as when the frame is spread
/// over several buffers: equal to `full` whenever the head holds
/// PARSE_HEAD_LEN bytes (except a header beyond it: then other IP), and
/// never a read outside the head whatever its length.
fn check_heads(frame: &[u8], full: &FrameInfo) {
    let n = frame.len();
    let heads = [
        0,
        1,
        13,
        14,
        18,
        20,
        30,
        34,
        40,
        54,
        60,
        64,
        80,
        100,
        PARSE_HEAD_LEN - 1,
        PARSE_HEAD_LEN,
        PARSE_HEAD_LEN + 1,
        n / 2,
        n.saturating_sub(1),
    ];
    for h in heads {
        if h > n {
            continue;
        }
        let j = parse_head(&frame[..h], n);
        if j.class != FrameClass::Runt {
            assert!(n >= ETH_HDR_LEN);
        }
        assert!(usize::from(j.l3_offset) <= h, "{j:?} head {h}");
        match j.class {
            FrameClass::Udp => assert!(usize::from(j.l4_offset) + 8 <= h),
            FrameClass::Tcp => assert!(usize::from(j.l4_offset) + 20 <= h),
            _ => assert_eq!(j.l4_offset, 0),
        }
        if h < PARSE_HEAD_LEN.min(n) {
            continue; // below the contract: any class, no panic
        }
        if j != *full {
            let et = u16::from_be_bytes([frame[12], frame[13]]);
            let l3 = usize::from(j.l3_offset);
            assert!(
                j.class == FrameClass::OtherIp
                    && (et == 0x86dd || is_vlan_tpid(et))
                    && frame[l3] >> 4 == 6,
                "head {h} of {n}: {j:?} != {full:?}"
            );
        }
    }
    // A head that is the frame's first buffer of a longer chain: the same
    // bytes with more behind them never make a valid L4 header invalid.
    let j = parse_head(frame, n + 1000);
    if matches!(full.class, FrameClass::Udp | FrameClass::Tcp) {
        assert_eq!(j.class, full.class, "{frame:02x?}");
    }
}

fn class(frame: &[u8]) -> FrameClass {
    check(frame).class
}

#[test]
fn class_names_and_indices() {
    let names: Vec<_> = FrameClass::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["udp", "tcp", "other_ip", "non_ip", "malformed", "runt"]
    );
    for (i, c) in FrameClass::ALL.iter().enumerate() {
        assert_eq!(c.index(), i);
        assert_eq!(c.to_string(), c.name());
    }
}

#[test]
fn runts() {
    for n in 0..ETH_HDR_LEN {
        let f = vec![0x08u8; n];
        assert_eq!(check(&f), FrameInfo::RUNT);
    }
}

#[test]
fn non_ip() {
    // Exactly 14 bytes, unknown EtherType.
    let f = eth(&[], 0x88b5, &[]);
    assert_eq!(f.len(), 14);
    let i = check(&f);
    assert_eq!(
        (i.class, i.l3_offset, i.l4_offset),
        (FrameClass::NonIp, 14, 0)
    );
    assert_ne!(i.flow_hash, 0);
    // ARP, VLAN-tagged ARP, 802.3 length field, LLDP.
    assert_eq!(class(&eth(&[], 0x0806, &[0; 28])), FrameClass::NonIp);
    let i = check(&eth(&[0x8100], 0x0806, &[0; 28]));
    assert_eq!(
        (i.class, i.vlan_tags, i.l3_offset),
        (FrameClass::NonIp, 1, 18)
    );
    assert_eq!(class(&eth(&[], 0x0040, &[0; 46])), FrameClass::NonIp);
    assert_eq!(class(&eth(&[], 0x88cc, &[0; 46])), FrameClass::NonIp);
    // IPv4 / IPv6 EtherType with nothing after it is not non-IP.
    assert_eq!(class(&eth(&[], 0x0800, &[])), FrameClass::Malformed);
    assert_eq!(class(&eth(&[], 0x86dd, &[])), FrameClass::Malformed);
}

#[test]
fn vlan_tags() {
    let ip = ipv4(17, &udp(1, 2, &[0; 4]));
    for tpid in [0x8100, 0x88a8, 0x9100] {
        let i = check(&eth(&[tpid], 0x0800, &ip));
        assert_eq!((i.class, i.vlan_tags), (FrameClass::Udp, 1));
        assert_eq!((i.l3_offset, i.l4_offset), (18, 38));
    }
    // QinQ
    let i = check(&eth(&[0x88a8, 0x8100], 0x0800, &ip));
    assert_eq!((i.class, i.vlan_tags), (FrameClass::Udp, 2));
    assert_eq!((i.l3_offset, i.l4_offset), (22, 42));
    // Third tag: not walked.
    let i = check(&eth(&[0x88a8, 0x8100, 0x8100], 0x0800, &ip));
    assert_eq!(
        (i.class, i.vlan_tags, i.l3_offset),
        (FrameClass::NonIp, 2, 22)
    );
    // Same flow with and without tags hashes identically (tags are not in
    // the 5-tuple).
    assert_eq!(
        flow_hash(&eth(&[], 0x0800, &ip)),
        flow_hash(&eth(&[0x8100], 0x0800, &ip))
    );
}

#[test]
fn truncated_vlan_is_malformed() {
    let full = eth(&[0x88a8, 0x8100], 0x0800, &ipv4(17, &udp(1, 2, &[])));
    for n in 14..22 {
        let i = check(&full[..n]);
        assert_eq!(i.class, FrameClass::Malformed, "len {n}");
        assert_eq!(i.l3_offset, 0);
        assert_eq!(i.vlan_tags, if n < 18 { 0 } else { 1 });
    }
}

#[test]
fn ipv4_udp_tcp_other() {
    let i = check(&v4_udp());
    assert_eq!(i.class, FrameClass::Udp);
    assert_eq!((i.vlan_tags, i.l3_offset, i.l4_offset), (0, 14, 34));
    let i = check(&eth(&[], 0x0800, &ipv4(6, &tcp(80, 443, 0, &[1, 2, 3]))));
    assert_eq!((i.class, i.l4_offset), (FrameClass::Tcp, 34));
    let i = check(&eth(&[], 0x0800, &ipv4(6, &tcp(80, 443, 10, &[]))));
    assert_eq!(i.class, FrameClass::Tcp);
    // ICMP, GRE, SCTP → other IP.
    for proto in [1u8, 47, 132] {
        let i = check(&eth(&[], 0x0800, &ipv4(proto, &[8, 0, 0, 0, 0, 0, 0, 0])));
        assert_eq!(
            (i.class, i.l3_offset, i.l4_offset),
            (FrameClass::OtherIp, 14, 0)
        );
    }
    // IP options: IHL 6.
    let f = eth(
        &[],
        0x0800,
        &ipv4_full(1, 0, 17, &udp(1, 2, &[]), [10, 0, 0, 1]),
    );
    let i = check(&f);
    assert_eq!((i.class, i.l4_offset), (FrameClass::Udp, 38));
    // Trailing Ethernet padding after total_length is fine.
    let mut f = eth(&[], 0x0800, &ipv4(17, &udp(1, 2, &[])));
    f.resize(60, 0);
    assert_eq!(class(&f), FrameClass::Udp);
}

#[test]
fn ipv4_header_rules() {
    let good = eth(&[], 0x0800, &ipv4(17, &udp(1, 2, &[0; 8])));
    // Bad version.
    for v in [0u8, 5, 6, 15] {
        let mut f = good.clone();
        f[14] = (v << 4) | 5;
        assert_eq!(class(&f), FrameClass::Malformed, "version {v}");
    }
    // IHL < 5.
    for ihl in 0u8..5 {
        let mut f = good.clone();
        f[14] = 0x40 | ihl;
        assert_eq!(class(&f), FrameClass::Malformed, "ihl {ihl}");
    }
    // IHL*4 beyond the bytes available.
    let mut f = good.clone();
    f[14] = 0x4f; // 60-byte header, 36 bytes available
    assert_eq!(class(&f), FrameClass::Malformed);
    // total_length < IHL*4.
    let mut f = good.clone();
    f[16..18].copy_from_slice(&19u16.to_be_bytes());
    assert_eq!(class(&f), FrameClass::Malformed);
    // total_length > bytes available.
    let mut f = good.clone();
    f[16..18].copy_from_slice(&37u16.to_be_bytes());
    assert_eq!(class(&f), FrameClass::Malformed);
    // total_length shorter than the frame leaves the rest as padding; the UDP
    // length (16) then exceeds the IP payload (12) → malformed.
    let mut f = good.clone();
    f[16..18].copy_from_slice(&32u16.to_be_bytes());
    assert_eq!(class(&f), FrameClass::Malformed);
    // Truncated header (fewer than 20 bytes after the EtherType).
    for n in 14..34 {
        assert_eq!(class(&good[..n]), FrameClass::Malformed, "len {n}");
    }
    // Malformed IP header reports the L3 offset.
    assert_eq!(check(&good[..20]).l3_offset, 14);
}

#[test]
fn ipv4_fragments() {
    let u = udp(1, 2, &[0; 32]);
    // Non-first fragment → other IP, whatever the bytes look like.
    for off in [1u16, 2, 0x1fff] {
        for mf in [0u16, 0x2000] {
            let f = eth(&[], 0x0800, &ipv4_full(0, mf | off, 17, &u, [10, 0, 0, 1]));
            let i = check(&f);
            assert_eq!((i.class, i.l4_offset), (FrameClass::OtherIp, 0));
        }
    }
    let f = eth(&[], 0x0800, &ipv4_full(0, 7, 17, &[1, 2, 3], [10, 0, 0, 1]));
    assert_eq!(class(&f), FrameClass::OtherIp);
    // First fragment: UDP length covers the whole datagram (> this payload).
    let mut first = u[..24].to_vec();
    first[4..6].copy_from_slice(&1000u16.to_be_bytes());
    let ff = eth(
        &[],
        0x0800,
        &ipv4_full(0, 0x2000, 17, &first, [10, 0, 0, 1]),
    );
    let i = check(&ff);
    assert_eq!((i.class, i.l4_offset), (FrameClass::Udp, 34));
    // Same length field without MF → malformed.
    let nf = eth(&[], 0x0800, &ipv4_full(0, 0, 17, &first, [10, 0, 0, 1]));
    assert_eq!(class(&nf), FrameClass::Malformed);
    // All fragments of a datagram share a hash; DF does not count as a fragment.
    let mid = eth(
        &[],
        0x0800,
        &ipv4_full(0, 0x2000 | 3, 17, &[0; 24], [10, 0, 0, 1]),
    );
    let last = eth(&[], 0x0800, &ipv4_full(0, 6, 17, &[0; 8], [10, 0, 0, 1]));
    assert_eq!(flow_hash(&ff), flow_hash(&mid));
    assert_eq!(flow_hash(&ff), flow_hash(&last));
    let df = eth(&[], 0x0800, &ipv4_full(0, 0x4000, 17, &u, [10, 0, 0, 1]));
    let plain = eth(&[], 0x0800, &ipv4_full(0, 0, 17, &u, [10, 0, 0, 1]));
    assert_eq!(class(&df), FrameClass::Udp);
    assert_eq!(flow_hash(&df), flow_hash(&plain));
}

#[test]
fn ipv4_udp_rules() {
    // Truncated UDP header: 0..8 bytes of IP payload.
    for n in 0..8 {
        let f = eth(&[], 0x0800, &ipv4(17, &udp(1, 2, &[])[..n]));
        assert_eq!(class(&f), FrameClass::Malformed, "udp bytes {n}");
    }
    // Length field < 8 or > IP payload.
    for bad in [0u16, 7, 17, 0xffff] {
        let mut u = udp(1, 2, &[0; 8]);
        u[4..6].copy_from_slice(&bad.to_be_bytes());
        let f = eth(&[], 0x0800, &ipv4(17, &u));
        let i = check(&f);
        assert_eq!(i.class, FrameClass::Malformed, "udp len {bad}");
        assert_eq!(i.l3_offset, 14);
    }
    // Length field < IP payload (trailing bytes inside IP) and == 8 are fine.
    for ok in [8u16, 12, 16] {
        let mut u = udp(1, 2, &[0; 8]);
        u[4..6].copy_from_slice(&ok.to_be_bytes());
        assert_eq!(class(&eth(&[], 0x0800, &ipv4(17, &u))), FrameClass::Udp);
    }
}

#[test]
fn ipv4_tcp_rules() {
    for n in 0..20 {
        let f = eth(&[], 0x0800, &ipv4(6, &tcp(1, 2, 0, &[])[..n]));
        assert_eq!(class(&f), FrameClass::Malformed, "tcp bytes {n}");
    }
    for doff in 0u8..5 {
        let mut t = tcp(1, 2, 0, &[0; 8]);
        t[12] = doff << 4;
        assert_eq!(
            class(&eth(&[], 0x0800, &ipv4(6, &t))),
            FrameClass::Malformed
        );
    }
    // data offset*4 beyond the IP payload (the frame may have padding).
    let mut t = tcp(1, 2, 0, &[0; 4]);
    t[12] = 6 << 4; // 24 bytes: exactly the payload → ok
    assert_eq!(class(&eth(&[], 0x0800, &ipv4(6, &t))), FrameClass::Tcp);
    t[12] = 7 << 4; // 28 > 24
    let mut f = eth(&[], 0x0800, &ipv4(6, &t));
    f.resize(100, 0);
    assert_eq!(class(&f), FrameClass::Malformed);
}

#[test]
fn ipv6_rules() {
    let u = udp(1, 2, &[0; 8]);
    let i = check(&eth(&[], 0x86dd, &ipv6(17, &u)));
    assert_eq!(
        (i.class, i.l3_offset, i.l4_offset),
        (FrameClass::Udp, 14, 54)
    );
    let i = check(&eth(&[0x8100], 0x86dd, &ipv6(6, &tcp(1, 2, 0, &[]))));
    assert_eq!(
        (i.class, i.l3_offset, i.l4_offset),
        (FrameClass::Tcp, 18, 58)
    );
    // ICMPv6, no-next-header → other IP.
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(58, &[128, 0, 0, 0]))),
        FrameClass::OtherIp
    );
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(59, &[]))),
        FrameClass::OtherIp
    );
    // Truncated fixed header.
    let good = eth(&[], 0x86dd, &ipv6(17, &u));
    for n in 14..54 {
        assert_eq!(class(&good[..n]), FrameClass::Malformed, "len {n}");
    }
    // Version not 6.
    let mut f = good.clone();
    f[14] = 0x40;
    assert_eq!(class(&f), FrameClass::Malformed);
    // Payload length beyond the frame; shorter than the frame is padding.
    let mut f = good.clone();
    f[18..20].copy_from_slice(&17u16.to_be_bytes());
    assert_eq!(class(&f), FrameClass::Malformed);
    let mut f = good.clone();
    f.resize(90, 0);
    assert_eq!(class(&f), FrameClass::Udp);
    // UDP/TCP header rules as for IPv4.
    let mut bad = u.clone();
    bad[4..6].copy_from_slice(&20u16.to_be_bytes());
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(17, &bad))),
        FrameClass::Malformed
    );
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(17, &u[..7]))),
        FrameClass::Malformed
    );
    let mut t = tcp(1, 2, 0, &[]);
    t[12] = 0x40;
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(6, &t))),
        FrameClass::Malformed
    );
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(6, &t[..19]))),
        FrameClass::Malformed
    );
}

#[test]
fn ipv6_extension_headers() {
    let u = udp(1, 2, &[0; 8]);
    // HBH → UDP.
    let mut pl = vec![17u8, 0, 1, 4, 0, 0, 0, 0];
    pl.extend_from_slice(&u);
    let i = check(&eth(&[], 0x86dd, &ipv6(0, &pl)));
    assert_eq!((i.class, i.l4_offset), (FrameClass::Udp, 62));
    // HBH → routing (16 bytes) → dest opts → TCP.
    let mut pl = vec![43u8, 0, 0, 0, 0, 0, 0, 0];
    pl.extend_from_slice(&[60, 1]);
    pl.extend_from_slice(&[0; 14]);
    pl.extend_from_slice(&[6, 0, 0, 0, 0, 0, 0, 0]);
    pl.extend_from_slice(&tcp(1, 2, 0, &[]));
    let i = check(&eth(&[], 0x86dd, &ipv6(0, &pl)));
    assert_eq!((i.class, i.l4_offset), (FrameClass::Tcp, 14 + 40 + 32));
    // Extension header running past the payload (even with frame padding).
    let mut f = eth(&[], 0x86dd, &ipv6(0, &[17, 3, 0, 0, 0, 0, 0, 0]));
    f.resize(200, 0);
    assert_eq!(class(&f), FrameClass::Malformed);
    // Extension header itself cut: 1 byte of it.
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(60, &[17]))),
        FrameClass::Malformed
    );
    // Ext header ending exactly at payload end, then nothing for UDP.
    let f = eth(&[], 0x86dd, &ipv6(60, &[17, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(class(&f), FrameClass::Malformed);
    // Extension-header bound: MAX headers then UDP is walked fully; one more
    // header than that stops the walk → other IP.
    let chain = |n: usize| {
        let mut pl = Vec::new();
        for i in 0..n {
            let nh = if i + 1 == n { 17 } else { 60 };
            pl.extend_from_slice(&[nh, 0, 0, 0, 0, 0, 0, 0]);
        }
        pl.extend_from_slice(&u);
        eth(&[], 0x86dd, &ipv6(60, &pl))
    };
    let i = check(&chain(ipv6::MAX_EXT_HEADERS));
    assert_eq!(i.class, FrameClass::Udp);
    assert_eq!(usize::from(i.l4_offset), 54 + 8 * ipv6::MAX_EXT_HEADERS);
    assert_eq!(
        class(&chain(ipv6::MAX_EXT_HEADERS + 1)),
        FrameClass::OtherIp
    );
}

#[test]
fn ipv6_fragments() {
    let u = udp(1, 2, &[0; 8]);
    // First fragment (offset 0, M=1) with UDP length larger than present.
    let mut first = vec![17u8, 0, 0, 1, 0, 0, 0, 42];
    let mut big = u.clone();
    big[4..6].copy_from_slice(&500u16.to_be_bytes());
    first.extend_from_slice(&big);
    let ff = eth(&[], 0x86dd, &ipv6(44, &first));
    let i = check(&ff);
    assert_eq!((i.class, i.l4_offset), (FrameClass::Udp, 62));
    // Non-first fragment.
    let mut rest = vec![17u8, 0, 0x01, 0x00, 0, 0, 0, 42];
    rest.extend_from_slice(&[0xff; 5]);
    let nf = eth(&[], 0x86dd, &ipv6(44, &rest));
    let i = check(&nf);
    assert_eq!((i.class, i.l4_offset), (FrameClass::OtherIp, 0));
    assert_eq!(flow_hash(&ff), flow_hash(&nf));
    // Truncated fragment header.
    assert_eq!(
        class(&eth(&[], 0x86dd, &ipv6(44, &[17, 0, 0]))),
        FrameClass::Malformed
    );
}

#[test]
fn every_truncation_of_valid_frames() {
    let frames = [
        (v4_udp(), 14, FrameClass::Udp),
        (
            eth(&[0x8100], 0x0800, &ipv4(17, &udp(5, 6, &[1; 20]))),
            18,
            FrameClass::Udp,
        ),
        (
            eth(&[0x88a8, 0x8100], 0x0800, &ipv4(17, &udp(5, 6, &[1; 3]))),
            22,
            FrameClass::Udp,
        ),
        (
            eth(&[], 0x86dd, &ipv6(17, &udp(5, 6, &[1; 16]))),
            14,
            FrameClass::Udp,
        ),
        (
            eth(&[], 0x0800, &ipv4(6, &tcp(5, 6, 3, &[1; 9]))),
            14,
            FrameClass::Tcp,
        ),
    ];
    for (full, l3, want) in frames {
        assert_eq!(class(&full), want);
        for n in 0..full.len() {
            let i = check(&full[..n]);
            let expect = if n < ETH_HDR_LEN {
                FrameClass::Runt
            } else {
                // Every shorter prefix cuts a VLAN tag or the IP datagram.
                FrameClass::Malformed
            };
            assert_eq!(i.class, expect, "prefix {n} of {}", full.len());
            if n >= l3 {
                assert_eq!(usize::from(i.l3_offset), l3);
            }
        }
    }
}

#[test]
fn flow_hash_properties() {
    let a = v4_udp();
    assert_eq!(flow_hash(&a), flow_hash(&a.clone()));
    assert_eq!(flow_hash(&[0u8; 13]), 0);
    // Payload and MACs do not matter for IP flows.
    let mut b = a.clone();
    b[50] ^= 0xff;
    rewrite_macs(&mut b, &mac_header(&[9; 6], &[8; 6]));
    assert_eq!(flow_hash(&a), flow_hash(&b));
    // Each 5-tuple field matters.
    let base = flow_hash(&eth(&[], 0x0800, &ipv4(17, &udp(1000, 2000, &[]))));
    assert_ne!(
        base,
        flow_hash(&eth(&[], 0x0800, &ipv4(17, &udp(1001, 2000, &[]))))
    );
    assert_ne!(
        base,
        flow_hash(&eth(&[], 0x0800, &ipv4(17, &udp(1000, 2001, &[]))))
    );
    assert_ne!(
        base,
        flow_hash(&eth(&[], 0x0800, &ipv4(6, &tcp(1000, 2000, 0, &[]))))
    );
    let other_src = ipv4_full(0, 0, 17, &udp(1000, 2000, &[]), [10, 0, 0, 2]);
    assert_ne!(base, flow_hash(&eth(&[], 0x0800, &other_src)));
    // Non-IP hashes on MACs + EtherType.
    let arp = eth(&[], 0x0806, &[0; 28]);
    let mut arp2 = arp.clone();
    rewrite_macs(&mut arp2, &mac_header(&[9; 6], &SRC));
    assert_ne!(flow_hash(&arp), flow_hash(&arp2));
    assert_ne!(flow_hash(&arp), flow_hash(&eth(&[], 0x88cc, &[0; 28])));
    let mut arp3 = arp.clone();
    arp3[20] = 0xff;
    assert_eq!(flow_hash(&arp), flow_hash(&arp3));

    // Spread: 4096 flows over 4 and 16 buckets (low bits, as a worker index
    // `hash % n` would use).
    for buckets in [4usize, 16] {
        let mut counts = vec![0usize; buckets];
        for i in 0..4096u32 {
            let src = [10, 0, (i >> 8) as u8, i as u8];
            let f = eth(
                &[],
                0x0800,
                &ipv4_full(0, 0, 17, &udp(1024 + i as u16, 9000, &[]), src),
            );
            counts[flow_hash(&f) as usize % buckets] += 1;
        }
        let expect = 4096 / buckets;
        for c in counts {
            assert!(
                c > expect * 8 / 10 && c < expect * 12 / 10,
                "{buckets}: {c}"
            );
        }
    }
}

#[test]
fn rewrite_keeps_classification() {
    let mut f = eth(&[0x8100], 0x0800, &ipv4(17, &udp(1, 2, &[])));
    let before = parse(&f);
    assert!(rewrite_macs(&mut f, &mac_header(&[0xaa; 6], &[0xbb; 6])));
    assert_eq!(parse(&f), before);
    assert_eq!(
        EthernetFrame::new_checked(&f).unwrap().dst(),
        MacAddr([0xaa; 6])
    );
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut seen = [0usize; FrameClass::COUNT];
    let mut buf = Vec::with_capacity(256);
    for _ in 0..200_000 {
        let len = (rng.next() % 160) as usize;
        buf.clear();
        for _ in 0..len {
            buf.push(rng.next() as u8);
        }
        // Bias towards interesting L2/L3 values so deeper code runs.
        if len >= 14 {
            let r = rng.next();
            let et: u16 = [0x0800, 0x86dd, 0x8100, 0x88a8, 0x9100, 0x0806][(r % 6) as usize];
            buf[12..14].copy_from_slice(&et.to_be_bytes());
            if len > 18 && r & 0x100 != 0 {
                buf[16..18].copy_from_slice(&[0x08, 0x00]);
            }
            let ver = if et == 0x86dd { 0x60 } else { 0x45 };
            if len > 14 && r & 0x200 != 0 {
                buf[14] = ver;
            }
        }
        seen[check(&buf).class.index()] += 1;
    }
    // Mutations of valid frames reach the L4 checks.
    let bases = [
        v4_udp(),
        eth(&[0x88a8, 0x8100], 0x0800, &ipv4(6, &tcp(1, 2, 2, &[0; 10]))),
        eth(
            &[],
            0x86dd,
            &ipv6(0, &{
                let mut p = vec![44u8, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 1, 0, 0, 0, 9];
                p.extend_from_slice(&udp(1, 2, &[0; 6]));
                p
            }),
        ),
    ];
    for _ in 0..200_000 {
        let base = &bases[(rng.next() % bases.len() as u64) as usize];
        buf.clear();
        buf.extend_from_slice(base);
        for _ in 0..(rng.next() % 4 + 1) {
            let at = (rng.next() % buf.len() as u64) as usize;
            buf[at] = rng.next() as u8;
        }
        let cut = (rng.next() % (buf.len() as u64 + 8)) as usize;
        buf.truncate(cut);
        seen[check(&buf).class.index()] += 1;
    }
    for c in FrameClass::ALL {
        assert!(seen[c.index()] > 0, "class {} never produced", c.name());
    }
}

#[test]
fn oversized_frames() {
    // Jumbo / oversized buffers are fine; offsets still fit.
    let mut f = eth(&[], 0x0800, &ipv4(17, &udp(1, 2, &vec![0; 9000])));
    assert_eq!(class(&f), FrameClass::Udp);
    f.resize(70_000, 0xee);
    assert_eq!(class(&f), FrameClass::Udp);
    // IPv6 with maximal extension headers (8 * 2048 bytes) then UDP.
    let mut pl = Vec::new();
    for i in 0..ipv6::MAX_EXT_HEADERS {
        let nh = if i + 1 == ipv6::MAX_EXT_HEADERS {
            17
        } else {
            60
        };
        let mut h = vec![nh, 255];
        h.resize(2048, 0);
        pl.extend_from_slice(&h);
    }
    pl.extend_from_slice(&udp(1, 2, &[]));
    let pl = &pl[..];
    let mut b = ipv6(60, &[]);
    b[4..6].copy_from_slice(&(pl.len() as u16).to_be_bytes());
    b.extend_from_slice(pl);
    let i = check(&eth(&[0x88a8, 0x8100], 0x86dd, &b));
    assert_eq!(i.class, FrameClass::Udp);
    assert_eq!(usize::from(i.l4_offset), 22 + 40 + 8 * 2048);
}

#[test]
fn headers_spread_over_buffers() {
    // A 9000-byte IPv4/UDP frame seen through its first 128 bytes: length
    // checks use the frame length, so it is UDP with its 5-tuple hash.
    let f = eth(&[], 0x0800, &ipv4(17, &udp(1024, 9000, &vec![7; 8958])));
    assert_eq!(f.len(), 9000);
    let full = check(&f);
    assert_eq!(full.class, FrameClass::Udp);
    assert_eq!(parse_head(&f[..PARSE_HEAD_LEN], f.len()), full);
    assert_eq!(parse_head(&f[..2048], f.len()), full);
    // The same bytes believed to be the whole frame: the IP total length
    // runs past them.
    assert_eq!(
        parse_head(&f[..PARSE_HEAD_LEN], PARSE_HEAD_LEN).class,
        FrameClass::Malformed
    );
    // Lengths are still checked against the real frame: a total length
    // beyond it, a UDP length beyond the IP payload.
    let mut bad = f.clone();
    bad[16..18].copy_from_slice(&9100u16.to_be_bytes());
    assert_eq!(
        parse_head(&bad[..PARSE_HEAD_LEN], bad.len()).class,
        FrameClass::Malformed
    );
    let mut bad = f.clone();
    bad[38..40].copy_from_slice(&8970u16.to_be_bytes());
    assert_eq!(
        parse_head(&bad[..PARSE_HEAD_LEN], bad.len()).class,
        FrameClass::Malformed
    );
    // IPv6 with VLAN tags and TCP.
    let f = eth(
        &[0x88a8, 0x8100],
        0x86dd,
        &ipv6(6, &tcp(80, 443, 3, &vec![1; 7000])),
    );
    let full = check(&f);
    assert_eq!(full.class, FrameClass::Tcp);
    assert_eq!(parse_head(&f[..PARSE_HEAD_LEN], f.len()), full);
    // IPv6 extension headers running beyond the head: not looked into,
    // other IP hashed on (src, dst, the unread header's number).
    let mut pl = vec![60u8, 20]; // hop-by-hop, 168 bytes
    pl.resize(168, 0);
    pl.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 0]); // dest opts → UDP
    pl.extend_from_slice(&udp(1, 2, &vec![0; 3000]));
    let f = eth(&[], 0x86dd, &ipv6(0, &pl));
    assert_eq!(check(&f).class, FrameClass::Udp);
    let j = parse_head(&f[..PARSE_HEAD_LEN], f.len());
    assert_eq!(j.class, FrameClass::OtherIp);
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&f[22..38]);
    dst.copy_from_slice(&f[38..54]);
    assert_eq!(j.flow_hash, hash_v6(&src, &dst, 60, 0));
    // ...but an extension header cut short by the frame's end is still
    // malformed, whether or not it is in view.
    let mut cut = eth(&[], 0x86dd, &ipv6(0, &pl));
    cut[18..20].copy_from_slice(&100u16.to_be_bytes());
    cut.truncate(14 + 40 + 100);
    assert_eq!(
        parse_head(&cut[..PARSE_HEAD_LEN], cut.len()).class,
        FrameClass::Malformed
    );
}
