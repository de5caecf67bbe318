//! The `--class NAME:MATCH:LCORES` grammar (ADQ-style application
//! classes; the match itself, in software and as an rte_flow rule, is
//! [`crate::wire::flow`]).
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

use super::corelist::parse_corelist;
use crate::wire::flow::FlowMatch;
use crate::wire::ipv4::{prefix_mask, protocol};

/// Most classes a run may define.
pub const MAX_CLASSES: usize = 8;

pub const PROTO_TCP: u8 = protocol::TCP;
pub const PROTO_UDP: u8 = protocol::UDP;

/// One `--class`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSpec {
    pub name: String,
    /// The MATCH part as given, for reports.
    pub match_text: String,
    pub matcher: FlowMatch,
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
    let mut mt = FlowMatch::default();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::gen::{self, Flow};
    use crate::wire::flow::classify;
    use crate::wire::FrameClass;

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
