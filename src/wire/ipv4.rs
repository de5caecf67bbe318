//! IPv4 header view.

use super::checksum;
use super::error::WireError;
use super::field::{bytes, checked_view, get16, Field};

/// Minimum IPv4 header length (IHL = 5).
pub const IPV4_MIN_HDR_LEN: usize = 20;

/// IP protocol numbers the parser distinguishes.
pub mod protocol {
    /// IPv6 hop-by-hop options extension header.
    pub const HOPOPT: u8 = 0;
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 routing extension header.
    pub const IPV6_ROUTE: u8 = 43;
    /// IPv6 fragment extension header.
    pub const IPV6_FRAG: u8 = 44;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// IPv6 "no next header".
    pub const IPV6_NONXT: u8 = 59;
    /// IPv6 destination options extension header.
    pub const IPV6_OPTS: u8 = 60;
}

/// The netmask of a prefix of `len` bits (0–32), host order.
pub fn prefix_mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - l.min(32) as u32),
    }
}

/// The IPv4 header's fields (options follow, up to IHL * 4).
mod field {
    use super::Field;

    /// Version (high nibble) and IHL (low nibble, in 32-bit words).
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    /// Flags (high 3 bits) and fragment offset (in 8-byte units).
    pub const FLG_OFF: Field = 6..8;
    /// The byte holding the flags.
    pub const FLAGS: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

checked_view!(
    /// Zero-copy view of an IPv4 packet, trimmed to its `total_length`
    /// (trailing Ethernet padding is excluded from [`payload`](Self::payload)).
    ///
    /// Only constructible through [`Ipv4Packet::new_checked`], which
    /// validates version, IHL and total length against the slice, or
    /// [`Ipv4Packet::new_checked_in`] for a packet only partly in view (the
    /// header always is), so accessors never read out of bounds.
    Ipv4Packet,
    trimmed
);

impl<'a> Ipv4Packet<'a> {
    /// Validates an IPv4 packet of `avail` bytes of which only the first
    /// `head.len()` are in view (a frame spread over several buffers): at
    /// least 20 bytes, version 4, IHL >= 5, the header (IHL*4 bytes) in
    /// `head`, IHL*4 <= total_length <= `avail`. Returns the total length.
    #[inline]
    pub fn check_len_in(head: &[u8], avail: usize) -> Result<usize, WireError> {
        let buf = head;
        let avail = avail.max(head.len());
        if avail < IPV4_MIN_HDR_LEN || buf.len() < IPV4_MIN_HDR_LEN {
            return Err(WireError::Truncated);
        }
        if buf[field::VER_IHL] >> 4 != 4 {
            return Err(WireError::Malformed);
        }
        let hdr_len = usize::from(buf[field::VER_IHL] & 0x0f) * 4;
        if hdr_len < IPV4_MIN_HDR_LEN {
            return Err(WireError::Malformed);
        }
        if hdr_len > buf.len() {
            return Err(WireError::Truncated);
        }
        let total = usize::from(get16(buf, field::LENGTH));
        if total < hdr_len {
            return Err(WireError::Malformed);
        }
        if total > avail {
            return Err(WireError::Truncated);
        }
        Ok(total)
    }

    /// Header length in bytes (IHL * 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buf[field::VER_IHL] & 0x0f) * 4
    }

    /// Total length field (the length of this view, unless it was built
    /// with [`new_checked_in`](Self::new_checked_in) over a partial head).
    #[inline]
    pub fn total_len(&self) -> u16 {
        get16(self.buf, field::LENGTH)
    }

    /// DSCP/ECN byte.
    #[inline]
    pub fn tos(&self) -> u8 {
        self.buf[field::DSCP_ECN]
    }

    /// Identification field.
    #[inline]
    pub fn ident(&self) -> u16 {
        get16(self.buf, field::IDENT)
    }

    /// Don't-fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.buf[field::FLAGS] & 0x40 != 0
    }

    /// More-fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.buf[field::FLAGS] & 0x20 != 0
    }

    /// Fragment offset in bytes (field value * 8).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (get16(self.buf, field::FLG_OFF) & 0x1fff) << 3
    }

    /// True for any fragment (first, middle or last).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        get16(self.buf, field::FLG_OFF) & 0x3fff != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buf[field::TTL]
    }

    /// Protocol number of the payload.
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buf[field::PROTOCOL]
    }

    /// Header checksum field.
    #[inline]
    pub fn header_checksum(&self) -> u16 {
        get16(self.buf, field::CHECKSUM)
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> [u8; 4] {
        bytes(self.buf, field::SRC_ADDR)
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 4] {
        bytes(self.buf, field::DST_ADDR)
    }

    /// Header bytes, options included.
    #[inline]
    pub fn header(&self) -> &'a [u8] {
        &self.buf[..self.header_len()]
    }

    /// Payload bytes in view (header_len..total_len, or to the end of the
    /// head given to [`new_checked_in`](Self::new_checked_in)).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[self.header_len()..]
    }

    /// True when the header checksum is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::sum(0, self.header())) == 0xffff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr() -> Vec<u8> {
        let mut h = vec![
            0x45, 0x00, 0x00, 0x1c, 0x12, 0x34, 0x20, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1,
            10, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let c = checksum::internet_checksum(&h[..20]);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    #[test]
    fn accessors() {
        let mut b = hdr();
        b.extend_from_slice(&[0xaa; 6]); // Ethernet padding
        let p = Ipv4Packet::new_checked(&b).unwrap();
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 28);
        assert_eq!(p.payload().len(), 8);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.more_frags());
        assert!(!p.dont_frag());
        assert_eq!(p.frag_offset(), 0);
        assert!(p.is_fragment());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), protocol::UDP);
        assert_eq!(p.src_addr(), [10, 0, 0, 1]);
        assert_eq!(p.dst_addr(), [10, 1, 0, 1]);
        assert!(p.verify_checksum());
        assert_eq!(p.tos(), 0);
        assert_ne!(p.header_checksum(), 0);
    }

    #[test]
    fn check_len_rules() {
        let b = hdr();
        for n in 0..20 {
            assert_eq!(Ipv4Packet::check_len(&b[..n]), Err(WireError::Truncated));
        }
        for n in 20..28 {
            // total_length 28 > available
            assert_eq!(Ipv4Packet::check_len(&b[..n]), Err(WireError::Truncated));
        }
        assert_eq!(Ipv4Packet::check_len(&b), Ok(28));
        let mut v = b.clone();
        v[0] = 0x65;
        assert_eq!(Ipv4Packet::check_len(&v), Err(WireError::Malformed));
        let mut v = b.clone();
        v[0] = 0x44;
        assert_eq!(Ipv4Packet::check_len(&v), Err(WireError::Malformed));
        let mut v = b.clone();
        v[0] = 0x48; // 32-byte header, only 28 available
        assert_eq!(Ipv4Packet::check_len(&v), Err(WireError::Truncated));
        let mut v = b.clone();
        v[2..4].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(Ipv4Packet::check_len(&v), Err(WireError::Malformed));
    }
}
