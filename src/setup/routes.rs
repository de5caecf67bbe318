//! The L3 forwarding tables (`--routes`): a parsed route file
//! ([`RouteTable`]) built into one [`SocketRoutes`] per NUMA socket that
//! runs a worker: an IPv4 FIB (DIR-24-8) and an IPv6 FIB (trie) in that
//! socket's huge-page memory, and the next hops their lookups name, with
//! the MACs a frame leaving by each gets.
//!
//! Built whole, by the thread that asks (at start the main thread, on a
//! reload the reload thread), never on an lcore; once built a table is
//! only read. A family without routes gets no FIB: its frames take the
//! default route's next hop, or miss. A FIB's next-hop values are indices
//! into [`SocketRoutes::next_hops`]; any value at or above its length
//! (the FIB's miss value) is no route.

use crate::config::routes::{RouteTable, MAX_NEXT_HOPS};
use crate::config::MAX_PORTS;
use crate::dpdk::fib::{self, Fib4, Fib6, FibShape, NextHopSize};
use crate::dpdk::DpdkError;
use crate::wire;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a frame routed through one next hop goes: its first 12 bytes
/// (dst: the next hop's MAC, src: the output port's) and the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextHopEntry {
    pub macs: [u8; 12],
    pub port: u16,
}

/// One socket's tables.
pub struct SocketRoutes {
    pub socket: i32,
    pub v4: Option<Fib4>,
    pub v6: Option<Fib6>,
    /// The default routes' next hops, where a family has one but no FIB.
    pub default_v4: Option<u16>,
    pub default_v6: Option<u16>,
    /// Indexed by FIB value.
    pub next_hops: Box<[NextHopEntry]>,
}

impl SocketRoutes {
    /// The next hop a FIB value names, if any (a miss names none).
    #[inline(always)]
    pub fn next_hop(&self, value: u64) -> Option<&NextHopEntry> {
        self.next_hops.get(value as usize)
    }
}

/// What building one family's table took, for the start and reload lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct FamilyFigures {
    pub routes: usize,
    /// Heap bytes the FIB took on its socket (0 without a FIB).
    pub bytes: usize,
    /// Next-hop width in bytes (0 without a FIB).
    pub next_hop_bytes: usize,
    pub tbl8_groups: u32,
}

/// Every socket's tables, built from one route file.
pub struct Routes {
    pub table: Arc<RouteTable>,
    sockets: Vec<Arc<SocketRoutes>>,
    /// Per family, for the first socket (each socket's copy is the same).
    pub v4: FamilyFigures,
    pub v6: FamilyFigures,
    /// How long the build took, every socket.
    pub build_time: Duration,
}

impl Routes {
    /// The tables on `socket` (a socket not built for gets the first
    /// socket's: never for a worker's socket, which the build covers).
    pub fn for_socket(&self, socket: i32) -> Arc<SocketRoutes> {
        self.sockets
            .iter()
            .find(|s| s.socket == socket)
            .unwrap_or(&self.sockets[0])
            .clone()
    }

    /// The line logged at start: routes, memory and build time per family.
    pub fn summary(&self) -> String {
        let fam = |name: &str, f: &FamilyFigures| {
            if f.bytes == 0 {
                format!("{name}: {} routes, no FIB", f.routes)
            } else {
                format!(
                    "{name}: {} routes, {:.1} MiB per socket ({}-byte next hops, {} tbl8 groups)",
                    f.routes,
                    f.bytes as f64 / (1 << 20) as f64,
                    f.next_hop_bytes,
                    f.tbl8_groups
                )
            }
        };
        format!(
            "routes {}: {}; {}; {} next hops; built in {:.3} s on socket(s) {:?}",
            self.table.source,
            fam("IPv4", &self.v4),
            fam("IPv6", &self.v6),
            self.table.next_hops.len(),
            self.build_time.as_secs_f64(),
            self.sockets.iter().map(|s| s.socket).collect::<Vec<_>>()
        )
    }
}

/// Why the tables could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RouteBuildError {
    #[error("{file}: the {family} table needs {need} next-hop values or tbl8 groups, more than a FIB entry holds: split the file")]
    TooLarge {
        file: String,
        family: &'static str,
        need: u64,
    },
    #[error("{file}: cannot create the {family} FIB on socket {socket} ({fib}): reserve more huge pages (scripts/hugepages.sh setup N) or give EAL more memory (-m/--socket-mem)")]
    Create {
        file: String,
        family: &'static str,
        socket: i32,
        fib: DpdkError,
    },
    #[error("{file}:{line}: the {family} FIB refused the route ({fib}): reserve more huge pages or shorten the table")]
    Add {
        file: String,
        family: &'static str,
        line: u32,
        fib: DpdkError,
    },
}

/// Spare tbl8 groups beyond the reservation counted from the routes.
const TBL8_SLACK: u64 = 16;

