//! Deterministic test traffic: IPv4/UDP flows with a recognisable payload
//! stamp, and a set of odd frames (runts, VLAN/QinQ, IPv6, fragments, broken
//! headers…) each paired with the class [`crate::wire::parse`] must give it.
//!
//! Sizes: `frame_len` is the on-wire Ethernet size *including* the 4-byte FCS
//! (64..=1518); the bytes produced are `frame_len - 4` long, as a capture
//! (which never holds the FCS) would show them. [`udp_frame_sized`] instead
//! takes the captured length, up to jumbo sizes. All checksums are valid.
//!
//! Stamp: every generated UDP payload starts with `b"TQFW"`, flow id (u32 BE)
//! and sequence number (u64 BE), found again by [`test_payload`] after the
//! frame has been through the forwarder.

use crate::wire::{self, checksum, ethertype, protocol, FrameClass};

/// Smallest on-wire Ethernet frame (FCS included).
pub const MIN_FRAME_LEN: usize = 64;
/// Largest untagged on-wire Ethernet frame (FCS included).
pub const MAX_FRAME_LEN: usize = 1518;
/// Frame check sequence length, absent from captures.
pub const FCS_LEN: usize = 4;
/// Payload stamp magic.
pub const MAGIC: [u8; 4] = *b"TQFW";
/// Stamp length: magic + flow id + seq.
pub const STAMP_LEN: usize = 16;
/// Source MAC of generated frames unless told otherwise.
pub const DEFAULT_SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Destination MAC of generated frames unless told otherwise.
pub const DEFAULT_DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// Flow id of the stamp in odd frame number `i` is `ODD_FLOW_ID_BASE + i`.
pub const ODD_FLOW_ID_BASE: u32 = 0xffff_0000;
/// Destination UDP port of generated flows.
pub const DST_PORT: u16 = 9000;

const ETH: usize = wire::ETH_HDR_LEN;
const IP4: usize = 20;
const UDP: usize = 8;
/// Captured length of the smallest frame (64 on the wire).
const MIN_CAPTURED: usize = MIN_FRAME_LEN - FCS_LEN;

/// An IPv4/UDP 5-tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Flow {
    /// Source address.
    pub src_ip: [u8; 4],
    /// Destination address.
    pub dst_ip: [u8; 4],
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl Flow {
    /// Flow number `i`: 10.0.x.y:1024+(i mod 60000) → 10.1.x.y:9000 with
    /// x.y = i mod 65536. Distinct for all i below 122,880,000.
    pub fn nth(i: usize) -> Flow {
        let hi = (i >> 8) as u8;
        let lo = i as u8;
        Flow {
            src_ip: [10, 0, hi, lo],
            dst_ip: [10, 1, hi, lo],
            src_port: 1024 + (i % 60_000) as u16,
            dst_port: DST_PORT,
        }
    }
}

/// `n` distinct, deterministic flows ([`Flow::nth`] for 0..n).
pub fn flows(n: usize) -> Vec<Flow> {
    (0..n).map(Flow::nth).collect()
}

/// The stamp carried at the start of a generated UDP payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TestStamp {
    /// Flow number (index into [`flows`], or `ODD_FLOW_ID_BASE + i`).
    pub flow_id: u32,
    /// Per-flow sequence number from 0.
    pub seq: u64,
}

fn stamp(flow_id: u32, seq: u64) -> [u8; STAMP_LEN] {
    let mut s = [0u8; STAMP_LEN];
    s[..4].copy_from_slice(&MAGIC);
    s[4..8].copy_from_slice(&flow_id.to_be_bytes());
    s[8..].copy_from_slice(&seq.to_be_bytes());
    s
}

/// One IPv4/UDP frame of `frame_len` bytes on the wire (`frame_len - 4`
/// returned), valid IPv4 and UDP checksums, payload = stamp + zero fill.
///
/// # Panics
/// If `frame_len` is outside 64..=1518.
pub fn udp_frame(
    flow: &Flow,
    flow_id: u32,
    seq: u64,
    frame_len: usize,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
) -> Vec<u8> {
    assert!(
        (MIN_FRAME_LEN..=MAX_FRAME_LEN).contains(&frame_len),
        "frame_len {frame_len} outside {MIN_FRAME_LEN}..={MAX_FRAME_LEN}"
    );
    let total = frame_len - FCS_LEN;
    let mut payload = vec![0u8; total - ETH - IP4 - UDP];
    payload[..STAMP_LEN].copy_from_slice(&stamp(flow_id, seq));
    let f = flow_frame_v4(flow, seq, &payload, src_mac, dst_mac);
    debug_assert_eq!(f.len(), total);
    f
}

