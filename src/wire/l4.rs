//! UDP and TCP header views.

use super::error::WireError;
use super::field::{checked_view, get16, get32, Field};

/// UDP header length.
pub const UDP_HDR_LEN: usize = 8;
/// Minimum TCP header length (data offset 5).
pub const TCP_MIN_HDR_LEN: usize = 20;

/// The UDP header's fields.
mod udp_field {
    use super::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// The TCP header's fixed fields (options follow, up to the data offset).
mod tcp_field {
    use super::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    /// Data offset (high nibble of the first byte) and the flag bits.
    pub const FLAGS: Field = 12..14;
    /// The byte whose high nibble is the data offset, in 32-bit words.
    pub const DATA_OFF: usize = 12;
    pub const WIN_SIZE: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
}

/// The accessors UDP and TCP share, at the places `$field` names.
macro_rules! ports_and_checksum {
    ($field:ident) => {
        /// Source port.
        #[inline]
        pub fn src_port(&self) -> u16 {
            get16(self.buf, $field::SRC_PORT)
        }

        /// Destination port.
        #[inline]
        pub fn dst_port(&self) -> u16 {
            get16(self.buf, $field::DST_PORT)
        }

        /// Checksum field.
        #[inline]
        pub fn checksum(&self) -> u16 {
            get16(self.buf, $field::CHECKSUM)
        }
    };
}

checked_view!(
    /// Zero-copy view of a UDP datagram, trimmed to its length field (or
    /// the part of it in view, or the first fragment of one).
    ///
    /// Only constructible through [`UdpPacket::new_checked`],
    /// [`UdpPacket::new_checked_in`] or [`UdpPacket::new_checked_fragment`].
    UdpPacket,
    trimmed
);

impl<'a> UdpPacket<'a> {
    /// Validates a UDP datagram (the IP payload) of `avail` bytes of which
    /// only the first `head.len()` are in view (a frame spread over several
    /// buffers): the 8-byte header in `head`, the length field in
    /// `[8, avail]`. Returns the length field.
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
        let len = usize::from(get16(buf, udp_field::LENGTH));
        if len < UDP_HDR_LEN {
            return Err(WireError::Malformed);
        }
        Ok(len)
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

    ports_and_checksum!(udp_field);

    /// Length field (header + payload).
    #[inline]
    pub fn len_field(&self) -> u16 {
        get16(self.buf, udp_field::LENGTH)
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

checked_view!(
    /// Zero-copy view of a TCP segment (the whole IP payload).
    ///
    /// Only constructible through [`TcpPacket::new_checked`].
    TcpPacket
);

impl<'a> TcpPacket<'a> {
    /// Validates a TCP segment (the IP payload) of `avail` bytes of which
    /// only `head` is in view: the 20-byte header in `head`, data offset*4
    /// in `[20, avail]`. Returns the header length.
    #[inline]
    pub fn check_len_in(head: &[u8], avail: usize) -> Result<usize, WireError> {
        if head.len() < TCP_MIN_HDR_LEN {
            return Err(WireError::Truncated);
        }
        let hdr_len = usize::from(head[tcp_field::DATA_OFF] >> 4) * 4;
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

    ports_and_checksum!(tcp_field);

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        get32(self.buf, tcp_field::SEQ_NUM)
    }

    /// Acknowledgement number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        get32(self.buf, tcp_field::ACK_NUM)
    }

    /// Header length in bytes (data offset * 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buf[tcp_field::DATA_OFF] >> 4) * 4
    }

    /// Flag bits (CWR..FIN in the low byte, NS in bit 8).
    #[inline]
    pub fn flags(&self) -> u16 {
        get16(self.buf, tcp_field::FLAGS) & 0x01ff
    }

    /// Window.
    #[inline]
    pub fn window(&self) -> u16 {
        get16(self.buf, tcp_field::WIN_SIZE)
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
