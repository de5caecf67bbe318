//! Flow matches: the 5-tuple fields an application class names (IP
//! protocol, IPv4 source and destination prefixes, L4 ports), read from a
//! parsed frame ([`flow_key`]) and compared in software
//! ([`FlowMatch::matches`]). The same [`FlowMatch`] becomes an rte_flow
//! pattern for the NIC (`dpdk::flow`), so software and hardware steering
//! share one definition.
//!
//! Matching never panics and never reads past the frame (it reads through
//! [`parse`](super::parse)'s offsets with bounds-checked slices). A frame
//! spread over several buffers is matched on its head
//! ([`parse_head`](super::parse_head)), which holds every field a match
//! can name.

use super::ipv4::{prefix_mask, protocol};
use super::{FrameClass, FrameInfo};

/// What a match names; `None` = any. Prefixes are (address bytes in network
/// order, length), the address already masked to the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowMatch {
    pub proto: Option<u8>,
    pub src: Option<([u8; 4], u8)>,
    pub dst: Option<([u8; 4], u8)>,
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
}

/// The fields a class can match, read from a parsed frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowKey {
    pub proto: Option<u8>,
    pub src4: Option<[u8; 4]>,
    pub dst4: Option<[u8; 4]>,
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
}

/// Extracts the match fields; fields the frame does not carry are `None`.
#[inline]
pub fn flow_key(frame: &[u8], info: &FrameInfo) -> FlowKey {
    let mut k = FlowKey::default();
    if !matches!(
        info.class,
        FrameClass::Udp | FrameClass::Tcp | FrameClass::OtherIp
    ) {
        return k;
    }
    let l3 = info.l3_offset as usize;
    let Some(ip) = frame.get(l3..) else { return k };
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            k.proto = ip.get(9).copied();
            k.src4 = ip.get(12..16).and_then(|s| s.try_into().ok());
            k.dst4 = ip.get(16..20).and_then(|s| s.try_into().ok());
        }
        Some(6) => {
            // The L4 protocol after extension headers: known for UDP/TCP.
            k.proto = match info.class {
                FrameClass::Udp => Some(protocol::UDP),
                FrameClass::Tcp => Some(protocol::TCP),
                _ => ip.get(6).copied(),
            };
        }
        _ => return k,
    }
    if matches!(info.class, FrameClass::Udp | FrameClass::Tcp) {
        let l4 = info.l4_offset as usize;
        if let Some(p) = frame.get(l4..l4 + 4) {
            k.src_port = Some(u16::from_be_bytes([p[0], p[1]]));
            k.dst_port = Some(u16::from_be_bytes([p[2], p[3]]));
        }
    }
    k
}

impl FlowMatch {
    #[inline]
    pub fn matches(&self, k: &FlowKey) -> bool {
        fn prefix(want: Option<([u8; 4], u8)>, got: Option<[u8; 4]>) -> bool {
            match want {
                None => true,
                Some((net, len)) => got.is_some_and(|a| {
                    u32::from_be_bytes(a) & prefix_mask(len) == u32::from_be_bytes(net)
                }),
            }
        }
        (self.proto.is_none() || self.proto == k.proto)
            && prefix(self.src, k.src4)
            && prefix(self.dst, k.dst4)
            && (self.src_port.is_none() || self.src_port == k.src_port)
            && (self.dst_port.is_none() || self.dst_port == k.dst_port)
    }
}

/// The first class matching `frame` (its index + 1), or 0 for default.
#[inline]
pub fn classify(classes: &[FlowMatch], frame: &[u8]) -> usize {
    let info = super::parse(frame);
    let key = flow_key(frame, &info);
    for (i, c) in classes.iter().enumerate() {
        if c.matches(&key) {
            return i + 1;
        }
    }
    0
}