/// Ethernet + IPv4 (DF, ident = seq) + UDP of `flow` around `payload`.
fn flow_frame_v4(
    flow: &Flow,
    seq: u64,
    payload: &[u8],
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
) -> Vec<u8> {
    let udp = udp_v4(
        flow.src_ip,
        flow.dst_ip,
        flow.src_port,
        flow.dst_port,
        payload,
    );
    let ip = ipv4_packet(
        flow.src_ip,
        flow.dst_ip,
        protocol::UDP,
        seq as u16,
        0x4000,
        0,
        &udp,
    );
    ether(dst_mac, src_mac, &[], ethertype::IPV4, &ip)
}

/// A UDP frame to `dst` from `src` (both IPv4 or both IPv6) with TTL or
/// hop limit `ttl`, `frame_len` bytes on the wire (`frame_len - 4`
/// returned, at least the minimum frame), valid checksums, and the stamp
/// of (`flow_id`, `seq`): what the L3 mode's tests route.
///
/// # Panics
/// If the two addresses are of different families.
pub fn routed_udp_frame(
    src: std::net::IpAddr,
    dst: std::net::IpAddr,
    ttl: u8,
    flow_id: u32,
    seq: u64,
    frame_len: usize,
) -> Vec<u8> {
    use std::net::IpAddr;
    let room = frame_len.max(MIN_FRAME_LEN) - FCS_LEN;
    let sport = 1024 + (flow_id % 60_000) as u16;
    let f = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut payload = vec![0u8; room.saturating_sub(ETH + IP4 + UDP).max(STAMP_LEN)];
            payload[..STAMP_LEN].copy_from_slice(&stamp(flow_id, seq));
            let udp = udp_v4(s.octets(), d.octets(), sport, DST_PORT, &payload);
            let mut ip = ipv4_packet(
                s.octets(),
                d.octets(),
                protocol::UDP,
                seq as u16,
                0x4000,
                0,
                &udp,
            );
            ip[8] = ttl;
            ip[10..12].copy_from_slice(&[0, 0]);
            let c = checksum::internet_checksum(&ip[..IP4]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            ether(DEFAULT_DST_MAC, DEFAULT_SRC_MAC, &[], ethertype::IPV4, &ip)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut payload = vec![0u8; room.saturating_sub(ETH + 40 + UDP).max(STAMP_LEN)];
            payload[..STAMP_LEN].copy_from_slice(&stamp(flow_id, seq));
            let udp = udp_v6(s.octets(), d.octets(), sport, DST_PORT, &payload);
            let mut ip = ipv6_packet(s.octets(), d.octets(), protocol::UDP, &udp);
            ip[7] = ttl;
            ether(DEFAULT_DST_MAC, DEFAULT_SRC_MAC, &[], ethertype::IPV6, &ip)
        }
        _ => panic!("routed_udp_frame: {src} and {dst} are of different families"),
    };
    f
}

/// Largest captured frame [`udp_frame_sized`] builds: room for 9000-byte
/// jumbo MTUs and frames beyond them.
pub const MAX_SIZED_FRAME: usize = 16_000;

/// One stamped IPv4 or IPv6 UDP frame of exactly `len` captured bytes (no
/// FCS), for sizes beyond one Ethernet MTU (jumbo, multi-segment tests).
/// The IPv6 addresses are `fd00::` plus the flow's IPv4 addresses; ports
/// as in `flow`. Valid checksums.
///
/// # Panics
/// If `len` is below the headers + stamp (58 bytes IPv4, 78 IPv6) or above
/// [`MAX_SIZED_FRAME`].
pub fn udp_frame_sized(
    flow: &Flow,
    flow_id: u32,
    seq: u64,
    len: usize,
    ipv6: bool,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
) -> Vec<u8> {
    let ip_hdr = if ipv6 { 40 } else { IP4 };
    let min = ETH + ip_hdr + UDP + STAMP_LEN;
    assert!(
        (min..=MAX_SIZED_FRAME).contains(&len),
        "len {len} outside {min}..={MAX_SIZED_FRAME}"
    );
    let mut payload = vec![0u8; len - ETH - ip_hdr - UDP];
    payload[..STAMP_LEN].copy_from_slice(&stamp(flow_id, seq));
    // A pattern after the stamp, so that a misplaced segment shows.
    for (i, b) in payload[STAMP_LEN..].iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let f = if ipv6 {
        let v6 = |a: [u8; 4]| {
            let mut x = [0u8; 16];
            x[0] = 0xfd;
            x[12..].copy_from_slice(&a);
            x
        };
        let (src, dst) = (v6(flow.src_ip), v6(flow.dst_ip));
        let udp = udp_v6(src, dst, flow.src_port, flow.dst_port, &payload);
        ether(
            dst_mac,
            src_mac,
            &[],
            ethertype::IPV6,
            &ipv6_packet(src, dst, protocol::UDP, &udp),
        )
    } else {
        flow_frame_v4(flow, seq, &payload, src_mac, dst_mac)
    };
    debug_assert_eq!(f.len(), len);
    f
}

