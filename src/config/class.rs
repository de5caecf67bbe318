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

use super::corelist::{parse_corelist, CorelistError};
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

/// Why a `--class` was refused, or a set of classes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassError {
    #[error("'{0}' is not NAME:MATCH:LCORES (e.g. kv:udp,dst-port=8080:2-3)")]
    NotNameMatchLcores(String),
    #[error("class name '{0}' must be 1-31 letters, digits, '_' or '-'")]
    BadName(String),
    #[error("class name 'default' is reserved for unclassified traffic")]
    ReservedName,
    /// The MATCH or LCORES part of class `name`.
    #[error("class {name}: {problem}")]
    Term { name: String, problem: TermError },
    #[error("{0} classes given; at most {MAX_CLASSES}")]
    TooMany(usize),
    #[error("lcore {lcore} is both a default worker and dedicated to class {class}: take it out of --worker-lcores")]
    DefaultWorker { lcore: u32, class: String },
    #[error("class name {0} used twice")]
    NameTwice(String),
    #[error("classes {a} and {b} overlap on lcore {lcore}: dedicated lcores must be disjoint")]
    Overlap { a: String, b: String, lcore: u32 },
    #[error("classes {a} and {b} match the same traffic")]
    SameMatch { a: String, b: String },
}

/// What is wrong in one class's MATCH or LCORES.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermError {
    #[error("empty match (e.g. udp,dst-port=8080)")]
    EmptyMatch,
    /// `protocol`, `src`, `dst`, `src-port` or `dst-port`.
    #[error("{0} given twice")]
    Twice(&'static str),
    #[error("proto '{0}' is not 0-255")]
    BadProto(String),
    #[error("'{0}' is not an IPv4 address")]
    BadAddress(String),
    #[error("'{0}' is not a prefix length")]
    BadPrefixLength(String),
    #[error("prefix length {0} is over 32")]
    PrefixTooLong(u8),
    #[error("port '{0}' is not 0-65535")]
    BadPort(String),
    #[error("unknown match term '{0}' (use udp, tcp, proto=N, src=A.B.C.D/LEN, dst=A.B.C.D/LEN, src-port=N, dst-port=N)")]
    UnknownTerm(String),
    #[error("a port match needs udp or tcp")]
    PortWithoutProtocol,
    #[error(transparent)]
    Lcores(#[from] CorelistError),
}

fn parse_prefix(v: &str) -> Result<([u8; 4], u8), TermError> {
    let (a, l) = v.split_once('/').unwrap_or((v, "32"));
    let ip: std::net::Ipv4Addr = a
        .parse()
        .map_err(|_| TermError::BadAddress(a.to_string()))?;
    let len: u8 = l
        .parse()
        .map_err(|_| TermError::BadPrefixLength(l.to_string()))?;
    if len > 32 {
        return Err(TermError::PrefixTooLong(len));
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
pub fn parse_class(s: &str) -> Result<ClassSpec, ClassError> {
    let mut parts = s.splitn(3, ':');
    let (name, match_text, m, l) = match (parts.next(), parts.next(), parts.next()) {
        (Some(n), Some(m), Some(l)) => (n.trim(), m, m.trim(), l.trim()),
        _ => return Err(ClassError::NotNameMatchLcores(s.to_string())),
    };
    if name.is_empty()
        || name.len() > 31
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ClassError::BadName(name.to_string()));
    }
    if name == "default" {
        return Err(ClassError::ReservedName);
    }
    let term = |problem: TermError| ClassError::Term {
        name: name.to_string(),
        problem,
    };
    let matcher = parse_match(m).map_err(term)?;
    let lcores = parse_corelist(l).map_err(|e| term(e.into()))?;
    Ok(ClassSpec {
        name: name.to_string(),
        match_text: match_text.to_string(),
        matcher,
        lcores,
    })
}

/// Parses the MATCH part of a class.
fn parse_match(m: &str) -> Result<FlowMatch, TermError> {
    let mut mt = FlowMatch::default();
    if m.is_empty() {
        return Err(TermError::EmptyMatch);
    }
    for term in m.split(',') {
        let term = term.trim();
        let (k, v) = term
            .split_once('=')
            .map(|(k, v)| (k.trim(), Some(v.trim())))
            .unwrap_or((term, None));
        match (k, v) {
            ("udp", None) | ("tcp", None) => {
                if mt.proto.is_some() {
                    return Err(TermError::Twice("protocol"));
                }
                mt.proto = Some(if k == "udp" { PROTO_UDP } else { PROTO_TCP });
            }
            ("proto", Some(v)) => {
                if mt.proto.is_some() {
                    return Err(TermError::Twice("protocol"));
                }
                mt.proto = Some(v.parse().map_err(|_| TermError::BadProto(v.to_string()))?);
            }
            ("src", Some(v)) | ("dst", Some(v)) => {
                let p = parse_prefix(v)?;
                let (slot, what) = if k == "src" {
                    (&mut mt.src, "src")
                } else {
                    (&mut mt.dst, "dst")
                };
                if slot.is_some() {
                    return Err(TermError::Twice(what));
                }
                *slot = Some(p);
            }
            ("src-port", Some(v)) | ("dst-port", Some(v)) => {
                let port: u16 = v.parse().map_err(|_| TermError::BadPort(v.to_string()))?;
                let (slot, what) = if k == "src-port" {
                    (&mut mt.src_port, "src-port")
                } else {
                    (&mut mt.dst_port, "dst-port")
                };
                if slot.is_some() {
                    return Err(TermError::Twice(what));
                }
                *slot = Some(port);
            }
            _ => return Err(TermError::UnknownTerm(term.to_string())),
        }
    }
    if (mt.src_port.is_some() || mt.dst_port.is_some())
        && !matches!(mt.proto, Some(PROTO_UDP) | Some(PROTO_TCP))
    {
        return Err(TermError::PortWithoutProtocol);
    }
    Ok(mt)
}

/// Checks a set of classes against each other and the default workers.
pub fn check_classes(classes: &[ClassSpec], default_workers: &[u32]) -> Result<(), ClassError> {
    if classes.len() > MAX_CLASSES {
        return Err(ClassError::TooMany(classes.len()));
    }
    for (i, a) in classes.iter().enumerate() {
        if let Some(&lcore) = a.lcores.iter().find(|l| default_workers.contains(l)) {
            return Err(ClassError::DefaultWorker {
                lcore,
                class: a.name.clone(),
            });
        }
        for b in &classes[i + 1..] {
            if a.name == b.name {
                return Err(ClassError::NameTwice(a.name.clone()));
            }
            if let Some(&lcore) = a.lcores.iter().find(|l| b.lcores.contains(l)) {
                return Err(ClassError::Overlap {
                    a: a.name.clone(),
                    b: b.name.clone(),
                    lcore,
                });
            }
            if a.matcher == b.matcher {
                return Err(ClassError::SameMatch {
                    a: a.name.clone(),
                    b: b.name.clone(),
                });
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
        // The lines as the user sees them.
        for (bad, line) in [
            ("kv:udp", "'kv:udp' is not NAME:MATCH:LCORES (e.g. kv:udp,dst-port=8080:2-3)"),
            ("k v:udp:1", "class name 'k v' must be 1-31 letters, digits, '_' or '-'"),
            ("default:udp:1", "class name 'default' is reserved for unclassified traffic"),
            ("kv::1", "class kv: empty match (e.g. udp,dst-port=8080)"),
            ("kv:udp,tcp:1", "class kv: protocol given twice"),
            ("kv:dst=1.2.3.4,dst=1.2.3.5:1", "class kv: dst given twice"),
            ("kv:udp,src-port=1,src-port=2:1", "class kv: src-port given twice"),
            ("kv:proto=300:1", "class kv: proto '300' is not 0-255"),
            ("kv:src=10.0.0.0/33:1", "class kv: prefix length 33 is over 32"),
            ("kv:src=10.0.0/8:1", "class kv: '10.0.0' is not an IPv4 address"),
            ("kv:src=10.0.0.0/x:1", "class kv: 'x' is not a prefix length"),
            ("kv:udp,dst-port=99999:1", "class kv: port '99999' is not 0-65535"),
            ("kv:sctp:1", "class kv: unknown match term 'sctp' (use udp, tcp, proto=N, src=A.B.C.D/LEN, dst=A.B.C.D/LEN, src-port=N, dst-port=N)"),
            ("kv:dst-port=80:1", "class kv: a port match needs udp or tcp"),
            ("kv:udp:x", "class kv: bad lcore list element 'x' (expected N or N-M, e.g. 1,3-4)"),
        ] {
            assert_eq!(parse_class(bad).unwrap_err().to_string(), line);
        }
    }

    #[test]
    fn overlaps_rejected() {
        let a = parse_class("a:udp:2-3").unwrap();
        let b = parse_class("b:tcp:3-4").unwrap();
        let c = parse_class("c:udp:5").unwrap();
        let a2 = parse_class("a:tcp,dst-port=1:6").unwrap();
        let e = |classes: &[ClassSpec], workers: &[u32]| {
            check_classes(classes, workers).unwrap_err().to_string()
        };
        assert_eq!(
            e(&[a.clone(), b], &[1]),
            "classes a and b overlap on lcore 3: dedicated lcores must be disjoint"
        );
        assert_eq!(
            e(&[a.clone(), c.clone()], &[1]),
            "classes a and c match the same traffic"
        );
        assert_eq!(e(&[a.clone(), a2], &[1]), "class name a used twice");
        assert_eq!(
            e(std::slice::from_ref(&a), &[2]),
            "lcore 2 is both a default worker and dedicated to class a: take it out of --worker-lcores"
        );
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
