//! The route file: IPv4 and IPv6 prefixes and the next hop of each, read
//! into a [`RouteTable`] that the caller builds its FIBs from. Pure Rust,
//! no DPDK: it runs at start and on a reload, before anything is changed.
//!
//! # Grammar
//! One statement a line, IPv4 and IPv6 mixed in any order. `#` starts a
//! comment, on its own line or after a statement; blank lines are ignored.
//! Fields are separated by runs of white space (space, tab, CR, VT, FF, as
//! C's `isspace`), also before the first field; a CRLF line end is fine.
//!
//! ```text
//! # DPDK l3fwd's form: the next hop is output port P, to its peer's MAC.
//! R198.18.0.0/24 0
//! R2001:200::/64 1
//! # tqfwd's form: a named next hop (port and destination MAC) ...
//! nexthop gw1 port 0 mac 02:00:00:00:00:01
//! # ... and routes through it; a name may be used before its line.
//! route 10.0.0.0/8 via gw1
//! route ::/0 via gw2
//! nexthop gw2 port 1 mac 02:00:00:00:00:02
//! ```
//!
//! A prefix is `ADDRESS/LENGTH`: IPv6 when the address has a `:`, else
//! IPv4; the address as `inet_pton` reads it (dotted quad without leading
//! zeros; RFC 4291 text), the length at most 32 or 128. `0.0.0.0/0` and
//! `::/0` are the default routes ([`RouteTable::default_v4`],
//! [`RouteTable::default_v6`]), in either form. A next hop name is letters,
//! digits, `_`, `-` and `.`.
//!
//! # l3fwd's files, as DPDK 22.11 reads them
//! `examples/l3fwd/lpm_route_parse.c` (`lpm_add_rules`, `is_bypass_line`,
//! `parse_ipv4_addr_mask`, `GET_CB_FIELD`): a line whose first byte is `#`
//! or that is all white space is skipped; every other line must start with
//! `R`; after it `strtok_r(" \t\n")` takes two fields, the prefix and the
//! port; the prefix is split at `/`, the address goes to `inet_pton`, and
//! the length (0–32 or 0–128) and the port (0–255) to `strtoul(.., 0)`,
//! which must end at the field's end. Its `--rule_ipv4` and `--rule_ipv6`
//! files, also concatenated, parse here with the same meaning, numbers
//! included: `strtoul` with base 0 reads `0x18` as 24 and `030` as octal
//! 24, so an `R` line's length and port are read the same way;
//! tqfwd's own lines take decimal only, without leading zeros.
//!
//! Where tqfwd differs, it refuses what l3fwd would silently do otherwise,
//! or accepts what l3fwd refuses:
//! - refused: host bits set (l3fwd's LPM masks them away), a prefix given
//!   twice (LPM keeps the last), a port the run does not have (l3fwd skips
//!   the route), text after the port that is not a `#` comment, and an
//!   empty or second `/` piece (`strtok` drops both).
//! - accepted: white space before `R` or `#`, trailing comments, CRLF
//!   line ends, any line length (l3fwd's `fgets` cuts at `LINE_MAX`), a
//!   default route (l3fwd's LPM add refuses depth 0), and a file without
//!   routes (l3fwd refuses it; the caller decides what an empty table
//!   means).
//!
//! # Guarantees
//! - [`parse`] never panics and reads each line once: 1,000,000 IPv4 and
//!   200,000 IPv6 lines take a fraction of a second in release (the test
//!   `scale_1m_v4_200k_v6` measures it). Duplicates are found at the end,
//!   in a sorted copy of each family's routes (a hash map of a million
//!   prefixes misses the cache on nearly every insert: twice the time);
//!   memory is the table's and that copy.
//! - An error is one line, `FILE:LINE: <problem>; <what to change>` (for
//!   the file itself `FILE ...; ...`), naming the first bad line of the
//!   file: a duplicate prefix is bad at its second line, a name never
//!   defined at its first use once the file is read to its end.
//!   [`RouteError::line`] gives file and line.
//! - A table holds no duplicate prefix, no host bits, no port at or above
//!   `n_ports`, at most [`Limits::max_routes`] routes per family (default
//!   routes aside) and at most [`MAX_NEXT_HOPS`] next hops; every route's
//!   next hop index is in [`RouteTable::next_hops`].
//! - [`load`] reads only a regular file of at most [`ROUTES_MAX_BYTES`]
//!   ([`read_regular`]): a FIFO or `/dev/zero` is refused without reading.
//!
//! Uses [`super::file`] (the bounded read) and `wire` (MAC addresses,
//! netmasks); no other module of `config` uses it.

