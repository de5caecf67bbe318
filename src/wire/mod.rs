//! Wire formats: zero-copy views over Ethernet / VLAN / IPv4 / IPv6 / UDP /
//! TCP frames, the per-packet classifier [`parse`], the flow hash used to pick
//! a worker, and the in-place MAC rewrite used on TX.
//!
//! **Promise: the parsers never panic and never read past the slice they are
//! given**, whatever the bytes. Every view (`EthernetFrame`, `Ipv4Packet`,
//! `Ipv6Packet`, `UdpPacket`, `TcpPacket`) can only be built through its
//! `new_checked` constructor, which runs the type's `check_len` validation;
//! accessors then index only inside the validated range. Malformed input is
//! reported as [`FrameClass::Malformed`] / [`FrameClass::Runt`], never as an
//! error path that allocates.
//!
//! Hot path: [`parse`], [`flow_hash`] and [`rewrite_macs`] run once per packet
//! in the forwarder. They do not allocate, log or format, and are `#[inline]`.
//!
//! Frames spread over several buffers (multi-segment mbufs): [`parse_head`]
//! reads headers from the first bytes only (the first buffer, or its first
//! [`PARSE_HEAD_LEN`] bytes copied out) and checks lengths against the whole
//! frame's length, so such a frame gets the class and hash it would get in
//! one buffer.
//!
//! # Classification rules
//! * fewer than 14 bytes → `Runt`;
//! * up to two VLAN tags (TPID 0x8100, 0x88a8, 0x9100) are walked; a tag cut
//!   short → `Malformed`; a third tag is not looked into → `NonIp`;
//! * EtherType other than IPv4 / IPv6 → `NonIp`;
//! * IPv4: version 4, IHL ≥ 5, IHL*4 ≤ bytes available, IHL*4 ≤ total_length ≤
//!   bytes available (trailing Ethernet padding allowed), else `Malformed`; a
//!   non-first fragment → `OtherIp`; UDP needs its 8-byte header and a length
//!   field in `[8, ip payload]` (a first fragment, MF set, only needs ≥ 8,
//!   since its length field covers the whole datagram); TCP needs 20 bytes and
//!   data offset*4 in `[20, ip payload]`; anything else → `OtherIp`;
//! * IPv6: 40-byte header and version 6, payload_length ≤ bytes available, else
//!   `Malformed`; hop-by-hop, routing, destination-options and fragment
//!   headers are walked (at most [`ipv6::MAX_EXT_HEADERS`]; beyond that →
//!   `OtherIp`); one running past the payload → `Malformed`; non-first
//!   fragment → `OtherIp`; UDP/TCP checked as for IPv4; others → `OtherIp`.
//!
//! # Flow hash
//! A multiply/xor-rotate mix with a 64-bit finaliser, stable across runs and
//! processes (no random seed):
//! * IPv4/IPv6 UDP/TCP, unfragmented: 5-tuple (src, dst, proto, sport, dport);
//! * other IP, *and any fragment* (first fragments included, so all fragments
//!   of one datagram land on the same worker), and UDP/TCP with a bad L4
//!   header: (src, dst, proto);
//! * non-IP, and frames malformed at L2/L3: (dst MAC, src MAC, EtherType after
//!   VLAN tags);
//! * runts: 0.

pub mod checksum;
mod error;
pub mod ethernet;
mod field;
pub mod flow;
pub mod ipv4;
pub mod ipv6;
pub mod l4;
pub mod router;

use core::fmt;

pub use error::WireError;
pub use ethernet::{
    ethertype, is_vlan_tpid, mac_header, rewrite_macs, EthernetFrame, L2Header, MacAddr,
    MacParseError, ETH_HDR_LEN,
};
use field::be32;
pub use ipv4::{protocol, Ipv4Packet};
pub use ipv6::{Ipv6Packet, Ipv6Upper};
pub use l4::{TcpPacket, UdpPacket};

/// Class of a frame, as decided by [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameClass {
    /// IPv4/IPv6 with a valid UDP header.
    Udp,
    /// IPv4/IPv6 with a valid TCP header.
    Tcp,
    /// Valid IPv4/IPv6 carrying something else (or a non-first fragment).
    OtherIp,
    /// Valid Ethernet header, EtherType not IPv4/IPv6 (ARP, LLDP, …).
    NonIp,
    /// Broken VLAN / IP / UDP / TCP header.
    Malformed,
    /// Shorter than an Ethernet header.
    Runt,
}

impl FrameClass {
    /// How many classes there are: the length of per-class counter arrays.
    pub const COUNT: usize = 6;

