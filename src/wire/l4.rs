//! UDP and TCP header views.

use super::error::WireError;
use super::field::{be16, be32};

/// UDP header length.
pub const UDP_HDR_LEN: usize = 8;
/// Minimum TCP header length (data offset 5).
pub const TCP_MIN_HDR_LEN: usize = 20;

/// Zero-copy view of a UDP datagram (or the first fragment of one).
///
/// Only constructible through [`UdpPacket::new_checked`] or
/// [`UdpPacket::new_checked_fragment`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpPacket<'a> {
    buf: &'a [u8],
}

impl<'a> UdpPacket<'a> {
    /// Validates `buf` (the IP payload): 8-byte header present and the length
    /// field in `[8, buf.len()]`. Returns the length field.
    #[inline]
    pub fn check_len(buf: &[u8]) -> Result<usize, WireError> {
        Self::check_len_in(buf, buf.len())
    }

    /// [`check_len`](Self::check_len) for a payload of `avail` bytes of
    /// which only the first `head.len()` are in view (a frame spread over
    /// several buffers): the header is read from `head`, the length field
    /// is checked against `avail`.
    #[inline]
    pub fn check_len_in(head: &[u8], avail: usize) -> Result<usize, WireError> {
        let len = Self::check_header(head)?;
        if len > avail.max(head.len()) {
            return Err(WireError::Malformed);
        }
        Ok(len)
    }

    /// Like [`check_len`](Self::check_len) but for the first fragment of a
    /// fragmented datagram, whose length field covers the whole datagram and
    /// so may exceed `buf.len()`.
    #[inline]
    pub fn check_header(buf: &[u8]) -> Result<usize, WireError> {
        if buf.len() < UDP_HDR_LEN {
            return Err(WireError::Truncated);
        }
        let len = usize::from(be16(buf, 4));
        if len < UDP_HDR_LEN {
            return Err(WireError::Malformed);
        }
        Ok(len)
    }

    /// Wraps `buf` trimmed to the UDP length.
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        let len = Self::check_len(buf)?;
        Ok(UdpPacket { buf: &buf[..len] })
    }

    /// Wraps the first fragment of a datagram; the payload is whatever part of
    /// the datagram is present (at most the UDP length).
    #[inline]
    pub fn new_checked_fragment(buf: &'a [u8]) -> Result<Self, WireError> {
        let len = Self::check_header(buf)?;
        Ok(UdpPacket {
            buf: &buf[..len.min(buf.len())],
        })
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(self.buf, 0)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(self.buf, 2)
    }

    /// Length field (header + payload).
    #[inline]
    pub fn len_field(&self) -> u16 {
        be16(self.buf, 4)
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buf, 6)
    }

    /// Header + the payload bytes present.
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// Payload bytes present.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[UDP_HDR_LEN..]
    }
}

/// Zero-copy view of a TCP segment.
///
/// Only constructible through [`TcpPacket::new_checked`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPacket<'a> {
    buf: &'a [u8],
}

impl<'a> TcpPacket<'a> {
    /// Validates `buf` (the IP payload): 20 bytes present and data offset*4
    /// in `[20, buf.len()]`. Returns the header length.
    #[inline]
    pub fn check_len(buf: &[u8]) -> Result<usize, WireError> {
        Self::check_len_in(buf, buf.len())
    }

    /// [`check_len`](Self::check_len) for a payload of `avail` bytes of
    /// which only `head` is in view: the 20-byte header is read from
    /// `head`, the data offset is checked against `avail`.
    #[inline]
    pub fn check_len_in(head: &[u8], avail: usize) -> Result<usize, WireError> {
        if head.len() < TCP_MIN_HDR_LEN {
            return Err(WireError::Truncated);
        }
        let hdr_len = usize::from(head[12] >> 4) * 4;
        if hdr_len < TCP_MIN_HDR_LEN || hdr_len > avail.max(head.len()) {
            return Err(WireError::Malformed);
        }
        Ok(hdr_len)
    }

    /// Wraps `buf` after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::check_len(buf)?;
        Ok(TcpPacket { buf })
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(self.buf, 0)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(self.buf, 2)
    }

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        be32(self.buf, 4)
    }

    /// Acknowledgement number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        be32(self.buf, 8)
    }

    /// Header length in bytes (data offset * 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buf[12] >> 4) * 4
    }

    /// Flag bits (CWR..FIN in the low byte, NS in bit 8).
    #[inline]
    pub fn flags(&self) -> u16 {
        be16(self.buf, 12) & 0x01ff
    }

    /// Window.
    #[inline]
    pub fn window(&self) -> u16 {
        be16(self.buf, 14)
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buf, 16)
    }

    /// Payload after the header (options skipped).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[self.header_len()..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_rules() {
        let d = [0x04, 0x00, 0x23, 0x28, 0x00, 0x0a, 0xbe, 0xef, 1, 2, 0xff];
        for n in 0..8 {
            assert_eq!(UdpPacket::check_len(&d[..n]), Err(WireError::Truncated));
        }
        assert_eq!(UdpPacket::check_len(&d[..9]), Err(WireError::Malformed));
        let u = UdpPacket::new_checked(&d).unwrap();
        assert_eq!((u.src_port(), u.dst_port()), (1024, 9000));
        assert_eq!((u.len_field(), u.checksum()), (10, 0xbeef));
        assert_eq!(u.payload(), &[1, 2]);
        assert_eq!(u.as_bytes().len(), 10);
        let f = UdpPacket::new_checked_fragment(&d[..9]).unwrap();
        assert_eq!(f.payload(), &[1]);
        let mut bad = d;
        bad[5] = 7;
        assert_eq!(UdpPacket::check_len(&bad), Err(WireError::Malformed));
        assert_eq!(UdpPacket::check_header(&bad), Err(WireError::Malformed));
    }

    #[test]
    fn tcp_rules() {
        let mut d = [0u8; 28];
        d[0..2].copy_from_slice(&80u16.to_be_bytes());
        d[2..4].copy_from_slice(&443u16.to_be_bytes());
        d[4..8].copy_from_slice(&7u32.to_be_bytes());
        d[8..12].copy_from_slice(&9u32.to_be_bytes());
        d[12] = 0x60; // 24-byte header
        d[13] = 0x12; // SYN|ACK
        d[14..16].copy_from_slice(&1000u16.to_be_bytes());
        d[16..18].copy_from_slice(&0xabcdu16.to_be_bytes());
        for n in 0..20 {
            assert_eq!(TcpPacket::check_len(&d[..n]), Err(WireError::Truncated));
        }
        for n in 20..24 {
            assert_eq!(TcpPacket::check_len(&d[..n]), Err(WireError::Malformed));
        }
        let t = TcpPacket::new_checked(&d).unwrap();
        assert_eq!((t.src_port(), t.dst_port()), (80, 443));
        assert_eq!((t.seq_number(), t.ack_number()), (7, 9));
        assert_eq!((t.header_len(), t.flags(), t.window()), (24, 0x12, 1000));
        assert_eq!(t.checksum(), 0xabcd);
        assert_eq!(t.payload().len(), 4);
        d[12] = 0x40;
        assert_eq!(TcpPacket::check_len(&d), Err(WireError::Malformed));
    }
}