use super::file::{read_regular, ReadError};
use crate::wire::ipv4::prefix_mask;
use crate::wire::{MacAddr, MacParseError};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// Largest route file read: 2,000,000 l3fwd IPv4 lines are about 34 MiB.
pub const ROUTES_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Next hops a table holds at most (each is a value of a 2-byte FIB next
/// hop, below its miss value).
pub const MAX_NEXT_HOPS: usize = 32_000;
/// Routes per address family unless --max-routes says otherwise.
pub use super::cli::DEFAULT_MAX_ROUTES;

/// Where a route's packets go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHop {
    /// The name (`nexthop NAME`), or "port P" for l3fwd's form.
    pub name: String,
    /// The output port, below the run's port count.
    pub port: u16,
    /// The destination MAC; None: the output port's peer MAC (l3fwd's form).
    pub mac: Option<MacAddr>,
}

/// One route of a family: `addr/len` goes to `next_hops[next_hop]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<A> {
    /// The prefix's address, host bits clear.
    pub addr: A,
    /// The prefix length, 1..=32 or 1..=128.
    pub len: u8,
    /// Index into [`RouteTable::next_hops`].
    pub next_hop: u16,
    /// 1-based line in the file.
    pub line: u32,
}

/// A parsed route file. Routes are in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTable {
    /// The file's name as errors and logs show it.
    pub source: String,
    /// Every next hop the routes use, in the order the file first names
    /// them: l3fwd-form ports get one "port P" entry each, shared by all
    /// their routes; named next hops the routes do not use are kept (they
    /// were checked like the others).
    pub next_hops: Vec<NextHop>,
    /// IPv4 routes, address in host byte order, len 1..=32 (the default
    /// route is not here).
    pub v4: Vec<Route<u32>>,
    /// IPv6 routes, address in network byte order, len 1..=128 (the
    /// default route is not here).
    pub v6: Vec<Route<[u8; 16]>>,
    /// The next hop of 0.0.0.0/0, if the file has it.
    pub default_v4: Option<u16>,
    /// The next hop of ::/0, if the file has it.
    pub default_v6: Option<u16>,
}

/// What a file may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Routes per address family, the default route not counted (it is no
    /// FIB rule): more is refused, naming `--max-routes`.
    pub max_routes: usize,
}

impl Default for Limits {
    /// [`DEFAULT_MAX_ROUTES`].
    fn default() -> Self {
        Limits {
            max_routes: DEFAULT_MAX_ROUTES,
        }
    }
}

/// What a reload changes, counted in prefixes of both families.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RouteDiff {
    /// Prefixes only in the new table.
    pub added: usize,
    /// Prefixes only in the old table.
    pub removed: usize,
    /// Prefixes in both whose next hop differs in port or MAC (a renamed
    /// next hop is no change).
    pub changed: usize,
}

/// Why a route file was refused: one line, `FILE:LINE: <problem>; <what
/// to change>`, or `FILE ...` for the file as a whole.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// Opening or reading failed.
    #[error("{file}: cannot read the route file: {source}; check the path and its permissions")]
    Unreadable {
        file: String,
        source: std::io::Error,
    },
    /// A FIFO, a device, a directory: what it is (`a FIFO`, ...).
    #[error("{file} is {kind}, not a regular file; give a route file")]
    NotRegular { file: String, kind: &'static str },
    /// Longer than [`ROUTES_MAX_BYTES`].
    #[error("{file} is larger than the limit of {} MiB for a route file; check the path, or drop comments and unused lines", ROUTES_MAX_BYTES >> 20)]
    TooLarge { file: String },
    /// The first byte that is not UTF-8 is on `line`.
    #[error("{file}:{line}: not UTF-8 text; a route file is ASCII text: fix that line")]
    NotUtf8 { file: String, line: u32 },
    /// A line that is no statement, or a statement with a wrong field:
    /// `problem` says which and what to write.
    #[error("{file}:{line}: {problem}")]
    Malformed {
        file: String,
        line: u32,
        problem: String,
    },
    /// An address that is none, a length that is no number or too long.
    #[error("{file}:{line}: bad prefix '{prefix}': {problem}; write ADDRESS/LENGTH, e.g. 198.18.0.0/24 or 2001:db8::/32 (length at most 32 for IPv4, 128 for IPv6)")]
    BadPrefix {
        file: String,
        line: u32,
        prefix: String,
        problem: String,
    },
    /// `prefix` (as written) has bits set past its length; `fixed` is the
    /// prefix meant.
    #[error("{file}:{line}: {prefix} has host bits set; write {fixed}")]
    HostBits {
        file: String,
        line: u32,
        prefix: String,
        fixed: String,
    },
    /// The same family, address and length as on line `first`.
    #[error(
        "{file}:{line}: {prefix} is already routed on line {first}; keep one of the two lines"
    )]
    Duplicate {
        file: String,
        line: u32,
        prefix: String,
        first: u32,
    },
    /// `port` is not below the run's `n_ports`.
    #[error("{file}:{line}: port {port} is not a port of this run, which has {}; use one of those or remove the line (l3fwd skips such routes, tqfwd refuses them)", ports_text(*.n_ports))]
    UnknownPort {
        file: String,
        line: u32,
        port: u64,
        n_ports: usize,
    },
    /// `route ... via NAME` with no `nexthop NAME` line; `line` is its
    /// first use.
    #[error("{file}:{line}: next hop '{name}' is not defined; add a line `nexthop {name} port <port> mac <MAC>` or fix the name")]
    UnknownNextHop {
        file: String,
        line: u32,
        name: String,
    },
    /// A second `nexthop NAME`; the first is on line `first`.
    #[error("{file}:{line}: next hop '{name}' is already defined on line {first}; remove one definition or rename it")]
    NextHopTwice {
        file: String,
        line: u32,
        name: String,
        first: u32,
    },
    /// The MAC of a `nexthop` line.
    #[error("{file}:{line}: {source}")]
    BadMac {
        file: String,
        line: u32,
        source: MacParseError,
    },
    /// Route `limit + 1` of `family` (IPv4, IPv6) is on `line`.
    #[error("{file}:{line}: more than {limit} {family} routes; that is the limit, --max-routes raises it")]
    TooManyRoutes {
        file: String,
        line: u32,
        family: &'static str,
        limit: usize,
    },
    /// Next hop [`MAX_NEXT_HOPS`] + 1 is on `line`.
    #[error("{file}:{line}: more than {MAX_NEXT_HOPS} next hops, the most a table holds; share next hops between routes")]
    TooManyNextHops { file: String, line: u32 },
}

