//! `config::routes::parse` on arbitrary bytes (lossy UTF-8), with a few
//! port counts and route limits: never panics, an error is one line that
//! names the file and a line of it, a table keeps the promises of the
//! module docs, and `diff` of two tables adds up.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tqfwd::config::routes::{parse, Limits, RouteDiff, RouteTable, MAX_NEXT_HOPS};

const FILE: &str = "fuzz.routes";

/// (ports, route limit per family) the text is parsed with.
const RUNS: [(usize, usize); 4] = [(0, 0), (1, 1), (4, 16), (32, usize::MAX)];

fn checked(text: &str, n_ports: usize, max_routes: usize) -> Option<RouteTable> {
    let t = match parse(text, FILE, n_ports, Limits { max_routes }) {
        Ok(t) => t,
        Err(e) => {
            let m = e.to_string();
            assert!(!m.contains('\n'), "{m:?}");
            assert!(m.starts_with(&format!("{FILE}:")), "{m:?}");
            let (file, line) = e.line().expect("a parse error names a line");
            assert_eq!(file, FILE);
            assert!(line >= 1 && line as usize <= text.split('\n').count(), "{m:?}");
            return None;
        }
    };
    assert_eq!(t.source, FILE);
    assert!(t.next_hops.len() <= MAX_NEXT_HOPS);
    assert!(t.v4.len() <= max_routes && t.v6.len() <= max_routes);
    for h in &t.next_hops {
        assert!(usize::from(h.port) < n_ports, "{h:?}");
    }
    let hops = t.next_hops.len();
    let mut v4: Vec<_> = t.v4.iter().map(|r| (r.addr, r.len)).collect();
    for r in &t.v4 {
        assert!((1..=32).contains(&r.len) && usize::from(r.next_hop) < hops, "{r:?}");
        assert_eq!(r.addr & !(u32::MAX << (32 - r.len)), 0, "host bits: {r:?}");
    }
    let mut v6: Vec<_> = t.v6.iter().map(|r| (r.addr, r.len)).collect();
    for r in &t.v6 {
        let a = u128::from_be_bytes(r.addr);
        assert!((1..=128).contains(&r.len) && usize::from(r.next_hop) < hops, "{r:?}");
        assert_eq!(a.checked_shl(u32::from(r.len)).unwrap_or(0), 0, "host bits: {r:?}");
    }
    for d in [t.default_v4, t.default_v6].into_iter().flatten() {
        assert!(usize::from(d) < hops);
    }
    let (n4, n6) = (v4.len(), v6.len());
    v4.sort_unstable();
    v4.dedup();
    v6.sort_unstable();
    v6.dedup();
    assert_eq!((v4.len(), v6.len()), (n4, n6), "a prefix twice");
    Some(t)
}

fn check_diff(a: &RouteTable, b: &RouteTable) {
    let d = a.diff(b);
    let (na, nb) = (a.len_v4() + a.len_v6(), b.len_v4() + b.len_v6());
    assert!(d.removed + d.changed <= na && d.added + d.changed <= nb, "{d:?}");
    // Prefixes in both, counted from either side.
    assert_eq!(na - d.removed, nb - d.added, "{d:?}");
    let back = b.diff(a);
    assert_eq!((back.added, back.removed, back.changed), (d.removed, d.added, d.changed));
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut tables: Vec<RouteTable> = RUNS
        .iter()
        .filter_map(|&(ports, max)| checked(&text, ports, max))
        .collect();
    // Two halves of the file: two tables that differ, to diff.
    let lines: Vec<&str> = text.split('\n').collect();
    let (head, tail) = lines.split_at(lines.len() / 2);
    tables.extend(checked(&head.join("\n"), 32, usize::MAX));
    tables.extend(checked(&tail.join("\n"), 32, usize::MAX));
    for a in &tables {
        assert_eq!(a.diff(a), RouteDiff::default());
        for b in &tables {
            check_diff(a, b);
        }
    }
});
