//! What a router checks and changes in a frame it forwards by destination
//! (RFC 1812 §5.2.2 and §5.3.1 for IPv4, RFC 8200 §3 for IPv6), on the
//! frame's first bytes in view, as the rest of `wire` reads them.
//!
//! [`inspect`] walks the Ethernet header and up to two VLAN tags (which
//! stay in the frame), then:
//! * IPv4: at least 20 bytes, version 4, IHL ≥ 5 and the header in view,
//!   IHL × 4 ≤ total length ≤ the bytes after the L2 header (trailing
//!   Ethernet padding allowed), else [`L3Drop::Ipv4BadHeader`]; the header
//!   checksum, unless the NIC already vouched for it (`checksum`), else
//!   [`L3Drop::Ipv4BadChecksum`]; a martian source or destination
//!   ([`martian_v4`]): [`L3Drop::Martian`]; TTL ≤ 1:
//!   [`L3Drop::TtlExceeded`] (the router would send ICMP Time Exceeded;
//!   tqfwd sends nothing);
//! * IPv6: the 40-byte header in view, version 6, 40 + payload length ≤
//!   the bytes after the L2 header, else [`L3Drop::Ipv6BadHeader`]; a
//!   martian source or destination ([`martian_v6`]): [`L3Drop::Martian`];
//!   hop limit ≤ 1: [`L3Drop::TtlExceeded`];
//! * any other EtherType (ARP, LLDP, a third VLAN tag), a truncated tag or
//!   a frame without a whole Ethernet header: [`L3Drop::NonIp`].
//!
//! A frame that passes is routed by its destination address; once its
//! route is known, [`forwarded_v4`] / [`forwarded_v6`] give the bytes to
//! write: the TTL (or hop limit) one lower, and the IPv4 header checksum
//! updated for it incrementally (RFC 1624, equation 3: no pass over the
//! header).
//!
//! Never panics, never reads outside the slice; no allocation.

use super::checksum;
use super::ethernet::{self, ethertype, ETH_HDR_LEN};
use super::ipv4::Ipv4Packet;
use super::ipv6::Ipv6Packet;

/// Why a frame is not forwarded in L3 mode (the names are the drop
/// reasons of the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum L3Drop {
    /// No route covers the destination (and no default route).
    NoRoute,
    /// IPv4 TTL or IPv6 hop limit ≤ 1.
    TtlExceeded,
    Ipv4BadHeader,
    Ipv4BadChecksum,
    Ipv6BadHeader,
    /// Not IPv4 or IPv6 (or not a whole Ethernet header).
    NonIp,
    /// A source or destination no router forwards (RFC 1812 §5.3.7,
    /// RFC 4291): see [`martian_v4`] and [`martian_v6`].
    Martian,
}

impl L3Drop {
    /// How many reasons there are.
    pub const COUNT: usize = 7;

    /// All reasons, in [`index`](Self::index) order.
    pub const ALL: [L3Drop; Self::COUNT] = [
        L3Drop::NoRoute,
        L3Drop::TtlExceeded,
        L3Drop::Ipv4BadHeader,
        L3Drop::Ipv4BadChecksum,
        L3Drop::Ipv6BadHeader,
        L3Drop::NonIp,
        L3Drop::Martian,
    ];

    /// Position in [`ALL`](Self::ALL).
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The drop reason's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            L3Drop::NoRoute => "no_route",
            L3Drop::TtlExceeded => "ttl_exceeded",
            L3Drop::Ipv4BadHeader => "ipv4_bad_header",
            L3Drop::Ipv4BadChecksum => "ipv4_bad_checksum",
            L3Drop::Ipv6BadHeader => "ipv6_bad_header",
            L3Drop::NonIp => "l3_non_ip",
            L3Drop::Martian => "martian",
        }
    }
}

const _: () = {
    let mut i = 0;
    while i < L3Drop::COUNT {
        assert!(L3Drop::ALL[i].index() == i);
        i += 1;
    }
};

/// What [`inspect`] found in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3Head {
    /// A valid IPv4 header at `l3` whose destination (host byte order) is
    /// to be looked up; `ttl_proto` is its bytes 8–9 and `checksum` its
    /// header checksum (what [`forwarded_v4`] updates).
    V4 {
        l3: u8,
        dst: u32,
        ttl_proto: u16,
        checksum: u16,
    },
    /// A valid IPv6 header at `l3`; `hop_limit` its byte 7.
    V6 {
        l3: u8,
        dst: [u8; 16],
        hop_limit: u8,
    },
    /// Not forwarded.
    Drop(L3Drop),
}

