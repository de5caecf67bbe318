//! Ethernet II header view, 802.1Q / 802.1ad VLAN tag walking, MAC addresses
//! and the in-place MAC rewrite used by the forwarder's TX path.

use core::fmt;
use core::str::FromStr;

use super::error::WireError;
use super::field::{be16, bytes, get16, Field};

/// Ethernet II header length (no VLAN tags, no FCS).
pub const ETH_HDR_LEN: usize = 14;

/// The Ethernet II header's fields, and a VLAN tag's from its start.
mod field {
    use super::Field;

    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    /// EtherType, or the TPID of a first VLAN tag.
    pub const ETHERTYPE: Field = 12..14;
    /// In a VLAN tag: the EtherType (or TPID) that follows the TCI.
    pub const TAG_ETHERTYPE: usize = 2;
}

/// EtherType values the parser knows about.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// Legacy (pre-802.1ad) QinQ outer tag.
    pub const QINQ_LEGACY: u16 = 0x9100;
}

/// Length of one VLAN tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;
/// At most this many VLAN tags are walked; a third tag is not looked into and
/// the frame is classified as non-IP.
pub const MAX_VLAN_TAGS: usize = 2;

/// True for the TPIDs that announce a VLAN tag (0x8100, 0x88a8, 0x9100).
#[inline]
pub fn is_vlan_tpid(ethertype: u16) -> bool {
    matches!(
        ethertype,
        ethertype::VLAN | ethertype::QINQ | ethertype::QINQ_LEGACY
    )
}

/// Zero-copy view of an Ethernet II header plus whatever follows it.
///
/// Only constructible through [`EthernetFrame::new_checked`], so every accessor
/// reads inside the validated 14 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthernetFrame<'a> {
    buf: &'a [u8],
}

/// Result of walking the L2 header (VLAN tags included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Header {
    /// Number of VLAN tags walked (0..=[`MAX_VLAN_TAGS`]).
    pub vlan_tags: u8,
    /// EtherType after the walked VLAN tags.
    pub ethertype: u16,
    /// Offset of the L3 header (14 + 4 * vlan_tags).
    pub l3_offset: usize,
}

impl<'a> EthernetFrame<'a> {
    /// Ok when `buf` holds at least an Ethernet header.
    #[inline]
    pub fn check_len(buf: &[u8]) -> Result<(), WireError> {
        if buf.len() < ETH_HDR_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Wraps `buf` after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        Self::check_len(buf)?;
        Ok(EthernetFrame { buf })
    }

    /// Destination MAC.
    #[inline]
    pub fn dst(&self) -> MacAddr {
        MacAddr(bytes(self.buf, field::DESTINATION))
    }

    /// Source MAC.
    #[inline]
    pub fn src(&self) -> MacAddr {
        MacAddr(bytes(self.buf, field::SOURCE))
    }

    /// Outer EtherType / TPID (bytes 12..14).
    #[inline]
    pub fn ethertype(&self) -> u16 {
        get16(self.buf, field::ETHERTYPE)
    }

    /// Everything after the 14-byte header (VLAN tags included).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[ETH_HDR_LEN..]
    }

    /// Walks up to [`MAX_VLAN_TAGS`] VLAN tags. A tag cut short by the end of
    /// the frame is [`WireError::Truncated`].
    #[inline]
    pub fn l2_header(&self) -> Result<L2Header, WireError> {
        let (h, truncated) = walk_vlans(self.buf);
        if truncated {
            Err(WireError::Truncated)
        } else {
            Ok(h)
        }
    }
}

/// VLAN walk shared with [`super::parse`]. Caller guarantees
/// `frame.len() >= ETH_HDR_LEN`. Returns the header reached so far and whether
/// a tag was truncated (then `vlan_tags` counts only complete tags).
#[inline]
pub(crate) fn walk_vlans(frame: &[u8]) -> (L2Header, bool) {
    let mut ethertype = get16(frame, field::ETHERTYPE);
    let mut off = ETH_HDR_LEN;
    let mut tags = 0u8;
    while is_vlan_tpid(ethertype) && usize::from(tags) < MAX_VLAN_TAGS {
        if frame.len() < off + VLAN_TAG_LEN {
            let h = L2Header {
                vlan_tags: tags,
                ethertype,
                l3_offset: off,
            };
            return (h, true);
        }
        ethertype = be16(frame, off + field::TAG_ETHERTYPE);
        off += VLAN_TAG_LEN;
        tags += 1;
    }
    let h = L2Header {
        vlan_tags: tags,
        ethertype,
        l3_offset: off,
    };
    (h, false)
}

/// The first 12 bytes of a frame from `src` to `dst`, as
/// [`rewrite_macs`] writes them.
#[inline]
pub fn mac_header(dst: &[u8; 6], src: &[u8; 6]) -> [u8; 12] {
    let mut h = [0; 12];
    h[..6].copy_from_slice(dst);
    h[6..].copy_from_slice(src);
    h
}