impl RouteError {
    /// The file and 1-based line at fault, where one line is.
    ///
    /// ```
    /// use tqfwd::config::routes::{parse, Limits};
    /// let e = parse("R198.18.0.0/24 0\nR198.18.0.0/24 9\n", "r.txt", 2, Limits::default())
    ///     .unwrap_err();
    /// assert_eq!(e.line(), Some(("r.txt".to_string(), 2)));
    /// ```
    pub fn line(&self) -> Option<(String, u32)> {
        self.at().map(|(file, line)| (file.to_string(), line))
    }

    /// The line at fault, if one is.
    fn line_number(&self) -> Option<u32> {
        self.at().map(|(_, line)| line)
    }

    fn at(&self) -> Option<(&str, u32)> {
        use RouteError::*;
        match self {
            Unreadable { .. } | NotRegular { .. } | TooLarge { .. } => None,
            NotUtf8 { file, line }
            | Malformed { file, line, .. }
            | BadPrefix { file, line, .. }
            | HostBits { file, line, .. }
            | Duplicate { file, line, .. }
            | UnknownPort { file, line, .. }
            | UnknownNextHop { file, line, .. }
            | NextHopTwice { file, line, .. }
            | BadMac { file, line, .. }
            | TooManyRoutes { file, line, .. }
            | TooManyNextHops { file, line } => Some((file, *line)),
        }
    }
}

/// "ports 0-3", "port 0", "no ports".
fn ports_text(n: usize) -> String {
    match n {
        0 => "no ports".into(),
        1 => "port 0".into(),
        n => format!("ports 0-{}", n - 1),
    }
}

/// Reads the route file at `path` (bounded, see the module doc) and parses
/// it as [`parse`] does, naming it as given in errors and in
/// [`RouteTable::source`].
///
/// ```
/// use tqfwd::config::routes::{load, Limits, RouteError};
/// let path = std::env::temp_dir().join(format!("tqfwd-doc-routes-{}", std::process::id()));
/// std::fs::write(&path, "R198.18.0.0/24 0\n").unwrap();
/// let t = load(&path, 1, Limits::default()).unwrap();
/// assert_eq!(t.len_v4(), 1);
/// std::fs::remove_file(&path).unwrap();
/// // Not a regular file: refused before any read.
/// let e = load("/dev/zero".as_ref(), 1, Limits::default()).unwrap_err();
/// assert!(matches!(e, RouteError::NotRegular { .. }), "{e}");
/// ```
pub fn load(path: &Path, n_ports: usize, limits: Limits) -> Result<RouteTable, RouteError> {
    let file = path.to_string_lossy().into_owned();
    let bytes = match read_regular(path, ROUTES_MAX_BYTES) {
        Ok(b) => b,
        Err(ReadError::Io(source)) => return Err(RouteError::Unreadable { file, source }),
        Err(ReadError::NotRegular(kind)) => return Err(RouteError::NotRegular { file, kind }),
        Err(ReadError::TooLarge(_)) => return Err(RouteError::TooLarge { file }),
    };
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            let line = line_number(bytes[..e.valid_up_to()].split(|&b| b == b'\n').count());
            return Err(RouteError::NotUtf8 { file, line });
        }
    };
    parse(text, &file, n_ports, limits)
}