/// Offset of the TTL in an IPv4 header (the protocol and the checksum
/// follow: bytes 8–11 are what a forwarded frame has rewritten).
pub const IPV4_TTL_OFFSET: usize = 8;
/// Offset of the hop limit in an IPv6 header.
pub const IPV6_HOP_LIMIT_OFFSET: usize = 7;

/// Checks the frame whose first bytes are `head` (of `frame_len` in all)
/// as a router does before forwarding it (see the module doc).
/// `checksum`: the NIC's verdict on the IPv4 header checksum (`Some(true)`
/// good, `Some(false)` bad), `None` to check it here.
///
/// ```
/// use tqfwd::wire::router::{inspect, L3Drop, L3Head};
/// let mut f = [0u8; 60];
/// f[12] = 0x08; // IPv4
/// f[14] = 0x45;
/// f[16..18].copy_from_slice(&46u16.to_be_bytes());
/// f[22] = 64; // TTL
/// f[23] = 17;
/// f[26..30].copy_from_slice(&[10, 0, 0, 1]);
/// f[30..34].copy_from_slice(&[198, 18, 0, 1]);
/// let c = tqfwd::wire::checksum::internet_checksum(&f[14..34]);
/// f[24..26].copy_from_slice(&c.to_be_bytes());
/// assert!(matches!(inspect(&f, 60, None), L3Head::V4 { dst: 0xc612_0001, .. }));
/// f[22] = 1;
/// assert_eq!(inspect(&f, 60, Some(true)), L3Head::Drop(L3Drop::TtlExceeded));
/// ```
#[inline]
pub fn inspect(head: &[u8], frame_len: usize, checksum: Option<bool>) -> L3Head {
    if head.len() < ETH_HDR_LEN {
        return L3Head::Drop(L3Drop::NonIp);
    }
    let len = frame_len.max(head.len());
    let (l2, truncated) = ethernet::walk_vlans(head);
    if truncated {
        return L3Head::Drop(L3Drop::NonIp);
    }
    let l3 = l2.l3_offset;
    // walk_vlans keeps l3 <= head.len() (at most 22).
    let ip = &head[l3..];
    match l2.ethertype {
        ethertype::IPV4 => inspect_v4(ip, len - l3, l3 as u8, checksum),
        ethertype::IPV6 => inspect_v6(ip, len - l3, l3 as u8),
        _ => L3Head::Drop(L3Drop::NonIp),
    }
}

#[inline]
fn inspect_v4(ip: &[u8], avail: usize, l3: u8, checksum: Option<bool>) -> L3Head {
    let Ok(p) = Ipv4Packet::new_checked_in(ip, avail) else {
        return L3Head::Drop(L3Drop::Ipv4BadHeader);
    };
    let good = match checksum {
        Some(v) => v,
        None => p.verify_checksum(),
    };
    if !good {
        return L3Head::Drop(L3Drop::Ipv4BadChecksum);
    }
    let dst = u32::from_be_bytes(p.dst_addr());
    if martian_v4(dst) | martian_v4(u32::from_be_bytes(p.src_addr())) {
        return L3Head::Drop(L3Drop::Martian);
    }
    let ttl = p.ttl();
    if ttl <= 1 {
        return L3Head::Drop(L3Drop::TtlExceeded);
    }
    L3Head::V4 {
        l3,
        dst,
        ttl_proto: u16::from_be_bytes([ttl, p.protocol()]),
        checksum: p.header_checksum(),
    }
}

#[inline]
fn inspect_v6(ip: &[u8], avail: usize, l3: u8) -> L3Head {
    let Ok(p) = Ipv6Packet::new_checked_in(ip, avail) else {
        return L3Head::Drop(L3Drop::Ipv6BadHeader);
    };
    let dst = p.dst_addr();
    if martian_v6(&dst) | martian_v6(&p.src_addr()) {
        return L3Head::Drop(L3Drop::Martian);
    }
    let hop_limit = p.hop_limit();
    if hop_limit <= 1 {
        return L3Head::Drop(L3Drop::TtlExceeded);
    }
    L3Head::V6 { l3, dst, hop_limit }
}

