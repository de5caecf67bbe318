//! RFC 1071 Internet checksum helpers (ones' complement sum of 16-bit
//! big-endian words). Used to verify IPv4 header checksums and by the traffic
//! generator to build valid IPv4 / UDP / TCP headers. No allocation.

/// Adds `data` to a running ones' complement sum. An odd trailing byte is
/// padded with a zero byte, as RFC 1071 prescribes. The running sum is kept in
/// a `u64` so it cannot overflow for any slice that fits in memory.
#[inline]
pub fn sum(mut acc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(u16::from_be_bytes([*last, 0]));
    }
    acc
}

/// Folds a running sum to 16 bits (end-around carry). Not complemented.
#[inline]
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum field value for `data` (complement of the folded sum).
#[inline]
pub fn internet_checksum(data: &[u8]) -> u16 {
    !fold(sum(0, data))
}

/// Running sum of the IPv4 pseudo header (RFC 768 / RFC 793).
#[inline]
pub fn ipv4_pseudo_header(src: &[u8; 4], dst: &[u8; 4], protocol: u8, l4_len: u16) -> u64 {
    let acc = sum(0, src);
    let acc = sum(acc, dst);
    acc + u64::from(protocol) + u64::from(l4_len)
}

/// Running sum of the IPv6 pseudo header (RFC 8200 section 8.1).
#[inline]
pub fn ipv6_pseudo_header(src: &[u8; 16], dst: &[u8; 16], next_header: u8, l4_len: u32) -> u64 {
    let acc = sum(0, src);
    let acc = sum(acc, dst);
    acc + u64::from(l4_len >> 16) + u64::from(l4_len & 0xffff) + u64::from(next_header)
}

/// UDP/TCP checksum field value given a pseudo-header sum and the L4 segment
/// (header with a zeroed checksum field, plus payload). For UDP a computed
/// value of zero is transmitted as `0xffff` (zero means "no checksum").
#[inline]
pub fn l4_checksum(pseudo: u64, segment: &[u8], udp: bool) -> u16 {
    let c = !fold(sum(pseudo, segment));
    if udp && c == 0 {
        0xffff
    } else {
        c
    }
}

/// True when `segment` (checksum field included) sums to all-ones together
/// with the pseudo header, i.e. the transmitted checksum is correct.
#[inline]
pub fn l4_verify(pseudo: u64, segment: &[u8]) -> bool {
    fold(sum(pseudo, segment)) == 0xffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 example: 00 01 f2 03 f4 f5 f6 f7 -> sum 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(0, &data)), 0xddf2);
        assert_eq!(internet_checksum(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(0, &[0x12])), 0x1200);
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn known_ipv4_header() {
        // Classic example header (checksum 0xb861).
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet_checksum(&h), 0xb861);
        h[10] = 0xb8;
        h[11] = 0x61;
        assert_eq!(fold(sum(0, &h)), 0xffff);
    }

    #[test]
    fn empty_is_all_ones() {
        assert_eq!(internet_checksum(&[]), 0xffff);
    }
}