    /// All classes, in [`index`](Self::index) order.
    pub const ALL: [FrameClass; Self::COUNT] = [
        FrameClass::Udp,
        FrameClass::Tcp,
        FrameClass::OtherIp,
        FrameClass::NonIp,
        FrameClass::Malformed,
        FrameClass::Runt,
    ];

    /// Stable snake_case name for stats output.
    #[inline]
    pub fn name(self) -> &'static str {
        match self {
            FrameClass::Udp => "udp",
            FrameClass::Tcp => "tcp",
            FrameClass::OtherIp => "other_ip",
            FrameClass::NonIp => "non_ip",
            FrameClass::Malformed => "malformed",
            FrameClass::Runt => "runt",
        }
    }

    /// Position in [`ALL`](Self::ALL) (0..[`COUNT`](Self::COUNT)), for
    /// per-class counter arrays.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            FrameClass::Udp => 0,
            FrameClass::Tcp => 1,
            FrameClass::OtherIp => 2,
            FrameClass::NonIp => 3,
            FrameClass::Malformed => 4,
            FrameClass::Runt => 5,
        }
    }
}

// `ALL` holds the classes in `index()` order, so arrays of `COUNT` counters
// line up with `ALL`. A new variant must get a number in the exhaustive
// `index()` match next to `COUNT`.
const _: () = {
    let mut i = 0;
    while i < FrameClass::COUNT {
        assert!(FrameClass::ALL[i].index() == i);
        i += 1;
    }
};

impl fmt::Display for FrameClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What [`parse`] found.
///
/// Offsets are from the start of the frame and always `<= frame.len()`
/// (for [`parse_head`], `<= head.len()`: what they point at is in view):
/// * `l3_offset`: start of the L3 header (14 + 4 * vlan_tags) whenever the
///   L2 header was complete (every class but `Runt` and a truncated VLAN
///   tag, where it is 0);
/// * `l4_offset`: start of the UDP/TCP header, non-zero only for `Udp`/`Tcp`
///   (then at least 8 / 20 bytes are present there, in view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// Classification.
    pub class: FrameClass,
    /// Complete VLAN tags walked (0..=2).
    pub vlan_tags: u8,
    /// Offset of the L3 header, see above.
    pub l3_offset: u16,
    /// Offset of the L4 header, see above.
    pub l4_offset: u16,
    /// Same value as [`flow_hash`].
    pub flow_hash: u32,
}

impl FrameInfo {
    /// The result for frames shorter than 14 bytes.
    pub const RUNT: FrameInfo = FrameInfo {
        class: FrameClass::Runt,
        vlan_tags: 0,
        l3_offset: 0,
        l4_offset: 0,
        flow_hash: 0,
    };
}

// ---------------------------------------------------------------- flow hash

const MIX_K: u64 = 0x9e37_79b9_7f4a_7c15;
const SEED_V4: u64 = 0x0004;
const SEED_V6: u64 = 0x0006;
const SEED_L2: u64 = 0x00e2;

#[inline]
fn mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(MIX_K).rotate_left(29)
}

#[inline]
fn finish(h: u64) -> u32 {
    // murmur3 fmix64
    let mut x = h;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x as u32
}

#[inline]
fn tail_word(proto: u8, ports: u32) -> u64 {
    (u64::from(proto) << 32) | u64::from(ports)
}

#[inline]
fn hash_v4(src: [u8; 4], dst: [u8; 4], proto: u8, ports: u32) -> u32 {
    let addrs = (u64::from(u32::from_be_bytes(src)) << 32) | u64::from(u32::from_be_bytes(dst));
    finish(mix(mix(SEED_V4, addrs), tail_word(proto, ports)))
}

#[inline]
fn hash_v6(src: &[u8; 16], dst: &[u8; 16], proto: u8, ports: u32) -> u32 {
    let w = |a: &[u8; 16], i: usize| {
        u64::from_be_bytes([
            a[i],
            a[i + 1],
            a[i + 2],
            a[i + 3],
            a[i + 4],
            a[i + 5],
            a[i + 6],
            a[i + 7],
        ])
    };
    let mut h = mix(SEED_V6, w(src, 0));
    h = mix(h, w(src, 8));
    h = mix(h, w(dst, 0));
    h = mix(h, w(dst, 8));
    finish(mix(h, tail_word(proto, ports)))
}