/// Parses the route file `text` (grammar in the module doc) for a run of
/// `n_ports` ports; `source` names the file in errors and in
/// [`RouteTable::source`].
///
/// ```
/// use tqfwd::config::routes::{parse, Limits};
/// let text = "\
/// ## l3fwd's form
/// R198.18.0.0/24 0
/// R2001:200::/64 1   # trailing comment
/// route 0.0.0.0/0 via gw   # used before its definition
/// nexthop gw port 1 mac 02:00:00:00:00:01
/// ";
/// let t = parse(text, "routes.txt", 2, Limits::default()).unwrap();
/// assert_eq!((t.v4[0].addr, t.v4[0].len, t.v4[0].line), (0xc612_0000, 24, 2));
/// let hop = &t.next_hops[usize::from(t.v4[0].next_hop)];
/// assert_eq!((hop.name.as_str(), hop.port, hop.mac), ("port 0", 0, None));
/// let gw = &t.next_hops[usize::from(t.default_v4.unwrap())];
/// assert_eq!((gw.port, gw.mac.unwrap().to_string()), (1, "02:00:00:00:00:01".to_string()));
/// let e = parse("R198.18.0.1/24 0\n", "routes.txt", 2, Limits::default()).unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "routes.txt:1: 198.18.0.1/24 has host bits set; write 198.18.0.0/24"
/// );
/// ```
pub fn parse(
    text: &str,
    source: &str,
    n_ports: usize,
    limits: Limits,
) -> Result<RouteTable, RouteError> {
    let mut p = Parser {
        file: source,
        n_ports,
        limits,
        next_hops: Vec::new(),
        hop_lines: Vec::new(),
        by_name: HashMap::new(),
        by_port: Vec::new(),
        v4: Vec::new(),
        v6: Vec::new(),
        default_v4: None,
        default_v6: None,
    };
    for (i, raw) in text.split('\n').enumerate() {
        if let Err(e) = p.statement(raw, line_number(i + 1)) {
            return Err(p.first_error(e));
        }
    }
    p.finish()
}

impl RouteTable {
    /// IPv4 routes counted (the default route included), for the start line.
    ///
    /// ```
    /// use tqfwd::config::routes::{parse, Limits};
    /// let t = parse("R0.0.0.0/0 0\nR10.0.0.0/8 0\n", "r", 1, Limits::default()).unwrap();
    /// assert_eq!((t.len_v4(), t.v4.len()), (2, 1));
    /// ```
    pub fn len_v4(&self) -> usize {
        self.v4.len() + usize::from(self.default_v4.is_some())
    }

    /// IPv6 routes counted (the default route included), for the start line.
    ///
    /// ```
    /// use tqfwd::config::routes::{parse, Limits};
    /// let t = parse("R::/0 0\nR2001:db8::/32 0\nR10.0.0.0/8 0\n", "r", 1, Limits::default())
    ///     .unwrap();
    /// assert_eq!((t.len_v6(), t.v6.len()), (2, 1));
    /// ```
    pub fn len_v6(&self) -> usize {
        self.v6.len() + usize::from(self.default_v6.is_some())
    }

    /// What a reload changes: prefixes (default routes included) only in
    /// `new` (added), only in `self` (removed), in both with a different
    /// next hop (port or MAC; its name does not count) (changed).
    ///
    /// ```
    /// use tqfwd::config::routes::{parse, Limits, RouteDiff};
    /// let old = parse("R10.0.0.0/8 0\nR10.1.0.0/16 0\n", "r", 2, Limits::default()).unwrap();
    /// let new = parse("R10.0.0.0/8 1\nR10.2.0.0/16 0\nR::/0 0\n", "r", 2, Limits::default())
    ///     .unwrap();
    /// assert_eq!(old.diff(&new), RouteDiff { added: 2, removed: 1, changed: 1 });
    /// assert_eq!(new.diff(&new), RouteDiff::default());
    /// ```
    pub fn diff(&self, new: &RouteTable) -> RouteDiff {
        let mut d = RouteDiff::default();
        diff_routes(self, &self.v4, new, &new.v4, &mut d);
        diff_routes(self, &self.v6, new, &new.v6, &mut d);
        for (old_hop, new_hop) in [
            (self.default_v4, new.default_v4),
            (self.default_v6, new.default_v6),
        ] {
            match (old_hop, new_hop) {
                (Some(a), Some(b)) if self.hop_of(a) != new.hop_of(b) => d.changed += 1,
                (Some(_), None) => d.removed += 1,
                (None, Some(_)) => d.added += 1,
                _ => {}
            }
        }
        d
    }

    /// What a next hop index stands for in a diff: port and MAC.
    fn hop_of(&self, i: u16) -> Option<(u16, Option<MacAddr>)> {
        self.next_hops.get(usize::from(i)).map(|h| (h.port, h.mac))
    }
}