/// Writes `macs` (dst, then src: [`mac_header`]) into the first 12 bytes
/// of `frame`, in two stores. Returns false, writing nothing, when the
/// frame is shorter than an Ethernet header.
#[inline]
pub fn rewrite_macs(frame: &mut [u8], macs: &[u8; 12]) -> bool {
    if frame.len() < ETH_HDR_LEN {
        return false;
    }
    frame[..12].copy_from_slice(macs);
    true
}

/// A 48-bit MAC address. Parses `aa:bb:cc:dd:ee:ff` or `aa-bb-cc-dd-ee-ff`
/// (hex digits in either case); displays as lowercase colon form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// The six octets.
    #[inline]
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// Group (multicast/broadcast) bit set.
    #[inline]
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 1 != 0
    }
}

impl From<[u8; 6]> for MacAddr {
    fn from(b: [u8; 6]) -> Self {
        MacAddr(b)
    }
}

impl From<MacAddr> for [u8; 6] {
    fn from(m: MacAddr) -> Self {
        m.0
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// Error from parsing a [`MacAddr`]; its message quotes the input and the
/// expected form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacParseError {
    input: String,
}

impl fmt::Display for MacParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid MAC address '{}': expected six two-digit hex octets separated by ':' or '-', e.g. 02:00:00:00:00:01",
            self.input
        )
    }
}

impl std::error::Error for MacParseError {}

impl FromStr for MacAddr {
    type Err = MacParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || MacParseError {
            input: s.to_owned(),
        };
        let sep = if s.contains(':') { ':' } else { '-' };
        let mut out = [0u8; 6];
        let mut parts = s.split(sep);
        for o in &mut out {
            let p = parts.next().ok_or_else(err)?;
            if p.len() != 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err());
            }
            *o = u8::from_str_radix(p, 16).map_err(|_| err())?;
        }
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(MacAddr(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_parse_and_display() {
        let m: MacAddr = "AA:bb:0c:dd:ee:FF".parse().unwrap();
        assert_eq!(m.0, [0xaa, 0xbb, 0x0c, 0xdd, 0xee, 0xff]);
        assert_eq!(m.to_string(), "aa:bb:0c:dd:ee:ff");
        let d: MacAddr = "02-00-00-00-00-01".parse().unwrap();
        assert_eq!(d.to_string(), "02:00:00:00:00:01");
        assert_eq!(d.to_string().parse::<MacAddr>().unwrap(), d);
    }

    #[test]
    fn mac_parse_errors() {
        for bad in [
            "",
            "aa:bb:cc:dd:ee",
            "aa:bb:cc:dd:ee:ff:00",
            "aa:bb:cc:dd:ee:f",
            "aa:bb:cc:dd:ee:fff",
            "aa:bb-cc:dd:ee:ff",
            "gg:bb:cc:dd:ee:ff",
            "aabbccddeeff",
            "+a:bb:cc:dd:ee:ff",
            "aa:bb:cc:dd:ee:ff ",
        ] {
            let e = bad.parse::<MacAddr>().unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("invalid MAC address"), "{msg}");
            assert!(msg.contains(bad), "{msg}");
        }
    }

    #[test]
    fn rewrite_macs_writes_only_when_long_enough() {
        let dst = [1, 2, 3, 4, 5, 6];
        let src = [7, 8, 9, 10, 11, 12];
        let macs = mac_header(&dst, &src);
        for len in 0..14 {
            let mut f = vec![0xeeu8; len];
            assert!(!rewrite_macs(&mut f, &macs));
            assert!(f.iter().all(|&b| b == 0xee), "len {len} modified");
        }
        let mut f = vec![0xeeu8; 14];
        assert!(rewrite_macs(&mut f, &macs));
        assert_eq!(&f[..6], &dst);
        assert_eq!(&f[6..12], &src);
        assert_eq!(&f[12..], &[0xee, 0xee]);
    }

    #[test]
    fn ethernet_view() {
        assert_eq!(
            EthernetFrame::new_checked(&[0u8; 13]),
            Err(WireError::Truncated)
        );
        let mut f = [0u8; 22];
        f[..6].copy_from_slice(&[1; 6]);
        f[6..12].copy_from_slice(&[2; 6]);
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        f[16..18].copy_from_slice(&[0x88, 0xa8]); // inner TPID -> 2nd tag
        let e = EthernetFrame::new_checked(&f).unwrap();
        assert_eq!(e.dst(), MacAddr([1; 6]));
        assert_eq!(e.src(), MacAddr([2; 6]));
        assert_eq!(e.ethertype(), ethertype::VLAN);
        assert_eq!(e.payload().len(), 8);
        let h = e.l2_header().unwrap();
        assert_eq!(h.vlan_tags, 2);
        assert_eq!(h.l3_offset, 22);
        assert_eq!(h.ethertype, 0);
        let e = EthernetFrame::new_checked(&f[..21]).unwrap();
        assert_eq!(e.l2_header(), Err(WireError::Truncated));
    }
}