/// Builds `table` on each of `sockets` (deduplicated, at least one), with
/// next-hop MACs from `port_macs` (per port: the first 12 bytes the L2
/// mode writes, dst = the port's peer, src = the port's own MAC) for the
/// next hops that name none.
pub fn build(
    table: Arc<RouteTable>,
    sockets: &[i32],
    port_macs: &[[u8; 12]; MAX_PORTS],
) -> Result<Routes, RouteBuildError> {
    let started = Instant::now();
    let mut socks: Vec<i32> = sockets.to_vec();
    socks.sort_unstable();
    socks.dedup();
    if socks.is_empty() {
        socks.push(0);
    }
    debug_assert!(table.next_hops.len() <= MAX_NEXT_HOPS);
    let next_hops: Box<[NextHopEntry]> = table
        .next_hops
        .iter()
        .map(|nh| {
            let own = &port_macs[nh.port as usize % MAX_PORTS];
            let macs = match nh.mac {
                Some(mac) => {
                    let src: [u8; 6] = own[6..12].try_into().expect("6 bytes");
                    wire::mac_header(&mac.0, &src)
                }
                None => *own,
            };
            NextHopEntry {
                macs,
                port: nh.port,
            }
        })
        .collect();
    let values = table.next_hops.len() as u64 + 1;
    let shape4 = (!table.v4.is_empty())
        .then(|| {
            let groups = fib::tbl8_groups_v4(table.v4.iter().map(|r| (r.addr, r.len)));
            shape(
                &table,
                "IPv4",
                values,
                groups,
                NextHopSize::for_v4,
                table.default_v4,
                table.v4.len(),
            )
        })
        .transpose()?;
    let shape6 = (!table.v6.is_empty())
        .then(|| {
            let groups = fib::tbl8_reserve_v6(table.v6.iter().map(|r| r.len));
            shape(
                &table,
                "IPv6",
                values,
                groups,
                NextHopSize::for_v6,
                table.default_v6,
                table.v6.len(),
            )
        })
        .transpose()?;
    let mut built = Vec::with_capacity(socks.len());
    let mut fig4 = FamilyFigures {
        routes: table.len_v4(),
        ..Default::default()
    };
    let mut fig6 = FamilyFigures {
        routes: table.len_v6(),
        ..Default::default()
    };
    for (k, &socket) in socks.iter().enumerate() {
        let before = fib::heap_allocated(socket);
        let v4 = shape4.map(|s| build_v4(&table, socket, s)).transpose()?;
        let mid = fib::heap_allocated(socket);
        let v6 = shape6.map(|s| build_v6(&table, socket, s)).transpose()?;
        let after = fib::heap_allocated(socket);
        if k == 0 {
            if let Some(s) = shape4 {
                fig4.bytes = mid.saturating_sub(before);
                fig4.next_hop_bytes = s.next_hop.bytes();
                fig4.tbl8_groups = s.tbl8_groups;
            }
            if let Some(s) = shape6 {
                fig6.bytes = after.saturating_sub(mid);
                fig6.next_hop_bytes = s.next_hop.bytes();
                fig6.tbl8_groups = s.tbl8_groups;
            }
        }
        built.push(Arc::new(SocketRoutes {
            socket,
            v4,
            v6,
            default_v4: table.default_v4,
            default_v6: table.default_v6,
            next_hops: next_hops.clone(),
        }));
    }
    Ok(Routes {
        table,
        sockets: built,
        v4: fig4,
        v6: fig6,
        build_time: started.elapsed(),
    })
}

/// A family's FIB shape: the narrowest next-hop width that holds every
/// value and the tbl8 groups, and the default.
fn shape(
    table: &RouteTable,
    family: &'static str,
    values: u64,
    groups: u64,
    width: fn(u64, u64) -> Option<NextHopSize>,
    default: Option<u16>,
    routes: usize,
) -> Result<FibShape, RouteBuildError> {
    let groups = groups + TBL8_SLACK;
    let too_large = || RouteBuildError::TooLarge {
        file: table.source.clone(),
        family,
        need: values.max(groups),
    };
    let size = width(values, groups).ok_or_else(too_large)?;
    Ok(FibShape {
        max_routes: routes + 1,
        tbl8_groups: u32::try_from(groups).map_err(|_| too_large())?,
        next_hop: size,
        default_value: default.map_or(Fib4::miss(size), u64::from),
    })
}

fn build_v4(table: &RouteTable, socket: i32, shape: FibShape) -> Result<Fib4, RouteBuildError> {
    let mut fib = Fib4::new(socket, shape).map_err(|fib| RouteBuildError::Create {
        file: table.source.clone(),
        family: "IPv4",
        socket,
        fib,
    })?;
    for r in &table.v4 {
        fib.add(r.addr, r.len, u64::from(r.next_hop))
            .map_err(|fib| RouteBuildError::Add {
                file: table.source.clone(),
                family: "IPv4",
                line: r.line,
                fib,
            })?;
    }
    Ok(fib)
}

fn build_v6(table: &RouteTable, socket: i32, shape: FibShape) -> Result<Fib6, RouteBuildError> {
    let mut fib = Fib6::new(socket, shape).map_err(|fib| RouteBuildError::Create {
        file: table.source.clone(),
        family: "IPv6",
        socket,
        fib,
    })?;
    for r in &table.v6 {
        fib.add(&r.addr, r.len, u64::from(r.next_hop))
            .map_err(|fib| RouteBuildError::Add {
                file: table.source.clone(),
                family: "IPv6",
                line: r.line,
                fib,
            })?;
    }
    Ok(fib)
}