/// Adds to `d` what changes from routes `old` (of table `a`) to `new` (of
/// table `b`), one family: both sorted by prefix, then merged.
fn diff_routes<A: Copy + Ord>(
    a: &RouteTable,
    old: &[Route<A>],
    b: &RouteTable,
    new: &[Route<A>],
    d: &mut RouteDiff,
) {
    let (old, new) = (by_prefix(old), by_prefix(new));
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (old.get(i), new.get(j)) {
        match (x.addr, x.len).cmp(&(y.addr, y.len)) {
            Ordering::Less => {
                d.removed += 1;
                i += 1;
            }
            Ordering::Greater => {
                d.added += 1;
                j += 1;
            }
            Ordering::Equal => {
                if a.hop_of(x.next_hop) != b.hop_of(y.next_hop) {
                    d.changed += 1;
                }
                i += 1;
                j += 1;
            }
        }
    }
    d.removed += old.len() - i;
    d.added += new.len() - j;
}

/// `routes` sorted by prefix, then line: for [`first_duplicate`] and
/// [`RouteTable::diff`], which then read them in order (see the module
/// doc for why not a hash map).
fn by_prefix<A: Copy + Ord>(routes: &[Route<A>]) -> Vec<Route<A>> {
    let mut sorted = routes.to_vec();
    sorted.sort_unstable_by_key(|r| (r.addr, r.len, r.line));
    sorted
}

/// The first route (in file order) whose prefix an earlier line has, and
/// the first line that has it.
fn first_duplicate<A: Copy + Ord>(routes: &[Route<A>]) -> Option<(Route<A>, u32)> {
    by_prefix(routes)
        .windows(2)
        .filter(|w| (w[0].addr, w[0].len) == (w[1].addr, w[1].len))
        // In a run of three or more, the second's pair has the smallest
        // line past the first.
        .map(|w| (w[1], w[0].line))
        .min_by_key(|(r, _)| r.line)
}

/// A line number as the table keeps it. Past 4 billion lines (far over
/// [`ROUTES_MAX_BYTES`], so only a text given to [`parse`]) every line
/// is numbered `u32::MAX`.
fn line_number(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// White space between fields: C's `isspace` but for `\n`, which ends
/// the line.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

/// The fields of a line: what lies between runs of [`is_blank`] bytes.
/// Bytes, not chars: each blank is ASCII, so every cut is at a char
/// boundary, and no UTF-8 is decoded (which took almost half the time of
/// a parse).
struct Fields<'a>(&'a str);

impl<'a> Iterator for Fields<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let b = self.0.as_bytes();
        let start = b.iter().position(|&c| !is_blank(c))?;
        let end = b[start..]
            .iter()
            .position(|&c| is_blank(c))
            .map_or(b.len(), |n| start + n);
        let field = &self.0[start..end];
        self.0 = &self.0[end..];
        Some(field)
    }
}

/// The next `N` fields, when they are the last.
fn exactly<'a, const N: usize>(mut f: Fields<'a>) -> Option<[&'a str; N]> {
    let mut out = [""; N];
    for o in &mut out {
        *o = f.next()?;
    }
    f.next().is_none().then_some(out)
}

/// `s` for a message: quoted characters escaped (so the message stays one
/// line), cut after 64 characters.
fn shown(s: &str) -> String {
    match s.char_indices().nth(64) {
        Some((cut, _)) => format!("{}...", s[..cut].escape_debug()),
        None => s.escape_debug().to_string(),
    }
}

/// A number as l3fwd reads a prefix length or a port: C's `strtoul(s,
/// &end, 0)` with the whole field consumed. Decimal, `0x` hex or
/// `0`-led octal, after an optional sign (`-` negates modulo 2^64, as
/// `strtoul` does, so `-0` is 0 and `-1` too large for anything); None
/// where l3fwd refuses the field: no digits, another character after
/// them, more than 64 bits.
fn c_number(s: &str) -> Option<u64> {
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = match s.as_bytes() {
        [b'0', b'x' | b'X', d, ..] if d.is_ascii_hexdigit() => (16, &s[2..]),
        [b'0', ..] => (8, s),
        _ => (10, s),
    };
    let v = digits_value(digits, radix)?;
    Some(if negative { v.wrapping_neg() } else { v })
}

/// A number as tqfwd's own lines write it: decimal digits, no sign, no
/// leading zero (l3fwd would read `010` as 8).
fn decimal(s: &str) -> Option<u64> {
    if s.len() > 1 && s.starts_with('0') {
        return None;
    }
    digits_value(s, 10)
}

/// The value of `digits` (at least one) in `radix`, if it fits 64 bits.
fn digits_value(digits: &str, radix: u32) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.chars().try_fold(0u64, |v, c| {
        v.checked_mul(u64::from(radix))?
            .checked_add(u64::from(c.to_digit(radix)?))
    })
}