/// Caller guarantees `frame.len() >= ETH_HDR_LEN`.
#[inline]
fn hash_l2(frame: &[u8], ethertype: u16) -> u32 {
    let b = frame;
    let dst = u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]]);
    let src = u64::from_be_bytes([0, 0, b[6], b[7], b[8], b[9], b[10], b[11]]);
    finish(mix(mix(SEED_L2, (dst << 16) | u64::from(ethertype)), src))
}

// ------------------------------------------------------------------- parse

#[inline]
fn info(class: FrameClass, l2: &L2Header, l3: usize, l4: usize, flow_hash: u32) -> FrameInfo {
    // Offsets fit u16: l3 <= 22, and l4 <= l3 + 40 + 8 * 2048 (bounded IPv6
    // extension walk) or l3 + 60 (IPv4).
    FrameInfo {
        class,
        vlan_tags: l2.vlan_tags,
        l3_offset: l3 as u16,
        l4_offset: l4 as u16,
        flow_hash,
    }
}

/// Classifies one Ethernet frame (no FCS) and computes its flow hash.
///
/// Parses Ethernet, up to two VLAN tags (0x8100, 0x88a8, 0x9100), IPv4 /
/// IPv6 (walking hop-by-hop, routing, destination-options and fragment
/// extension headers in a bounded loop), UDP / TCP. See the module docs for
/// the exact rules. Never panics, never reads outside `frame`, no allocation.
#[inline]
#[must_use]
pub fn parse(frame: &[u8]) -> FrameInfo {
    parse_head(frame, frame.len())
}

/// [`parse`] for a frame of `frame_len` bytes of which only the first
/// `head.len()` are in view (a frame spread over several buffers: `head` is
/// its first buffer, or its first bytes copied out).
///
/// Length checks use `frame_len`; header bytes are read from `head` only.
/// With `head` holding at least `min(frame_len, PARSE_HEAD_LEN)` bytes the
/// result equals `parse` of the whole frame, except that a header starting
/// beyond `head` (possible only after IPv6 extension headers) is not
/// looked into: the frame is then `OtherIp` with the (src, dst, proto)
/// hash, `proto` being the unread header's number. A shorter `head` gives
/// some class but never a panic or a read outside it. `frame_len` below
/// `head.len()` counts as `head.len()`.
#[inline]
#[must_use]
pub fn parse_head(head: &[u8], frame_len: usize) -> FrameInfo {
    parse_impl::<true>(head, frame_len)
}

/// [`parse_head`] without the flow hash (`flow_hash` is 0): the class and
/// offsets for a stage that does not spread by flow (the worker), which
/// then does not pay for a hash it would throw away.
#[inline]
#[must_use]
pub fn classify_head(head: &[u8], frame_len: usize) -> FrameInfo {
    parse_impl::<false>(head, frame_len)
}

/// The hash `f` computes when `H`, else 0 (not computed).
#[inline(always)]
fn gate<const H: bool>(f: impl FnOnce() -> u32) -> u32 {
    if H {
        f()
    } else {
        0
    }
}

#[inline]
fn parse_impl<const H: bool>(head: &[u8], frame_len: usize) -> FrameInfo {
    let len = frame_len.max(head.len());
    if len < ETH_HDR_LEN {
        return FrameInfo::RUNT;
    }
    if head.len() < ETH_HDR_LEN {
        // Not even the Ethernet header in view (head shorter than asked).
        return FrameInfo {
            class: FrameClass::Malformed,
            ..FrameInfo::RUNT
        };
    }
    let (l2, truncated) = ethernet::walk_vlans(head);
    if truncated {
        return info(
            FrameClass::Malformed,
            &l2,
            0,
            0,
            gate::<H>(|| hash_l2(head, l2.ethertype)),
        );
    }
    let l3 = l2.l3_offset;
    match l2.ethertype {
        ethertype::IPV4 => parse_ipv4::<H>(head, len, &l2),
        ethertype::IPV6 => parse_ipv6::<H>(head, len, &l2),
        et => info(
            FrameClass::NonIp,
            &l2,
            l3,
            0,
            gate::<H>(|| hash_l2(head, et)),
        ),
    }
}

/// Bytes from the frame start that [`parse_head`] needs in view to see
/// every header it classifies by (22 bytes of L2, a 60-byte IPv4 header or
/// the 40-byte IPv6 one, a 20-byte TCP header), with room for IPv6
/// extension headers.
pub const PARSE_HEAD_LEN: usize = 128;

