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
//! Grammar (terms joined by `,`, all must hold; at least one term):
//!
//! ```text
//! --class NAME:MATCH:LCORES
//!   NAME    [A-Za-z0-9_-]{1,31}, unique
//!   MATCH   udp | tcp | proto=N | src=A.B.C.D/LEN | dst=A.B.C.D/LEN
//!           | src-port=N | dst-port=N          (ports need udp or tcp)
//!   LCORES  DPDK corelist (e.g. 2-3); disjoint from other classes and from
//!           the default workers
//! ```
//! Example: `--class kv:udp,dst-port=8080:2-3`.
//!
//! Matching never panics and never reads past the frame (it reads through
//! `wire::parse`'s offsets with bounds-checked slices). A frame spread over
//! several mbufs is matched on its head (`wire::parse_head`), which holds
//! every field a class can name.

use crate::cli::parse_corelist;
use crate::dpdk::flow::FlowPattern;
use crate::wire::ipv4::{prefix_mask, protocol};
use crate::wire::{self, FrameClass, FrameInfo};

/// Most classes a run may define.
pub const MAX_CLASSES: usize = 8;

pub const PROTO_TCP: u8 = protocol::TCP;
pub const PROTO_UDP: u8 = protocol::UDP;

/// What a class matches. `None` = any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Match {
    pub proto: Option<u8>,
    /// IPv4 (address, prefix length).
    pub src: Option<([u8; 4], u8)>,
    pub dst: Option<([u8; 4], u8)>,
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
}

/// One `--class`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSpec {
    pub name: String,
    /// The MATCH part as given, for reports.
    pub match_text: String,
    pub matcher: Match,
    pub lcores: Vec<u32>,
}

fn parse_prefix(v: &str) -> Result<([u8; 4], u8), String> {
    let (a, l) = v.split_once('/').unwrap_or((v, "32"));
    let ip: std::net::Ipv4Addr = a
        .parse()
        .map_err(|_| format!("'{a}' is not an IPv4 address"))?;
    let len: u8 = l
        .parse()
        .map_err(|_| format!("'{l}' is not a prefix length"))?;
    if len > 32 {
        return Err(format!("prefix length {len} is over 32"));
    }
    let masked = u32::from(ip) & prefix_mask(len);
    Ok((masked.to_be_bytes(), len))
}

/// Parses `NAME:MATCH:LCORES`.
pub fn parse_class(s: &str) -> Result<ClassSpec, String> {
    let mut parts = s.splitn(3, ':');
    let (name, match_text, m, l) = match (parts.next(), parts.next(), parts.next()) {
        (Some(n), Some(m), Some(l)) => (n.trim(), m, m.trim(), l.trim()),
        _ => {
            return Err(format!(
                "'{s}' is not NAME:MATCH:LCORES (e.g. kv:udp,dst-port=8080:2-3)"
            ))
        }
    };
    if name.is_empty()
        || name.len() > 31
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "class name '{name}' must be 1-31 letters, digits, '_' or '-'"
        ));
    }
    if name == "default" {
        return Err("class name 'default' is reserved for unclassified traffic".into());
    }
    let mut mt = Match::default();
    if m.is_empty() {
        return Err(format!(
            "class {name}: empty match (e.g. udp,dst-port=8080)"
        ));
    }
    for term in m.split(',') {
        let term = term.trim();
        let (k, v) = term
            .split_once('=')
            .map(|(k, v)| (k.trim(), Some(v.trim())))
            .unwrap_or((term, None));
        let dup = |what: &str| format!("class {name}: {what} given twice");
        match (k, v) {
            ("udp", None) | ("tcp", None) => {
                if mt.proto.is_some() {
                    return Err(dup("protocol"));
                }
                mt.proto = Some(if k == "udp" { PROTO_UDP } else { PROTO_TCP });
            }
            ("proto", Some(v)) => {
                if mt.proto.is_some() {
                    return Err(dup("protocol"));
                }
                mt.proto = Some(v.parse().map_err(|_| format!("class {name}: proto '{v}' is not 0-255"))?);
            }
            ("src", Some(v)) | ("dst", Some(v)) => {
                let p = parse_prefix(v).map_err(|e| format!("class {name}: {e}"))?;
                let slot = if k == "src" { &mut mt.src } else { &mut mt.dst };
                if slot.is_some() {
                    return Err(dup(k));
                }
                *slot = Some(p);
            }
            ("src-port", Some(v)) | ("dst-port", Some(v)) => {
                let port: u16 = v.parse().map_err(|_| format!("class {name}: port '{v}' is not 0-65535"))?;
                let slot = if k == "src-port" { &mut mt.src_port } else { &mut mt.dst_port };
                if slot.is_some() {
                    return Err(dup(k));
                }
                *slot = Some(port);
            }
            _ => {
                return Err(format!(
                    "class {name}: unknown match term '{term}' (use udp, tcp, proto=N, src=A.B.C.D/LEN, dst=A.B.C.D/LEN, src-port=N, dst-port=N)"
                ))
            }
        }
    }
    if (mt.src_port.is_some() || mt.dst_port.is_some())
        && !matches!(mt.proto, Some(PROTO_UDP) | Some(PROTO_TCP))
    {
        return Err(format!("class {name}: a port match needs udp or tcp"));
    }
    let lcores = parse_corelist(l).map_err(|e| format!("class {name}: {e}"))?;
    Ok(ClassSpec {
        name: name.to_string(),
        match_text: match_text.to_string(),
        matcher: mt,
        lcores,
    })
}

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