/// An IPv4 address (host byte order) no router forwards to or from
/// (RFC 1812 §5.3.7, §4.2.2.11): "this network" 0.0.0.0/8, loopback
/// 127.0.0.0/8, multicast 224.0.0.0/4 (tqfwd routes no multicast), and
/// 240.0.0.0/4 with the limited broadcast 255.255.255.255.
///
/// ```
/// use tqfwd::wire::router::martian_v4;
/// assert!(martian_v4(0xffff_ffff) && martian_v4(0x7f00_0001) && martian_v4(0xe000_00fb));
/// assert!(!martian_v4(0xc612_0001));
/// ```
#[inline]
pub fn martian_v4(addr: u32) -> bool {
    let first = addr >> 24;
    (first == 0) | (first == 127) | (first >= 224)
}

/// An IPv6 address no router forwards to or from (RFC 4291): the
/// unspecified `::` and loopback `::1`, link-local fe80::/10, and
/// multicast ff00::/8 (tqfwd routes no multicast).
///
/// ```
/// use tqfwd::wire::router::martian_v6;
/// let a = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
/// assert!(martian_v6(&a("ff02::1")) && martian_v6(&a("fe80::1")) && martian_v6(&a("::1")));
/// assert!(!martian_v6(&a("2001:db8::1")));
/// ```
#[inline]
pub fn martian_v6(addr: &[u8; 16]) -> bool {
    let top = u128::from_be_bytes(*addr);
    (top <= 1) | (addr[0] == 0xff) | (top >> 118 == 0x3fa)
}

/// The IPv4 header's bytes 8–11 once forwarded: the TTL one lower, the
/// protocol, and the header checksum updated incrementally for the new
/// TTL (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), `m` the old 16-bit word
/// holding the TTL, `m'` the new). `ttl_proto` and `checksum` as
/// [`inspect`] read them (the TTL is above 1).
///
/// ```
/// use tqfwd::wire::checksum::internet_checksum;
/// use tqfwd::wire::router::forwarded_v4;
/// let mut h = [0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
/// let c = internet_checksum(&h);
/// h[10..12].copy_from_slice(&c.to_be_bytes());
/// let out = forwarded_v4(u16::from_be_bytes([64, 17]), c);
/// h[8..12].copy_from_slice(&out);
/// assert_eq!(h[8], 63);
/// assert_eq!(internet_checksum(&h), 0); // a valid header sums to 0xffff
/// ```
#[inline]
pub fn forwarded_v4(ttl_proto: u16, checksum: u16) -> [u8; 4] {
    let new = ttl_proto.wrapping_sub(0x0100);
    let sum = u64::from(!checksum) + u64::from(!ttl_proto) + u64::from(new);
    let c = !checksum::fold(sum);
    let [t, p] = new.to_be_bytes();
    let [c0, c1] = c.to_be_bytes();
    [t, p, c0, c1]
}