/// A next hop name: letters, digits, `_`, `-`, `.`.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// How a line writes its numbers.
#[derive(Clone, Copy)]
enum Numbers {
    /// l3fwd's `R` lines: [`c_number`].
    C,
    /// tqfwd's lines: [`decimal`].
    Decimal,
}

impl Numbers {
    fn read(self, s: &str) -> Option<u64> {
        match self {
            Numbers::C => c_number(s),
            Numbers::Decimal => decimal(s),
        }
    }
}

/// A checked prefix, host bits clear.
#[derive(Clone, Copy)]
enum Prefix {
    V4(u32, u8),
    V6(u128, u8),
}

/// The netmask of an IPv6 prefix of `len` bits (0–128).
fn mask_v6(len: u8) -> u128 {
    match len {
        0 => 0,
        l => u128::MAX << (128 - u32::from(l.min(128))),
    }
}

fn prefix_text(p: Prefix) -> String {
    match p {
        Prefix::V4(a, l) => format!("{}/{l}", Ipv4Addr::from(a)),
        Prefix::V6(a, l) => format!("{}/{l}", Ipv6Addr::from(a)),
    }
}

/// Where a next hop was defined and first used.
#[derive(Clone, Copy)]
struct HopLines {
    /// The `nexthop` line (for a port of l3fwd's form: its first route);
    /// None while a name is only used.
    defined: Option<u32>,
    first_use: u32,
}

/// The table being read, and what checks it.
struct Parser<'a> {
    file: &'a str,
    n_ports: usize,
    limits: Limits,
    next_hops: Vec<NextHop>,
    /// Per next hop.
    hop_lines: Vec<HopLines>,
    by_name: HashMap<&'a str, u16>,
    /// Per port, the index of its "port P" next hop.
    by_port: Vec<Option<u16>>,
    v4: Vec<Route<u32>>,
    v6: Vec<Route<[u8; 16]>>,
    /// (next hop, line).
    default_v4: Option<(u16, u32)>,
    default_v6: Option<(u16, u32)>,
}

impl<'a> Parser<'a> {
    fn malformed(&self, line: u32, problem: String) -> RouteError {
        RouteError::Malformed {
            file: self.file.to_string(),
            line,
            problem,
        }
    }

    /// One line of the file, without its `\n`.
    fn statement(&mut self, raw: &'a str, line: u32) -> Result<(), RouteError> {
        let code = match raw.bytes().position(|b| b == b'#') {
            Some(at) => &raw[..at],
            None => raw,
        };
        let mut f = Fields(code);
        let Some(first) = f.next() else {
            return Ok(());
        };
        if let Some(after) = first.strip_prefix('R') {
            return self.l3fwd_route(after, f, line);
        }
        match first {
            "route" => self.route(f, line),
            "nexthop" => self.nexthop(f, line),
            word => Err(self.unknown_word(word, line)),
        }
    }

    fn unknown_word(&self, word: &str, line: u32) -> RouteError {
        self.malformed(
            line,
            format!(
                "'{}' starts no statement; write R<prefix> <port> (l3fwd's form), route <prefix> via <name>, or nexthop <name> port <port> mac <MAC>",
                shown(word)
            ),
        )
    }

    /// `R<prefix> <port>`: `after` what follows the `R` in its field (the
    /// prefix, or nothing when a blank follows), `f` the other fields.
    fn l3fwd_route(&mut self, after: &str, mut f: Fields<'a>, line: u32) -> Result<(), RouteError> {
        if !after.is_empty() && after.bytes().all(|b| b.is_ascii_alphabetic()) {
            // `Route ...`, `Rule ...`: a word, not an address.
            return Err(self.unknown_word(&format!("R{after}"), line));
        }
        let prefix = if after.is_empty() {
            f.next()
        } else {
            Some(after)
        };
        let (Some(prefix), Some(port)) = (prefix, f.next()) else {
            return Err(self.malformed(
                line,
                "an l3fwd route needs a prefix and a port; write R<prefix> <port>, e.g. R198.18.0.0/24 0".into(),
            ));
        };
        if let Some(extra) = f.next() {
            return Err(self.malformed(
                line,
                format!(
                    "'{}' after the port (l3fwd ignores it); remove it or start it with #",
                    shown(extra)
                ),
            ));
        }
        let prefix = self.prefix(prefix, Numbers::C, line)?;
        let port = Numbers::C
            .read(port)
            .ok_or_else(|| self.not_a_port(port, line))?;
        let hop = self.port_hop(port, line)?;
        self.add(prefix, hop, line)
    }