/// Checks a set of classes against each other and the default workers.
pub fn check_classes(classes: &[ClassSpec], default_workers: &[u32]) -> Result<(), String> {
    if classes.len() > MAX_CLASSES {
        return Err(format!(
            "{} classes given; at most {MAX_CLASSES}",
            classes.len()
        ));
    }
    for (i, a) in classes.iter().enumerate() {
        for l in &a.lcores {
            if default_workers.contains(l) {
                return Err(format!(
                    "lcore {l} is both a default worker and dedicated to class {}: take it out of --worker-lcores",
                    a.name
                ));
            }
        }
        for b in &classes[i + 1..] {
            if a.name == b.name {
                return Err(format!("class name {} used twice", a.name));
            }
            if let Some(l) = a.lcores.iter().find(|l| b.lcores.contains(l)) {
                return Err(format!(
                    "classes {} and {} overlap on lcore {l}: dedicated lcores must be disjoint",
                    a.name, b.name
                ));
            }
            if a.matcher == b.matcher {
                return Err(format!(
                    "classes {} and {} match the same traffic",
                    a.name, b.name
                ));
            }
        }
    }
    Ok(())
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
    fn grammar() {
        let c = parse_class("kv:udp,dst-port=8080:2-3").unwrap();
        assert_eq!(c.name, "kv");
        assert_eq!(c.matcher.proto, Some(PROTO_UDP));
        assert_eq!(c.matcher.dst_port, Some(8080));
        assert_eq!(c.lcores, vec![2, 3]);
        let d = parse_class("web:tcp,src=10.1.2.3/16,dst=192.168.0.0/24,src-port=1:1").unwrap();
        assert_eq!(d.matcher.src, Some(([10, 1, 0, 0], 16)));
        assert_eq!(d.matcher.dst, Some(([192, 168, 0, 0], 24)));
        assert_eq!(parse_class("p:proto=47:4").unwrap().matcher.proto, Some(47));
        for bad in [
            "kv:udp",
            "kv::1",
            ":udp:1",
            "kv:udp,dst-port=99999:1",
            "kv:dst-port=80:1",
            "kv:udp,udp:1",
            "kv:sctp:1",
            "kv:src=10.0.0.0/33:1",
            "kv:udp:x",
            "default:udp:1",
            "k v:udp:1",
        ] {
            assert!(parse_class(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn overlaps_rejected() {
        let a = parse_class("a:udp:2-3").unwrap();
        let b = parse_class("b:tcp:3-4").unwrap();
        let c = parse_class("c:udp:5").unwrap();
        let a2 = parse_class("a:tcp,dst-port=1:6").unwrap();
        assert!(check_classes(&[a.clone(), b], &[1])
            .unwrap_err()
            .contains("overlap on lcore 3"));
        assert!(check_classes(&[a.clone(), c.clone()], &[1])
            .unwrap_err()
            .contains("match the same traffic"));
        assert!(check_classes(&[a.clone(), a2], &[1])
            .unwrap_err()
            .contains("used twice"));
        assert!(check_classes(std::slice::from_ref(&a), &[2])
            .unwrap_err()
            .contains("both a default worker"));
        assert!(check_classes(&[a, parse_class("d:tcp:7").unwrap()], &[1]).is_ok());
    }

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
