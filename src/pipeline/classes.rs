//! ADQ-style application classes: `--class NAME:MATCH:LCORES`.
//!
//! A class names some traffic (a match on IP protocol, IPv4 source /
//! destination prefixes, L4 source / destination ports) and the worker
//! lcores dedicated to it. Traffic matching a class is handled only by that
//! class's workers; the rest goes to the default workers. On ports whose PMD
//! accepts `rte_flow` rules, each class also gets its own RX queue, polled by
//! the class's first lcore (see `dpdk::flow`); everywhere else RX lcores
//! classify in software with the same semantics.
//!
//! The grammar and its checks are in [`crate::config::class`].
//!
//! Matching never panics and never reads past the frame (it reads through
//! `wire::parse`'s offsets with bounds-checked slices). A frame spread over
//! several mbufs is matched on its head (`wire::parse_head`), which holds
//! every field a class can name.

pub use crate::config::class::{
    check_classes, parse_class, ClassSpec, Match, MAX_CLASSES, PROTO_TCP, PROTO_UDP,
};
use crate::dpdk::flow::FlowPattern;
use crate::wire::ipv4::prefix_mask;
use crate::wire::{self, FrameClass, FrameInfo};

/// The workers of one class (index 0 = default): worker indices
/// `start..start + count` among all workers, default workers first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerRange {
    pub start: u32,
    pub count: u32,
}

impl WorkerRange {
    pub fn contains(self, worker: u32) -> bool {
        worker >= self.start && worker < self.start + self.count
    }
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
                FrameClass::Udp => Some(PROTO_UDP),
                FrameClass::Tcp => Some(PROTO_TCP),
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

/// A class match at run time: against a frame's [`FlowKey`] in software, or as
/// an rte_flow pattern for the NIC.
impl Match {
    /// The same match as an rte_flow pattern.
    pub fn flow_pattern(&self) -> FlowPattern {
        FlowPattern {
            proto: self.proto,
            src: self.src,
            dst: self.dst,
            src_port: self.src_port,
            dst_port: self.dst_port,
        }
    }

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
pub fn classify(classes: &[Match], frame: &[u8]) -> usize {
    let info = wire::parse(frame);
    let key = flow_key(frame, &info);
    for (i, c) in classes.iter().enumerate() {
        if c.matches(&key) {
            return i + 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{self, Flow};

    #[test]
    fn classify_frames() {
        let kv = parse_class("kv:udp,dst-port=8080:2").unwrap().matcher;
        let net = parse_class("net:src=10.0.0.0/16:3").unwrap().matcher;
        let classes = [kv, net];
        let mut f8080 = Flow::nth(1);
        f8080.dst_port = 8080;
        let frame = gen::udp_frame(&f8080, 1, 0, 64, gen::DEFAULT_SRC_MAC, gen::DEFAULT_DST_MAC);
        assert_eq!(classify(&classes, &frame), 1);
        let other = gen::udp_frame(
            &Flow::nth(2),
            2,
            0,
            64,
            gen::DEFAULT_SRC_MAC,
            gen::DEFAULT_DST_MAC,
        );
        assert_eq!(classify(&classes, &other), 2, "10.0.x.y matches net");
        let mut far = Flow::nth(3);
        far.src_ip = [192, 0, 2, 1];
        let far = gen::udp_frame(&far, 3, 0, 64, gen::DEFAULT_SRC_MAC, gen::DEFAULT_DST_MAC);
        assert_eq!(classify(&classes, &far), 0);
        // Odd frames never panic and never match port terms unless UDP/TCP.
        for (_, f, class) in gen::odd_frames() {
            let c = classify(&[kv], &f);
            if c == 1 {
                assert_eq!(class, FrameClass::Udp);
            }
        }
        for len in 0..frame.len() {
            let _ = classify(&classes, &frame[..len]);
        }
    }
}