    /// `route PREFIX via NAME`.
    fn route(&mut self, f: Fields<'a>, line: u32) -> Result<(), RouteError> {
        let Some([prefix, "via", name]) = exactly(f) else {
            return Err(self.malformed(
                line,
                "a route is route <prefix> via <name>, e.g. route 198.18.0.0/24 via gw1; fix the line".into(),
            ));
        };
        let prefix = self.prefix(prefix, Numbers::Decimal, line)?;
        self.check_name(name, line)?;
        let hop = match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                let hop = NextHop {
                    name: name.to_string(),
                    port: 0,
                    mac: None,
                };
                let i = self.new_hop(hop, None, line)?;
                self.by_name.insert(name, i);
                i
            }
        };
        self.add(prefix, hop, line)
    }

    /// `nexthop NAME port P mac MAC`.
    fn nexthop(&mut self, f: Fields<'a>, line: u32) -> Result<(), RouteError> {
        let Some([name, "port", port, "mac", mac]) = exactly(f) else {
            return Err(self.malformed(
                line,
                "a next hop is nexthop <name> port <port> mac <MAC>, e.g. nexthop gw1 port 0 mac 02:00:00:00:00:01; fix the line".into(),
            ));
        };
        self.check_name(name, line)?;
        let port = Numbers::Decimal
            .read(port)
            .ok_or_else(|| self.not_a_port(port, line))?;
        let port = self.port(port, line)?;
        let mac: MacAddr = mac.parse().map_err(|source| RouteError::BadMac {
            file: self.file.to_string(),
            line,
            source,
        })?;
        let hop = NextHop {
            name: name.to_string(),
            port,
            mac: Some(mac),
        };
        match self.by_name.get(name) {
            Some(&i) => {
                let lines = &mut self.hop_lines[usize::from(i)];
                if let Some(first) = lines.defined {
                    return Err(RouteError::NextHopTwice {
                        file: self.file.to_string(),
                        line,
                        name: name.to_string(),
                        first,
                    });
                }
                lines.defined = Some(line);
                self.next_hops[usize::from(i)] = hop;
            }
            None => {
                let i = self.new_hop(hop, Some(line), line)?;
                self.by_name.insert(name, i);
            }
        }
        Ok(())
    }

    fn check_name(&self, name: &str, line: u32) -> Result<(), RouteError> {
        if is_name(name) {
            return Ok(());
        }
        Err(self.malformed(
            line,
            format!(
                "'{}' is no next hop name; use letters, digits, '_', '-' and '.'",
                shown(name)
            ),
        ))
    }

    fn not_a_port(&self, port: &str, line: u32) -> RouteError {
        self.malformed(
            line,
            format!(
                "port '{}' is not a number; write the output port's number, e.g. 0",
                shown(port)
            ),
        )
    }

    /// `port` if the run has it.
    fn port(&self, port: u64, line: u32) -> Result<u16, RouteError> {
        match u16::try_from(port) {
            Ok(p) if usize::from(p) < self.n_ports => Ok(p),
            _ => Err(RouteError::UnknownPort {
                file: self.file.to_string(),
                line,
                port,
                n_ports: self.n_ports,
            }),
        }
    }

    /// The "port P" next hop of l3fwd's form, made on its first use.
    fn port_hop(&mut self, port: u64, line: u32) -> Result<u16, RouteError> {
        let p = self.port(port, line)?;
        let slot = usize::from(p);
        if let Some(Some(i)) = self.by_port.get(slot) {
            return Ok(*i);
        }
        let hop = NextHop {
            name: format!("port {p}"),
            port: p,
            mac: None,
        };
        let i = self.new_hop(hop, Some(line), line)?;
        if self.by_port.len() <= slot {
            self.by_port.resize(slot + 1, None);
        }
        self.by_port[slot] = Some(i);
        Ok(i)
    }

    /// Appends a next hop, if the table has room.
    fn new_hop(
        &mut self,
        hop: NextHop,
        defined: Option<u32>,
        line: u32,
    ) -> Result<u16, RouteError> {
        let i = self.next_hops.len();
        if i >= MAX_NEXT_HOPS {
            return Err(RouteError::TooManyNextHops {
                file: self.file.to_string(),
                line,
            });
        }
        self.next_hops.push(hop);
        self.hop_lines.push(HopLines {
            defined,
            first_use: line,
        });
        // MAX_NEXT_HOPS < 2^16.
        Ok(i as u16)
    }

    /// `ADDRESS/LENGTH`, its numbers read as `numbers` says.
    fn prefix(&self, text: &str, numbers: Numbers, line: u32) -> Result<Prefix, RouteError> {
        let bad = |problem: String| RouteError::BadPrefix {
            file: self.file.to_string(),
            line,
            prefix: shown(text),
            problem,
        };
        let Some((addr, len_text)) = text.split_once('/') else {
            return Err(bad("no /length".into()));
        };
        let v6 = addr.contains(':');
        let not_address = || bad(format!("'{}' is not an IPv4 or IPv6 address", shown(addr)));
        let (family, max) = if v6 { ("IPv6", 128) } else { ("IPv4", 32) };
        let len = match numbers.read(len_text) {
            Some(l) if l <= max => l as u8,
            Some(l) => {
                return Err(bad(format!(
                    "an {family} prefix is at most {max} bits long, not {l}"
                )))
            }
            None => {
                return Err(bad(format!(
                    "the length '{}' is not a number",
                    shown(len_text)
                )))
            }
        };
        let host_bits = |fixed: Prefix| RouteError::HostBits {
            file: self.file.to_string(),
            line,
            prefix: shown(text),
            fixed: prefix_text(fixed),
        };
        if v6 {
            let a = u128::from(addr.parse::<Ipv6Addr>().map_err(|_| not_address())?);
            let net = a & mask_v6(len);
            if a != net {
                return Err(host_bits(Prefix::V6(net, len)));
            }
            Ok(Prefix::V6(a, len))
        } else {
            let a = u32::from(addr.parse::<Ipv4Addr>().map_err(|_| not_address())?);
            let net = a & prefix_mask(len);
            if a != net {
                return Err(host_bits(Prefix::V4(net, len)));
            }
            Ok(Prefix::V4(a, len))
        }
    }

    /// Adds the route `prefix` via next hop `hop`. Duplicates are found
    /// at the end ([`first_duplicate`]), but for default routes.
    fn add(&mut self, prefix: Prefix, hop: u16, line: u32) -> Result<(), RouteError> {
        let max = self.limits.max_routes;
        let (full, family) = match prefix {
            Prefix::V4(_, 0) | Prefix::V6(_, 0) => {
                let slot = match prefix {
                    Prefix::V4(..) => &mut self.default_v4,
                    Prefix::V6(..) => &mut self.default_v6,
                };
                if let Some((_, first)) = *slot {
                    return Err(RouteError::Duplicate {
                        file: self.file.to_string(),
                        line,
                        prefix: prefix_text(prefix),
                        first,
                    });
                }
                *slot = Some((hop, line));
                return Ok(());
            }
            // Pushed also past the limit, so that a duplicate there is
            // reported as one.
            Prefix::V4(a, len) => {
                self.v4.push(route(a, len, hop, line));
                (self.v4.len() > max, "IPv4")
            }
            Prefix::V6(a, len) => {
                self.v6.push(route(a.to_be_bytes(), len, hop, line));
                (self.v6.len() > max, "IPv6")
            }
        };
        if full {
            return Err(RouteError::TooManyRoutes {
                file: self.file.to_string(),
                line,
                family,
                limit: max,
            });
        }
        Ok(())
    }

    /// The first prefix given twice, if any.
    fn duplicate(&self) -> Option<RouteError> {
        let v4 =
            first_duplicate(&self.v4).map(|(r, first)| (r.line, first, Prefix::V4(r.addr, r.len)));
        let v6 = first_duplicate(&self.v6).map(|(r, first)| {
            (
                r.line,
                first,
                Prefix::V6(u128::from_be_bytes(r.addr), r.len),
            )
        });
        let (line, first, prefix) = v4.into_iter().chain(v6).min_by_key(|d| d.0)?;
        Some(RouteError::Duplicate {
            file: self.file.to_string(),
            line,
            prefix: prefix_text(prefix),
            first,
        })
    }

    /// `e`, or a duplicate prefix on an earlier line (or on its line: a
    /// duplicate past the route limit is one).
    fn first_error(&self, e: RouteError) -> RouteError {
        match self.duplicate() {
            Some(d) if d.line_number() <= e.line_number() => d,
            _ => e,
        }
    }

    /// The table, once no prefix is there twice and every name used is
    /// defined.
    fn finish(self) -> Result<RouteTable, RouteError> {
        let undefined = self
            .hop_lines
            .iter()
            .zip(&self.next_hops)
            .filter(|(l, _)| l.defined.is_none())
            .min_by_key(|(l, _)| l.first_use)
            .map(|(l, hop)| RouteError::UnknownNextHop {
                file: self.file.to_string(),
                line: l.first_use,
                name: hop.name.clone(),
            });
        if let Some(e) = undefined {
            return Err(self.first_error(e));
        }
        if let Some(e) = self.duplicate() {
            return Err(e);
        }
        Ok(RouteTable {
            source: self.file.to_string(),
            next_hops: self.next_hops,
            v4: self.v4,
            v6: self.v6,
            default_v4: self.default_v4.map(|(h, _)| h),
            default_v6: self.default_v6.map(|(h, _)| h),
        })
    }
}

fn route<A>(addr: A, len: u8, next_hop: u16, line: u32) -> Route<A> {
    Route {
        addr,
        len,
        next_hop,
        line,
    }
}

#[cfg(test)]
mod tests;
