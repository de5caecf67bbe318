//! IPv6 header view and bounded extension-header walk.

use super::error::WireError;
use super::field::{be16, bytes, checked_view, get16, get32, Field};
use super::ipv4::protocol;

/// Fixed IPv6 header length.
pub const IPV6_HDR_LEN: usize = 40;
/// The extension-header walk gives up (upper layer = the unwalked header,
/// which the classifier reports as other-IP) after this many headers.
pub const MAX_EXT_HEADERS: usize = 8;
/// IPv6 fragment extension header length.
const FRAG_HDR_LEN: usize = 8;

/// The IPv6 fixed header's fields.
mod field {
    use super::Field;

    /// Version (4 bits), traffic class (8), flow label (20).
    pub const VER_TC_FLOW: Field = 0..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
}

checked_view!(
    /// Zero-copy view of an IPv6 packet, trimmed to 40 + payload_length
    /// (trailing Ethernet padding excluded).
    ///
    /// Only constructible through [`Ipv6Packet::new_checked`], or
    /// [`Ipv6Packet::new_checked_in`] for a packet only partly in view (the
    /// 40-byte header always is).
    Ipv6Packet,
    trimmed
);

/// Where the upper-layer header of an IPv6 packet is, after walking the
/// extension headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Upper {
    /// Upper-layer protocol (next header of the last walked header). When
    /// the walk bound was hit this is the number of the unwalked extension
    /// header.
    pub protocol: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub offset: usize,
    /// A fragment header was seen.
    pub fragmented: bool,
    /// The fragment offset was non-zero: no upper-layer header here.
    pub non_first_fragment: bool,
}

impl<'a> Ipv6Packet<'a> {
    /// Validates an IPv6 packet of `avail` bytes of which only `head` is in
    /// view: the 40-byte header in `head`, version 6, 40 + payload_length
    /// <= `avail`. Returns 40 + payload_length.
    #[inline]
    pub fn check_len_in(head: &[u8], avail: usize) -> Result<usize, WireError> {
        let buf = head;
        let avail = avail.max(head.len());
        if buf.len() < IPV6_HDR_LEN {
            return Err(WireError::Truncated);
        }
        if buf[field::VER_TC_FLOW.start] >> 4 != 6 {
            return Err(WireError::Malformed);
        }
        let total = IPV6_HDR_LEN + usize::from(get16(buf, field::LENGTH));
        if total > avail {
            return Err(WireError::Truncated);
        }
        Ok(total)
    }