/// Finds the stamp of a generated frame: IPv4 or IPv6 UDP, with or without
/// VLAN tags (a first fragment works too). `None` for anything else.
pub fn test_payload(frame: &[u8]) -> Option<TestStamp> {
    let info = wire::parse(frame);
    if info.class != FrameClass::Udp {
        return None;
    }
    let l4 = usize::from(info.l4_offset);
    let udp = frame.get(l4..)?;
    let udp_len = usize::from(u16::from_be_bytes([*udp.get(4)?, *udp.get(5)?]));
    let payload = udp.get(UDP..udp_len.min(udp.len()))?;
    let s = payload.get(..STAMP_LEN)?;
    if s[..4] != MAGIC {
        return None;
    }
    let mut id = [0u8; 4];
    id.copy_from_slice(&s[4..8]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&s[8..16]);
    Some(TestStamp {
        flow_id: u32::from_be_bytes(id),
        seq: u64::from_be_bytes(seq),
    })
}

/// Endless round-robin stream over `flows` flows: packet `i` belongs to flow
/// `i % flows` with seq `i / flows`. Empty when `flows == 0`.
#[derive(Clone, Debug)]
pub struct UdpStream {
    flows: Vec<Flow>,
    frame_len: usize,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    next: u64,
}

impl UdpStream {
    /// Stream with the default MACs.
    ///
    /// # Panics
    /// If `frame_len` is outside 64..=1518.
    pub fn new(flows: usize, frame_len: usize) -> Self {
        assert!(
            (MIN_FRAME_LEN..=MAX_FRAME_LEN).contains(&frame_len),
            "frame_len {frame_len} outside {MIN_FRAME_LEN}..={MAX_FRAME_LEN}"
        );
        UdpStream {
            flows: self::flows(flows),
            frame_len,
            src_mac: DEFAULT_SRC_MAC,
            dst_mac: DEFAULT_DST_MAC,
            next: 0,
        }
    }

    /// Replaces the source and destination MACs.
    pub fn macs(mut self, src_mac: [u8; 6], dst_mac: [u8; 6]) -> Self {
        self.src_mac = src_mac;
        self.dst_mac = dst_mac;
        self
    }
}

impl Iterator for UdpStream {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        let n = self.flows.len() as u64;
        if n == 0 {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let id = (i % n) as usize;
        Some(udp_frame(
            &self.flows[id],
            id as u32,
            i / n,
            self.frame_len,
            self.src_mac,
            self.dst_mac,
        ))
    }
}

/// `packets` frames round-robin over `flows` flows (see [`UdpStream`]).
pub fn udp_stream(flows: usize, packets: usize, frame_len: usize) -> Vec<Vec<u8>> {
    UdpStream::new(flows, frame_len).take(packets).collect()
}

// ------------------------------------------------------------------ builders