/// The IPv6 hop limit once forwarded (above 1, as [`inspect`] checked).
///
/// ```
/// assert_eq!(tqfwd::wire::router::forwarded_v6(64), 63);
/// ```
#[inline]
pub fn forwarded_v6(hop_limit: u8) -> u8 {
    hop_limit - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::checksum::internet_checksum;

    fn v4(ttl: u8, total: u16, frame: usize) -> Vec<u8> {
        let mut f = vec![0u8; frame];
        f[12] = 0x08;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[22] = ttl;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[198, 18, 1, 7]);
        let c = internet_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    }

    fn v6(hop: u8, payload: u16, frame: usize) -> Vec<u8> {
        let mut f = vec![0u8; frame];
        f[12] = 0x86;
        f[13] = 0xdd;
        f[14] = 0x60;
        f[18..20].copy_from_slice(&payload.to_be_bytes());
        f[20] = 17;
        f[21] = hop;
        f[22..24].copy_from_slice(&[0x20, 0x01]);
        f[37] = 1;
        f[38..54].copy_from_slice(&[0x20, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
        f
    }

    #[test]
    fn ipv4_checks_in_order() {
        let f = v4(64, 46, 60);
        assert!(matches!(
            inspect(&f, 60, None),
            L3Head::V4 {
                l3: 14,
                dst: 0xc612_0107,
                ttl_proto: 0x4011,
                ..
            }
        ));
        // Total length past the frame; below the header.
        assert_eq!(
            inspect(&v4(64, 47, 60), 60, None),
            L3Head::Drop(L3Drop::Ipv4BadHeader)
        );
        assert_eq!(
            inspect(&v4(64, 19, 60), 60, None),
            L3Head::Drop(L3Drop::Ipv4BadHeader)
        );
        let mut bad = f.clone();
        bad[14] = 0x44; // IHL 4
        assert_eq!(inspect(&bad, 60, None), L3Head::Drop(L3Drop::Ipv4BadHeader));
        bad[14] = 0x55; // version 5
        assert_eq!(inspect(&bad, 60, None), L3Head::Drop(L3Drop::Ipv4BadHeader));
        let mut bad = f.clone();
        bad[24] ^= 1;
        assert_eq!(
            inspect(&bad, 60, None),
            L3Head::Drop(L3Drop::Ipv4BadChecksum)
        );
        // The NIC's verdict replaces the software check, both ways.
        assert!(matches!(inspect(&bad, 60, Some(true)), L3Head::V4 { .. }));
        assert_eq!(
            inspect(&f, 60, Some(false)),
            L3Head::Drop(L3Drop::Ipv4BadChecksum)
        );
        assert_eq!(
            inspect(&v4(1, 46, 60), 60, None),
            L3Head::Drop(L3Drop::TtlExceeded)
        );
        assert_eq!(
            inspect(&v4(0, 46, 60), 60, None),
            L3Head::Drop(L3Drop::TtlExceeded)
        );
        assert!(matches!(
            inspect(&v4(2, 46, 60), 60, None),
            L3Head::V4 { .. }
        ));
        // Cut short.
        assert_eq!(
            inspect(&f[..30], 30, None),
            L3Head::Drop(L3Drop::Ipv4BadHeader)
        );
    }

    #[test]
    fn ipv6_checks() {
        let f = v6(64, 8, 62);
        assert!(matches!(
            inspect(&f, 62, None),
            L3Head::V6 {
                l3: 14,
                hop_limit: 64,
                ..
            }
        ));
        assert_eq!(
            inspect(&v6(64, 9, 62), 62, None),
            L3Head::Drop(L3Drop::Ipv6BadHeader)
        );
        assert_eq!(
            inspect(&v6(1, 8, 62), 62, None),
            L3Head::Drop(L3Drop::TtlExceeded)
        );
        let mut bad = f.clone();
        bad[14] = 0x40;
        assert_eq!(inspect(&bad, 62, None), L3Head::Drop(L3Drop::Ipv6BadHeader));
        assert_eq!(
            inspect(&f[..40], 40, None),
            L3Head::Drop(L3Drop::Ipv6BadHeader)
        );
    }

    #[test]
    fn vlan_tags_are_walked_and_others_are_not_ip() {
        let f = v4(64, 46, 60);
        let mut t = f[..12].to_vec();
        t.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        t.extend_from_slice(&f[12..]);
        assert!(matches!(inspect(&t, 64, None), L3Head::V4 { l3: 18, .. }));
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(inspect(&arp, 60, None), L3Head::Drop(L3Drop::NonIp));
        assert_eq!(inspect(&f[..10], 10, None), L3Head::Drop(L3Drop::NonIp));
        assert_eq!(inspect(&t[..16], 16, None), L3Head::Drop(L3Drop::NonIp));
    }

    #[test]
    fn martians_are_dropped_before_the_ttl() {
        for (at, addr) in [(30, [224, 0, 0, 251]), (30, [255; 4]), (26, [127, 0, 0, 1])] {
            let mut m = v4(1, 46, 60);
            m[at..at + 4].copy_from_slice(&addr);
            m[24..26].copy_from_slice(&[0, 0]);
            let c = internet_checksum(&m[14..34]);
            m[24..26].copy_from_slice(&c.to_be_bytes());
            assert_eq!(
                inspect(&m, 60, None),
                L3Head::Drop(L3Drop::Martian),
                "{addr:?}"
            );
        }
        let f = v6(64, 8, 62);
        let mut m = f.clone();
        m[38] = 0xff;
        assert_eq!(inspect(&m, 62, None), L3Head::Drop(L3Drop::Martian));
        let mut m = f.clone();
        m[22..24].copy_from_slice(&[0xfe, 0x80]);
        assert_eq!(inspect(&m, 62, None), L3Head::Drop(L3Drop::Martian));
    }

    #[test]
    fn incremental_checksum_equals_a_full_one() {
        // Every TTL, and header words that make the sums carry.
        for ttl in 2..=255u8 {
            for fill in [0x00u8, 0x7f, 0xff] {
                let mut h = [fill; 20];
                h[0] = 0x45;
                h[8] = ttl;
                h[10] = 0;
                h[11] = 0;
                let c = internet_checksum(&h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
                let out = forwarded_v4(u16::from_be_bytes([h[8], h[9]]), c);
                h[8..12].copy_from_slice(&out);
                assert_eq!(h[8], ttl - 1);
                assert_eq!(internet_checksum(&h), 0, "ttl {ttl} fill {fill:#x}");
            }
        }
    }
}