    /// Traffic class.
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        let vtf = get32(self.buf, field::VER_TC_FLOW);
        (vtf >> 20) as u8
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        get32(self.buf, field::VER_TC_FLOW) & 0x000f_ffff
    }

    /// Payload length field.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        get16(self.buf, field::LENGTH)
    }

    /// Next header of the fixed header.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buf[field::NXT_HDR]
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buf[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> [u8; 16] {
        bytes(self.buf, field::SRC_ADDR)
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 16] {
        bytes(self.buf, field::DST_ADDR)
    }

    /// Payload (extension headers included).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[IPV6_HDR_LEN..]
    }

    /// The packet in view (header + payload, no padding; only the part in
    /// view for [`new_checked_in`](Self::new_checked_in)).
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// Walks hop-by-hop, routing, destination-options and fragment headers,
    /// at most [`MAX_EXT_HEADERS`] of them. A header running past the payload
    /// is [`WireError::Truncated`]. Stops at a non-first fragment, and at a
    /// header that is inside the payload but not in view (a partial view
    /// from [`new_checked_in`](Self::new_checked_in)): then, as when the
    /// bound is hit, `protocol` is that unwalked header's number.
    #[inline]
    pub fn upper_layer(&self) -> Result<Ipv6Upper, WireError> {
        let b = self.buf;
        // The packet's end (the view may stop earlier, see new_checked_in).
        let end = IPV6_HDR_LEN + usize::from(self.payload_len());
        let mut nh = self.next_header();
        let mut off = IPV6_HDR_LEN;
        let mut fragmented = false;
        for _ in 0..MAX_EXT_HEADERS {
            match nh {
                protocol::HOPOPT | protocol::IPV6_ROUTE | protocol::IPV6_OPTS => {
                    if end < off + 2 {
                        return Err(WireError::Truncated);
                    }
                    if b.len() < off + 2 {
                        break; // present, but not in view
                    }
                    let len = (usize::from(b[off + 1]) + 1) * 8;
                    if end < off + len {
                        return Err(WireError::Truncated);
                    }
                    nh = b[off];
                    off += len;
                }
                protocol::IPV6_FRAG => {
                    if end < off + FRAG_HDR_LEN {
                        return Err(WireError::Truncated);
                    }
                    if b.len() < off + 4 {
                        break; // present, but not in view
                    }
                    let frag = be16(b, off + 2);
                    nh = b[off];
                    off += FRAG_HDR_LEN;
                    fragmented = true;
                    if frag >> 3 != 0 {
                        return Ok(Ipv6Upper {
                            protocol: nh,
                            offset: off,
                            fragmented,
                            non_first_fragment: true,
                        });
                    }
                }
                _ => break,
            }
        }
        Ok(Ipv6Upper {
            protocol: nh,
            offset: off,
            fragmented,
            non_first_fragment: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(nh: u8, payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0x60, 0x12, 0x34, 0x56];
        b.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        b.push(nh);
        b.push(64);
        b.extend_from_slice(&[0x20; 16]);
        b.extend_from_slice(&[0x30; 16]);
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn accessors() {
        let b = pkt(protocol::UDP, &[0; 8]);
        let p = Ipv6Packet::new_checked(&b).unwrap();
        assert_eq!(p.traffic_class(), 0x01);
        assert_eq!(p.flow_label(), 0x23456);
        assert_eq!(p.payload_len(), 8);
        assert_eq!(p.next_header(), 17);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), [0x20; 16]);
        assert_eq!(p.dst_addr(), [0x30; 16]);
        assert_eq!(p.payload().len(), 8);
        assert_eq!(p.as_bytes().len(), 48);
        let u = p.upper_layer().unwrap();
        assert_eq!((u.protocol, u.offset, u.fragmented), (17, 40, false));
    }

    #[test]
    fn check_len_rules() {
        let b = pkt(protocol::UDP, &[0; 8]);
        for n in 0..40 {
            assert_eq!(Ipv6Packet::check_len(&b[..n]), Err(WireError::Truncated));
        }
        for n in 40..48 {
            assert_eq!(Ipv6Packet::check_len(&b[..n]), Err(WireError::Truncated));
        }
        let mut v = b.clone();
        v.push(0);
        assert_eq!(Ipv6Packet::check_len(&v), Ok(48));
        v[0] = 0x40;
        assert_eq!(Ipv6Packet::check_len(&v), Err(WireError::Malformed));
    }

    #[test]
    fn ext_walk() {
        // HBH (8 bytes) -> dest opts (16 bytes) -> routing (8) -> UDP
        let mut pl = vec![protocol::IPV6_OPTS, 0, 0, 0, 0, 0, 0, 0];
        pl.extend_from_slice(&[protocol::IPV6_ROUTE, 1]);
        pl.extend_from_slice(&[0; 14]);
        pl.extend_from_slice(&[protocol::UDP, 0, 0, 0, 0, 0, 0, 0]);
        pl.extend_from_slice(&[0; 8]);
        let b = pkt(protocol::HOPOPT, &pl);
        let u = Ipv6Packet::new_checked(&b).unwrap().upper_layer().unwrap();
        assert_eq!((u.protocol, u.offset), (protocol::UDP, 40 + 32));

        // Ext header length running past the payload.
        let b = pkt(protocol::HOPOPT, &[protocol::UDP, 1, 0, 0, 0, 0, 0, 0]);
        let p = Ipv6Packet::new_checked(&b).unwrap();
        assert_eq!(p.upper_layer(), Err(WireError::Truncated));
        // Ext header with only one byte present.
        let b = pkt(protocol::HOPOPT, &[protocol::UDP]);
        let p = Ipv6Packet::new_checked(&b).unwrap();
        assert_eq!(p.upper_layer(), Err(WireError::Truncated));

        // First fragment, then non-first fragment.
        let b = pkt(protocol::IPV6_FRAG, &[protocol::UDP, 0, 0, 1, 0, 0, 0, 1]);
        let u = Ipv6Packet::new_checked(&b).unwrap().upper_layer().unwrap();
        assert!(u.fragmented && !u.non_first_fragment);
        assert_eq!((u.protocol, u.offset), (protocol::UDP, 48));
        let b = pkt(protocol::IPV6_FRAG, &[protocol::UDP, 0, 0, 8, 0, 0, 0, 1]);
        let u = Ipv6Packet::new_checked(&b).unwrap().upper_layer().unwrap();
        assert!(u.fragmented && u.non_first_fragment);
        let b = pkt(protocol::IPV6_FRAG, &[protocol::UDP, 0, 0, 8]);
        let p = Ipv6Packet::new_checked(&b).unwrap();
        assert_eq!(p.upper_layer(), Err(WireError::Truncated));

        // Walk bound: 9 chained dest-opts headers stop after 8.
        let mut pl = Vec::new();
        for _ in 0..9 {
            pl.extend_from_slice(&[protocol::IPV6_OPTS, 0, 0, 0, 0, 0, 0, 0]);
        }
        let b = pkt(protocol::IPV6_OPTS, &pl);
        let u = Ipv6Packet::new_checked(&b).unwrap().upper_layer().unwrap();
        assert_eq!(u.protocol, protocol::IPV6_OPTS);
        assert_eq!(u.offset, 40 + 64);
    }
}