fn ether(dst: [u8; 6], src: [u8; 6], tags: &[(u16, u16)], et: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH + 4 * tags.len() + l3.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

/// IPv4 packet with `opt_words` 32-bit words of NOP options; `frag` is the
/// flags + fragment-offset field.
fn ipv4_packet(
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    ident: u16,
    frag: u16,
    opt_words: usize,
    payload: &[u8],
) -> Vec<u8> {
    let hl = IP4 + 4 * opt_words;
    let mut p = vec![0u8; hl];
    p[0] = 0x40 | (hl / 4) as u8;
    p[2..4].copy_from_slice(&((hl + payload.len()) as u16).to_be_bytes());
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&frag.to_be_bytes());
    p[8] = 64;
    p[9] = proto;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    for b in &mut p[IP4..] {
        *b = 1; // NOP option
    }
    let c = checksum::internet_checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

fn ipv6_packet(src: [u8; 16], dst: [u8; 16], nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    p.push(nh);
    p.push(64);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(payload);
    p
}

fn udp_header(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::with_capacity(UDP + payload.len());
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((UDP + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn udp_v4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = udp_header(sport, dport, payload);
    let ph = checksum::ipv4_pseudo_header(&src, &dst, protocol::UDP, u.len() as u16);
    let c = checksum::l4_checksum(ph, &u, true);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

fn udp_v6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = udp_header(sport, dport, payload);
    let ph = checksum::ipv6_pseudo_header(&src, &dst, protocol::UDP, u.len() as u32);
    let c = checksum::l4_checksum(ph, &u, true);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

/// TCP segment (ACK|PSH) with a valid checksum for pseudo-header sum `ph`
/// (computed with the final segment length by the caller's closure).
fn tcp_segment(sport: u16, dport: u16, payload: &[u8], ph: impl Fn(usize) -> u64) -> Vec<u8> {
    let mut t = vec![0u8; 20];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&1u32.to_be_bytes());
    t[8..12].copy_from_slice(&1u32.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = 0x18;
    t[14..16].copy_from_slice(&65535u16.to_be_bytes());
    t.extend_from_slice(payload);
    let c = checksum::l4_checksum(ph(t.len()), &t, false);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

fn pad_to_min(mut f: Vec<u8>) -> Vec<u8> {
    if f.len() < MIN_CAPTURED {
        f.resize(MIN_CAPTURED, 0);
    }
    f
}

const V4_SRC: [u8; 4] = [10, 0, 255, 1];
const V4_DST: [u8; 4] = [10, 1, 255, 1];
const V6_SRC: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 1];
const V6_DST: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff, 1];

/// The odd-frame set: `(label, frame, class parse() must return)`. Frames
/// classified `Udp` carry the stamp `(ODD_FLOW_ID_BASE + index, 0)`.
/// Deterministic; labels are unique.
pub fn odd_frames() -> Vec<OddFrame> {
    let mut out: Vec<OddFrame> = Vec::new();
    odd_runts_and_l2(&mut out);
    odd_non_ip(&mut out);
    odd_valid_udp(&mut out);
    odd_other_ipv4(&mut out);
    odd_malformed(&mut out);
    odd_ipv6(&mut out);
    out
}

/// One odd frame: its name, bytes, and the class the parser must give it.
pub type OddFrame = (&'static str, Vec<u8>, FrameClass);

/// The payload stamp for the frame about to be pushed, `extra` zero bytes
/// longer.
fn odd_stamp(out: &[OddFrame], extra: usize) -> Vec<u8> {
    let mut p = stamp(ODD_FLOW_ID_BASE + out.len() as u32, 0).to_vec();
    p.resize(STAMP_LEN + extra, 0);
    p
}

/// An IPv4 UDP packet from V4_SRC:4000 to V4_DST:DST_PORT.
fn v4udp(payload: &[u8]) -> Vec<u8> {
    let u = udp_v4(V4_SRC, V4_DST, 4000, DST_PORT, payload);
    ipv4_packet(V4_SRC, V4_DST, protocol::UDP, 7, 0, 0, &u)
}

fn v4tcp_ph(len: usize) -> u64 {
    checksum::ipv4_pseudo_header(&V4_SRC, &V4_DST, protocol::TCP, len as u16)
}

fn v6tcp_ph(len: usize) -> u64 {
    checksum::ipv6_pseudo_header(&V6_SRC, &V6_DST, protocol::TCP, len as u32)
}

/// [`odd_frames`]: runts and bare L2.
fn odd_runts_and_l2(out: &mut Vec<OddFrame>) {
    use FrameClass::*;
    let (s, d) = (DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
    let hdr = ether(d, s, &[], ethertype::IPV4, &[]);
    out.push(("runt_1_byte", hdr[..1].to_vec(), Runt));
    out.push(("runt_10_bytes", hdr[..10].to_vec(), Runt));
    out.push(("runt_13_bytes", hdr[..13].to_vec(), Runt));
    out.push((
        "eth_only_unknown_ethertype",
        ether(d, s, &[], 0x88b5, &[]),
        NonIp,
    ));
}

/// [`odd_frames`]: non-IP.
fn odd_non_ip(out: &mut Vec<OddFrame>) {
    use FrameClass::*;
    let (s, d) = (DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
    let mut arp = vec![0, 1, 0x08, 0x00, 6, 4, 0, 1];
    arp.extend_from_slice(&s);
    arp.extend_from_slice(&V4_SRC);
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&V4_DST);
    out.push((
        "arp_request",
        pad_to_min(ether([0xff; 6], s, &[], ethertype::ARP, &arp)),
        NonIp,
    ));
    out.push((
        "llc_8023_length_field",
        pad_to_min(ether(d, s, &[], 0x0003, &[0x42, 0x42, 0x03])),
        NonIp,
    ));
    let tags3 = [
        (ethertype::QINQ, 1),
        (ethertype::VLAN, 2),
        (ethertype::VLAN, 3),
    ];
    out.push((
        "three_vlan_tags",
        pad_to_min(ether(d, s, &tags3, ethertype::IPV4, &v4udp(&[0; 16]))),
        NonIp,
    ));
}

/// [`odd_frames`]: valid UDP, sizes and tags.
fn odd_valid_udp(out: &mut Vec<OddFrame>) {
    use FrameClass::*;
    let (s, d) = (DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
    let flow = Flow {
        src_ip: V4_SRC,
        dst_ip: V4_DST,
        src_port: 4000,
        dst_port: DST_PORT,
    };
    let id = ODD_FLOW_ID_BASE + out.len() as u32;
    out.push((
        "ipv4_udp_60",
        udp_frame(&flow, id, 0, MIN_FRAME_LEN, s, d),
        Udp,
    ));
    let id = ODD_FLOW_ID_BASE + out.len() as u32;
    out.push((
        "ipv4_udp_1514",
        udp_frame(&flow, id, 0, MAX_FRAME_LEN, s, d),
        Udp,
    ));
    let p = odd_stamp(out, 2);
    out.push((
        "vlan_udp",
        ether(d, s, &[(ethertype::VLAN, 100)], ethertype::IPV4, &v4udp(&p)),
        Udp,
    ));
    let p = odd_stamp(out, 0);
    let qinq = [(ethertype::QINQ, 200), (ethertype::VLAN, 100)];
    out.push((
        "qinq_udp",
        ether(d, s, &qinq, ethertype::IPV4, &v4udp(&p)),
        Udp,
    ));
    let p = odd_stamp(out, 2);
    let tag9100 = [(ethertype::QINQ_LEGACY, 300)];
    out.push((
        "vlan_9100_udp",
        ether(d, s, &tag9100, ethertype::IPV4, &v4udp(&p)),
        Udp,
    ));
    let p = odd_stamp(out, 0);
    let u = udp_v4(V4_SRC, V4_DST, 4000, DST_PORT, &p);
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::UDP, 8, 0, 2, &u);
    out.push((
        "ipv4_options_udp",
        pad_to_min(ether(d, s, &[], ethertype::IPV4, &ip)),
        Udp,
    ));
}

/// [`odd_frames`]: other IPv4.
fn odd_other_ipv4(out: &mut Vec<OddFrame>) {
    use FrameClass::*;
    let (s, d) = (DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
    let tcp = tcp_segment(40000, 80, b"GET / HTTP/1.0\r\n\r\n", v4tcp_ph);
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::TCP, 9, 0x4000, 0, &tcp);
    out.push((
        "ipv4_tcp",
        pad_to_min(ether(d, s, &[], ethertype::IPV4, &ip)),
        Tcp,
    ));
    let mut icmp = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
    icmp.extend_from_slice(b"tqfwd-ping");
    let c = checksum::internet_checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::ICMP, 10, 0, 0, &icmp);
    out.push((
        "ipv4_icmp_echo",
        pad_to_min(ether(d, s, &[], ethertype::IPV4, &ip)),
        OtherIp,
    ));
    // A datagram in two fragments: 8 + 24 bytes, then 32 bytes at offset 32.
    let p = odd_stamp(out, 40);
    let dgram = udp_v4(V4_SRC, V4_DST, 4000, DST_PORT, &p);
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::UDP, 11, 0x2000, 0, &dgram[..32]);
    out.push((
        "ipv4_fragment_first_udp",
        ether(d, s, &[], ethertype::IPV4, &ip),
        Udp,
    ));
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::UDP, 11, 32 / 8, 0, &dgram[32..]);
    out.push((
        "ipv4_fragment_nonfirst",
        ether(d, s, &[], ethertype::IPV4, &ip),
        OtherIp,
    ));
}

/// [`odd_frames`]: malformed IPv4 / UDP / TCP / VLAN.
fn odd_malformed(out: &mut Vec<OddFrame>) {
    use FrameClass::*;
    let (s, d) = (DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
    let good = v4udp(&[0; 18]);
    out.push((
        "ipv4_truncated_header",
        ether(d, s, &[], ethertype::IPV4, &good[..10]),
        Malformed,
    ));
    let mut ip = good.clone();
    ip[0] = 0x44;
    out.push((
        "ipv4_ihl_lt_5",
        ether(d, s, &[], ethertype::IPV4, &ip),
        Malformed,
    ));
    let mut ip = good.clone();
    ip[0] = 0x65;
    out.push((
        "ipv4_bad_version",
        ether(d, s, &[], ethertype::IPV4, &ip),
        Malformed,
    ));
    let mut ip = good.clone();
    ip[2..4].copy_from_slice(&1500u16.to_be_bytes());
    out.push((
        "ipv4_total_length_gt_frame",
        ether(d, s, &[], ethertype::IPV4, &ip),
        Malformed,
    ));
    let ip = ipv4_packet(
        V4_SRC,
        V4_DST,
        protocol::UDP,
        12,
        0,
        0,
        &[0x0f, 0xa0, 0x23, 0x28],
    );
    out.push((
        "udp_truncated_header",
        pad_to_min(ether(d, s, &[], ethertype::IPV4, &ip)),
        Malformed,
    ));
    let mut u = udp_v4(V4_SRC, V4_DST, 4000, DST_PORT, &[0; 18]);
    u[4..6].copy_from_slice(&1000u16.to_be_bytes());
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::UDP, 13, 0, 0, &u);
    out.push((
        "udp_length_gt_ip_payload",
        ether(d, s, &[], ethertype::IPV4, &ip),
        Malformed,
    ));
    u[4..6].copy_from_slice(&4u16.to_be_bytes());
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::UDP, 14, 0, 0, &u);
    out.push((
        "udp_length_lt_8",
        ether(d, s, &[], ethertype::IPV4, &ip),
        Malformed,
    ));
    let mut t = tcp_segment(40000, 80, &[0; 6], v4tcp_ph);
    t[12] = 15 << 4; // 60-byte header in a 26-byte segment
    let ip = ipv4_packet(V4_SRC, V4_DST, protocol::TCP, 15, 0, 0, &t);
    out.push((
        "tcp_data_offset_gt_payload",
        ether(d, s, &[], ethertype::IPV4, &ip),
        Malformed,
    ));
    let tagged = ether(d, s, &[(ethertype::VLAN, 100)], ethertype::IPV4, &good);
    out.push(("vlan_truncated_tag", tagged[..16].to_vec(), Malformed));
    let qinq = [(ethertype::QINQ, 200), (ethertype::VLAN, 100)];
    let qinq_cut = ether(d, s, &qinq, ethertype::IPV4, &good);
    out.push((
        "qinq_truncated_inner_tag",
        qinq_cut[..20].to_vec(),
        Malformed,
    ));
}

/// [`odd_frames`]: IPv6.
fn odd_ipv6(out: &mut Vec<OddFrame>) {
    use FrameClass::*;
    let (s, d) = (DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
    let p = odd_stamp(out, 0);
    let ip = ipv6_packet(
        V6_SRC,
        V6_DST,
        protocol::UDP,
        &udp_v6(V6_SRC, V6_DST, 4000, DST_PORT, &p),
    );
    out.push(("ipv6_udp", ether(d, s, &[], ethertype::IPV6, &ip), Udp));
    let tcp = tcp_segment(40000, 443, &[0x16, 3, 1], v6tcp_ph);
    let ip = ipv6_packet(V6_SRC, V6_DST, protocol::TCP, &tcp);
    out.push(("ipv6_tcp", ether(d, s, &[], ethertype::IPV6, &ip), Tcp));
    let p = odd_stamp(out, 0);
    // Hop-by-hop header: next=UDP, len 0 (8 bytes), PadN option of 4 bytes.
    let mut ext = vec![protocol::UDP, 0, 1, 4, 0, 0, 0, 0];
    ext.extend_from_slice(&udp_v6(V6_SRC, V6_DST, 4000, DST_PORT, &p));
    let ip = ipv6_packet(V6_SRC, V6_DST, protocol::HOPOPT, &ext);
    out.push(("ipv6_hbh_udp", ether(d, s, &[], ethertype::IPV6, &ip), Udp));
    let p = odd_stamp(out, 0);
    let ip = ipv6_packet(
        V6_SRC,
        V6_DST,
        protocol::UDP,
        &udp_v6(V6_SRC, V6_DST, 4000, DST_PORT, &p),
    );
    out.push((
        "vlan_ipv6_udp",
        ether(d, s, &[(ethertype::VLAN, 100)], ethertype::IPV6, &ip),
        Udp,
    ));
    let mut icmp6 = vec![128, 0, 0, 0, 0, 1, 0, 1];
    let ph = checksum::ipv6_pseudo_header(&V6_SRC, &V6_DST, protocol::ICMPV6, icmp6.len() as u32);
    let c = checksum::l4_checksum(ph, &icmp6, false);
    icmp6[2..4].copy_from_slice(&c.to_be_bytes());
    let ip = ipv6_packet(V6_SRC, V6_DST, protocol::ICMPV6, &icmp6);
    out.push((
        "ipv6_icmpv6_echo",
        ether(d, s, &[], ethertype::IPV6, &ip),
        OtherIp,
    ));
    let mut frag = vec![
        protocol::UDP,
        0,
        0x00,
        0x20, /* offset 4 */
        0,
        0,
        0,
        0x2a,
    ];
    frag.extend_from_slice(&[0; 16]);
    let ip = ipv6_packet(V6_SRC, V6_DST, protocol::IPV6_FRAG, &frag);
    out.push((
        "ipv6_fragment_nonfirst",
        ether(d, s, &[], ethertype::IPV6, &ip),
        OtherIp,
    ));
    // Destination-options header claiming 24 bytes in an 8-byte payload.
    let ip = ipv6_packet(
        V6_SRC,
        V6_DST,
        protocol::IPV6_OPTS,
        &[protocol::UDP, 2, 0, 0, 0, 0, 0, 0],
    );
    out.push((
        "ipv6_ext_header_past_payload",
        pad_to_min(ether(d, s, &[], ethertype::IPV6, &ip)),
        Malformed,
    ));
    let ip = ipv6_packet(
        V6_SRC,
        V6_DST,
        protocol::UDP,
        &udp_v6(V6_SRC, V6_DST, 4000, DST_PORT, &[0; 8]),
    );
    out.push((
        "ipv6_truncated_header",
        ether(d, s, &[], ethertype::IPV6, &ip[..30]),
        Malformed,
    ));
    let mut ip6 = ip.clone();
    ip6[4..6].copy_from_slice(&400u16.to_be_bytes());
    out.push((
        "ipv6_payload_length_gt_frame",
        ether(d, s, &[], ethertype::IPV6, &ip6),
        Malformed,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Independent RFC 1071 verifier: the sum over `parts` (pseudo header
    /// fields + segment, checksum included) must fold to 0xffff.
    fn sums_to_ones(parts: &[&[u8]]) -> bool {
        let mut s: u64 = 0;
        for p in parts {
            let mut i = 0;
            while i < p.len() {
                let hi = u64::from(p[i]) << 8;
                let lo = if i + 1 < p.len() {
                    u64::from(p[i + 1])
                } else {
                    0
                };
                s += hi | lo;
                i += 2;
            }
        }
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        s == 0xffff
    }

    /// Verifies the IP header checksum (v4) and the UDP/TCP checksum (v4 and
    /// v6) of a frame parse() calls Udp or Tcp. Returns false on mismatch.
    fn checksums_ok(frame: &[u8]) -> bool {
        let i = wire::parse(frame);
        let l3 = usize::from(i.l3_offset);
        let l4 = usize::from(i.l4_offset);
        let ip = &frame[l3..];
        let (pseudo, seg): (Vec<u8>, &[u8]) = if ip[0] >> 4 == 4 {
            let hl = usize::from(ip[0] & 15) * 4;
            if !sums_to_ones(&[&ip[..hl]]) {
                return false;
            }
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            let seg = &frame[l4..l3 + total];
            let mut ph = Vec::new();
            ph.extend_from_slice(&ip[12..20]);
            ph.extend_from_slice(&[0, ip[9]]);
            ph.extend_from_slice(&(seg.len() as u16).to_be_bytes());
            (ph, seg)
        } else {
            let end = l3 + 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            let seg = &frame[l4..end];
            let nh = if i.class == FrameClass::Udp { 17 } else { 6 };
            let mut ph = Vec::new();
            ph.extend_from_slice(&ip[8..40]);
            ph.extend_from_slice(&(seg.len() as u32).to_be_bytes());
            ph.extend_from_slice(&[0, 0, 0, nh]);
            (ph, seg)
        };
        sums_to_ones(&[&pseudo, seg])
    }

    #[test]
    fn flows_distinct_and_deterministic() {
        let a = flows(100_000);
        assert_eq!(a, flows(100_000));
        let set: HashSet<_> = a.iter().collect();
        assert_eq!(set.len(), a.len());
        assert_eq!(a[0].src_ip, [10, 0, 0, 0]);
        assert_eq!(a[257].dst_ip, [10, 1, 1, 1]);
        assert_eq!((a[3].src_port, a[3].dst_port), (1027, DST_PORT));
        assert!(flows(0).is_empty());
    }

    #[test]
    fn udp_frame_layout_and_checksums() {
        let f = Flow::nth(5);
        for size in [64usize, 65, 100, 128, 512, 1024, 1500, 1518] {
            let fr = udp_frame(&f, 5, 77, size, DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
            assert_eq!(fr.len(), size - 4);
            let i = wire::parse(&fr);
            assert_eq!(i.class, FrameClass::Udp, "size {size}");
            assert_eq!((i.l3_offset, i.l4_offset), (14, 34));
            assert!(checksums_ok(&fr), "size {size}");
            let ip = wire::Ipv4Packet::new_checked(&fr[14..]).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(usize::from(ip.total_len()), size - 4 - 14);
            assert_eq!(ip.src_addr(), f.src_ip);
            let u = wire::UdpPacket::new_checked(ip.payload()).unwrap();
            assert_eq!((u.src_port(), u.dst_port()), (f.src_port, f.dst_port));
            assert!(u.payload()[STAMP_LEN..].iter().all(|&b| b == 0));
            assert_eq!(
                test_payload(&fr),
                Some(TestStamp {
                    flow_id: 5,
                    seq: 77
                })
            );
            assert_eq!(&fr[..6], &DEFAULT_DST_MAC);
            assert_eq!(&fr[6..12], &DEFAULT_SRC_MAC);
        }
        // Corrupting a payload byte breaks the UDP checksum (verifier works).
        let mut fr = udp_frame(&f, 1, 1, 64, DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
        fr[55] ^= 1;
        assert!(!checksums_ok(&fr));
    }

    #[test]
    #[should_panic(expected = "outside 64..=1518")]
    fn udp_frame_rejects_bad_size() {
        udp_frame(&Flow::nth(0), 0, 0, 63, DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
    }

    #[test]
    fn stream_round_robin_and_hash_stability() {
        let n = 64;
        let s = udp_stream(n, 640, 64);
        assert_eq!(s.len(), 640);
        let mut hash_of = vec![None; n];
        for (i, f) in s.iter().enumerate() {
            let st = test_payload(f).unwrap();
            assert_eq!(st.flow_id as usize, i % n);
            assert_eq!(st.seq as usize, i / n);
            let h = wire::flow_hash(f);
            let slot = &mut hash_of[i % n];
            assert_eq!(*slot.get_or_insert(h), h, "flow {} hash changed", i % n);
        }
        let distinct: HashSet<_> = hash_of.iter().collect();
        assert_eq!(distinct.len(), n);
        // Spread over 4 workers.
        for (flows_n, lo, hi) in [(64usize, 8usize, 24usize), (4096, 870, 1180)] {
            let mut buckets = [0usize; 4];
            for f in UdpStream::new(flows_n, 64).take(flows_n) {
                buckets[wire::flow_hash(&f) as usize % 4] += 1;
            }
            for b in buckets {
                assert!(b >= lo && b <= hi, "{flows_n} flows: {buckets:?}");
            }
        }
        assert_eq!(UdpStream::new(0, 64).next(), None);
        assert_eq!(udp_stream(3, 0, 64).len(), 0);
    }

    #[test]
    fn stream_custom_macs() {
        let f = UdpStream::new(2, 64).macs([1; 6], [2; 6]).next().unwrap();
        assert_eq!(&f[..6], &[2; 6]);
        assert_eq!(&f[6..12], &[1; 6]);
    }

    #[test]
    fn odd_frames_classify_as_labelled() {
        let odd = odd_frames();
        let labels: HashSet<_> = odd.iter().map(|o| o.0).collect();
        assert_eq!(labels.len(), odd.len(), "labels must be unique");
        let mut classes = HashSet::new();
        for (idx, (label, frame, want)) in odd.iter().enumerate() {
            let got = wire::parse(frame);
            assert_eq!(got.class, *want, "{label}");
            classes.insert(*want);
            let stamp = test_payload(frame);
            if *want == FrameClass::Udp {
                let st = stamp.unwrap_or_else(|| panic!("{label}: no stamp"));
                assert_eq!(st.flow_id, ODD_FLOW_ID_BASE + idx as u32, "{label}");
                assert_eq!(st.seq, 0);
            } else {
                assert_eq!(stamp, None, "{label}");
            }
            if matches!(want, FrameClass::Udp | FrameClass::Tcp) && !label.contains("fragment") {
                assert!(checksums_ok(frame), "{label}: bad checksum");
            }
            assert!(frame.len() <= MAX_FRAME_LEN - FCS_LEN, "{label}");
        }
        assert_eq!(classes.len(), FrameClass::ALL.len(), "every class covered");
        let by = |l: &str| &odd.iter().find(|o| o.0 == l).unwrap().1;
        assert_eq!(by("runt_1_byte").len(), 1);
        assert_eq!(by("runt_10_bytes").len(), 10);
        assert_eq!(by("runt_13_bytes").len(), 13);
        assert_eq!(by("eth_only_unknown_ethertype").len(), 14);
        assert_eq!(by("ipv4_udp_60").len(), 60);
        assert_eq!(by("ipv4_udp_1514").len(), 1514);
        assert_eq!(wire::parse(by("qinq_udp")).vlan_tags, 2);
        assert_eq!(wire::parse(by("vlan_udp")).vlan_tags, 1);
        assert_eq!(wire::parse(by("ipv6_hbh_udp")).l4_offset, 14 + 40 + 8);
        // Both fragments of the split datagram hash alike.
        assert_eq!(
            wire::flow_hash(by("ipv4_fragment_first_udp")),
            wire::flow_hash(by("ipv4_fragment_nonfirst"))
        );
        // The fragment pair reassembles to a datagram with a valid checksum.
        let a = by("ipv4_fragment_first_udp");
        let b = by("ipv4_fragment_nonfirst");
        let mut dgram = a[34..].to_vec();
        dgram.extend_from_slice(&b[34..]);
        let mut ph = a[26..34].to_vec();
        ph.extend_from_slice(&[0, 17]);
        ph.extend_from_slice(&(dgram.len() as u16).to_be_bytes());
        assert!(sums_to_ones(&[&ph, &dgram]));
        assert_eq!(odd, odd_frames(), "deterministic");
    }

    #[test]
    fn test_payload_rejects_foreign_frames() {
        assert_eq!(test_payload(&[]), None);
        let mut f = udp_frame(&Flow::nth(1), 1, 2, 64, DEFAULT_SRC_MAC, DEFAULT_DST_MAC);
        f[42] = b'X';
        assert_eq!(test_payload(&f), None);
        // UDP payload too short to hold a stamp.
        let u = udp_v4(V4_SRC, V4_DST, 1, 2, &MAGIC);
        let ip = ipv4_packet(V4_SRC, V4_DST, protocol::UDP, 1, 0, 0, &u);
        let f = pad_to_min(ether(
            DEFAULT_DST_MAC,
            DEFAULT_SRC_MAC,
            &[],
            ethertype::IPV4,
            &ip,
        ));
        assert_eq!(wire::parse(&f).class, FrameClass::Udp);
        assert_eq!(test_payload(&f), None);
    }

    #[test]
    fn sized_frames_are_stamped_udp() {
        for ipv6 in [false, true] {
            for len in [78, 1514, 2048, 2049, 9000, MAX_SIZED_FRAME] {
                let f = udp_frame_sized(
                    &Flow::nth(3),
                    3,
                    len as u64,
                    len,
                    ipv6,
                    DEFAULT_SRC_MAC,
                    DEFAULT_DST_MAC,
                );
                assert_eq!(f.len(), len);
                let i = wire::parse(&f);
                assert_eq!(i.class, FrameClass::Udp, "len {len} ipv6 {ipv6}");
                let s = test_payload(&f).unwrap();
                assert_eq!((s.flow_id, s.seq), (3, len as u64));
            }
        }
    }
}