/// The class an IP payload's L4 header gives: `head` is the payload in
/// view, `avail` its real length; `first_fragment`: the UDP length field
/// covers the whole datagram, so it is not checked against `avail`. A
/// header that is present but not in view makes `OtherIp`.
#[inline]
fn l4_class(proto: u8, head: &[u8], avail: usize, first_fragment: bool) -> FrameClass {
    let (need, class) = match proto {
        protocol::UDP => (l4::UDP_HDR_LEN, FrameClass::Udp),
        protocol::TCP => (l4::TCP_MIN_HDR_LEN, FrameClass::Tcp),
        _ => return FrameClass::OtherIp,
    };
    if head.len() < need && avail >= need {
        return FrameClass::OtherIp;
    }
    let ok = match proto {
        protocol::UDP if first_fragment => UdpPacket::check_header(head).is_ok(),
        protocol::UDP => UdpPacket::check_len_in(head, avail).is_ok(),
        _ => TcpPacket::check_len_in(head, avail).is_ok(),
    };
    if ok {
        class
    } else {
        FrameClass::Malformed
    }
}

#[inline]
fn parse_ipv4<const H: bool>(head: &[u8], len: usize, l2: &L2Header) -> FrameInfo {
    let l3 = l2.l3_offset;
    // walk_vlans kept l3 <= head.len() <= len.
    let ip = match Ipv4Packet::new_checked_in(&head[l3..], len - l3) {
        Ok(ip) => ip,
        Err(_) => {
            return info(
                FrameClass::Malformed,
                l2,
                l3,
                0,
                gate::<H>(|| hash_l2(head, l2.ethertype)),
            )
        }
    };
    let (src, dst, proto) = (ip.src_addr(), ip.dst_addr(), ip.protocol());
    let h3 = || gate::<H>(|| hash_v4(src, dst, proto, 0));
    if ip.frag_offset() != 0 {
        return info(FrameClass::OtherIp, l2, l3, 0, h3());
    }
    let first_frag = ip.more_frags();
    let payload = ip.payload();
    let payload_len = usize::from(ip.total_len()) - ip.header_len();
    let class = l4_class(proto, payload, payload_len, first_frag);
    if !matches!(class, FrameClass::Udp | FrameClass::Tcp) {
        return info(class, l2, l3, 0, h3());
    }
    let h = if first_frag {
        h3()
    } else {
        // l4_class saw 8 (UDP) / 20 (TCP) bytes in view at payload[0..].
        gate::<H>(|| hash_v4(src, dst, proto, be32(payload, 0)))
    };
    info(class, l2, l3, l3 + ip.header_len(), h)
}

#[inline]
fn parse_ipv6<const H: bool>(head: &[u8], len: usize, l2: &L2Header) -> FrameInfo {
    let l3 = l2.l3_offset;
    let ip = match Ipv6Packet::new_checked_in(&head[l3..], len - l3) {
        Ok(ip) => ip,
        Err(_) => {
            return info(
                FrameClass::Malformed,
                l2,
                l3,
                0,
                gate::<H>(|| hash_l2(head, l2.ethertype)),
            )
        }
    };
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let up = match ip.upper_layer() {
        Ok(up) => up,
        Err(_) => {
            let h = gate::<H>(|| hash_v6(&src, &dst, ip.next_header(), 0));
            return info(FrameClass::Malformed, l2, l3, 0, h);
        }
    };
    let proto = up.protocol;
    let h3 = || gate::<H>(|| hash_v6(&src, &dst, proto, 0));
    if up.non_first_fragment {
        return info(FrameClass::OtherIp, l2, l3, 0, h3());
    }
    // upper_layer guarantees up.offset <= the packet's length; the view
    // may end before it.
    let payload = ip.as_bytes().get(up.offset..).unwrap_or(&[]);
    let payload_len = ipv6::IPV6_HDR_LEN + usize::from(ip.payload_len()) - up.offset;
    let class = l4_class(proto, payload, payload_len, up.fragmented);
    if !matches!(class, FrameClass::Udp | FrameClass::Tcp) {
        return info(class, l2, l3, 0, h3());
    }
    let h = if up.fragmented {
        h3()
    } else {
        gate::<H>(|| hash_v6(&src, &dst, proto, be32(payload, 0)))
    };
    info(class, l2, l3, l3 + up.offset, h)
}

/// The flow hash of `frame`; always equal to `parse(frame).flow_hash`.
///
/// 5-tuple for unfragmented IPv4/IPv6 UDP/TCP, (src, dst, proto) for other IP
/// and fragments, MACs + EtherType for non-IP, 0 for runts. Stable for a flow
/// (no per-process seed).
#[inline]
#[must_use]
pub fn flow_hash(frame: &[u8]) -> u32 {
    parse(frame).flow_hash
}

#[cfg(test)]
mod tests;
