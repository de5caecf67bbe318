//! Frame sizes per port: what `--max-frame` asks of each port (its MTU, RX
//! scatter when a frame needs several mbufs) and whether the port can give
//! it. Decided from the device info before any port is configured, so a
//! port that cannot take the frames is a usage error (exit 2) naming
//! `--max-frame`, not a DPDK failure half-way through setup.
//!
//! Sizes are frames as tqfwd sees them: Ethernet header to the end of the
//! payload, no FCS (what a capture shows, `pkt_len`). The MTU is that minus
//! the 14-byte Ethernet header. Whether a frame needs more than one mbuf is
//! judged as the PMDs judge it: MTU + the device's L2 overhead (ethdev's
//! rule: `max_rx_pktlen - max_mtu`, else header + CRC) against the mbuf's
//! data room.

use crate::dpdk::port::{rx_offload_scatter, tx_offload_multi_segs};
use crate::dpdk::{Mempool, PortInfo};

/// Ethernet header bytes between a frame's size and its MTU.
pub const ETH_HDR: u32 = 14;
/// Ethernet header + CRC: ethdev's overhead for devices that do not say.
const DEFAULT_OVERHEAD: u32 = 18;
/// ethdev's default MTU (`RTE_ETHER_MTU`).
const DEFAULT_MTU: u32 = 1500;
/// Smallest frame ethdev lets an MTU give (`RTE_ETHER_MIN_LEN`, with CRC).
const MIN_WIRE_FRAME: u32 = 64;

/// PMDs that read a frame longer than one mbuf into a chain by themselves,
/// without offering RX scatter: net_pcap up to DPDK 25.x (its
/// `eth_pcap_rx_jumbo` chains whatever the configuration). Where such a PMD
/// offers the offload (later net_pcap requires it), it is asked for.
const CHAINS_WITHOUT_SCATTER: &[&str] = &["net_pcap"];

/// A `--max-frame` a port cannot take: a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Outside the frames the port's MTU range gives.
    #[error("--max-frame {frame}: port {port} ({driver}) takes frames of {}..={} bytes (MTU {min_mtu}..={max_mtu}): use a --max-frame in that range", .min_mtu + ETH_HDR, .max_mtu + ETH_HDR)]
    OutOfRange {
        frame: u32,
        port: usize,
        driver: String,
        min_mtu: u32,
        max_mtu: u32,
    },
    /// Frames need several mbufs and the port cannot scatter them.
    #[error("--max-frame {frame}: port {port} ({driver}) cannot scatter a frame over several mbufs, and one of tqfwd's mbufs holds frames of up to {largest} bytes: use --max-frame {largest} or less")]
    NoScatter {
        frame: u32,
        port: usize,
        driver: String,
        /// The largest frame one mbuf holds on this port.
        largest: u32,
    },
}

/// What one port is configured with for its frame size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FramePlan {
    /// MTU for `rte_eth_dev_configure` (0 = the device's default).
    pub mtu: u32,
    /// The largest frame the port then takes (MTU + 14).
    pub max_frame: u32,
    /// `RTE_ETH_RX_OFFLOAD_SCATTER` when frames need several mbufs.
    pub rx_offloads: u64,
    /// Frames of `max_frame` bytes arrive as chains of mbufs.
    pub chained: bool,
}

impl FramePlan {
    /// How the port holds its largest frames, for the log.
    pub fn describe(&self) -> &'static str {
        match (self.chained, self.rx_offloads != 0) {
            (false, _) => "one mbuf",
            (true, true) => "mbuf chains (RX scatter on)",
            (true, false) => "mbuf chains (built by the PMD)",
        }
    }
}

/// The device's L2 overhead as ethdev computes it.
fn overhead(info: &PortInfo) -> u32 {
    if info.max_mtu != u16::MAX && info.max_rx_pktlen > u32::from(info.max_mtu) {
        info.max_rx_pktlen - u32::from(info.max_mtu)
    } else {
        DEFAULT_OVERHEAD
    }
}

/// The plan for port `port` given `--max-frame` (None: the device's default
/// MTU, as before the option existed) and the bytes of frame one mbuf holds
/// (`mbuf_data`).
pub fn plan(
    max_frame: Option<u32>,
    port: usize,
    info: &PortInfo,
    mbuf_data: u32,
) -> Result<FramePlan, FrameError> {
    let Some(frame) = max_frame else {
        // ethdev's default when configure is given MTU 0.
        let mtu = match u32::from(info.max_mtu) {
            0 => DEFAULT_MTU,
            m => m.min(DEFAULT_MTU),
        };
        return Ok(FramePlan {
            mtu: 0,
            max_frame: mtu + ETH_HDR,
            rx_offloads: 0,
            chained: false,
        });
    };
    let over = overhead(info);
    let lo = u32::from(info.min_mtu).max(MIN_WIRE_FRAME.saturating_sub(over));
    let hi = u32::from(info.max_mtu).min(info.max_rx_pktlen.saturating_sub(over));
    let mtu = frame.saturating_sub(ETH_HDR);
    if frame < ETH_HDR || mtu < lo || mtu > hi {
        return Err(FrameError::OutOfRange {
            frame,
            port,
            driver: info.driver.clone(),
            min_mtu: lo,
            max_mtu: hi,
        });
    }
    if mtu + over <= mbuf_data {
        return Ok(FramePlan {
            mtu,
            max_frame: frame,
            rx_offloads: 0,
            chained: false,
        });
    }
    let scatter = info.rx_offload_capa & rx_offload_scatter();
    if scatter == 0 && !CHAINS_WITHOUT_SCATTER.contains(&info.driver.as_str()) {
        return Err(FrameError::NoScatter {
            frame,
            port,
            driver: info.driver.clone(),
            largest: mbuf_data - over + ETH_HDR,
        });
    }
    Ok(FramePlan {
        mtu,
        max_frame: frame,
        rx_offloads: scatter,
        chained: true,
    })
}

/// Every port's plan for `--max-frame` (`max_frame`), in port order.
pub fn plan_all(max_frame: Option<u32>, infos: &[PortInfo]) -> Result<Vec<FramePlan>, FrameError> {
    infos
        .iter()
        .enumerate()
        .map(|(i, info)| plan(max_frame, i, info, Mempool::mbuf_data_len()))
        .collect()
}

/// TX offloads for a port when some port's frames arrive chained:
/// `MULTI_SEGS` where offered (0 when nothing is chained or not offered).
pub fn tx_offloads(any_chained: bool, info: &PortInfo) -> u64 {
    if any_chained {
        info.tx_offload_capa & tx_offload_multi_segs()
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(driver: &str, max_mtu: u16, max_rx_pktlen: u32, rx_capa: u64) -> PortInfo {
        PortInfo {
            port: 0,
            name: "p".into(),
            driver: driver.into(),
            devargs: String::new(),
            socket: 0,
            max_rx_queues: 1,
            max_tx_queues: 1,
            rx_desc_max: 1024,
            tx_desc_max: 1024,
            flow_type_rss_offloads: 0,
            tx_offload_capa: 0,
            rx_offload_capa: rx_capa,
            reta_size: 0,
            min_mtu: 68,
            max_mtu,
            max_rx_pktlen,
        }
    }

    #[test]
    fn default_keeps_the_device_mtu() {
        let p = plan(None, 0, &info("net_null", u16::MAX, u32::MAX, 0), 2048).unwrap();
        assert_eq!((p.mtu, p.max_frame, p.chained), (0, 1514, false));
        let p = plan(None, 0, &info("x", 1000, 1018, 0), 2048).unwrap();
        assert_eq!(p.max_frame, 1014);
    }

    #[test]
    fn frames_that_fit_one_mbuf_need_no_scatter() {
        let i = info("net_null", u16::MAX, u32::MAX, 0);
        let p = plan(Some(2044), 0, &i, 2048).unwrap();
        assert_eq!((p.mtu, p.rx_offloads, p.chained), (2030, 0, false));
        // 2045 + CRC is over 2048: a chain, and net_null cannot scatter.
        let e = plan(Some(2045), 1, &i, 2048).unwrap_err().to_string();
        assert_eq!(
            e,
            "--max-frame 2045: port 1 (net_null) cannot scatter a frame over several mbufs, and one of tqfwd's mbufs holds frames of up to 2044 bytes: use --max-frame 2044 or less"
        );
    }

    #[test]
    fn scatter_asked_where_offered_and_needed() {
        let i = info("net_ring", u16::MAX, u32::MAX, rx_offload_scatter());
        let p = plan(Some(9000), 0, &i, 2048).unwrap();
        assert_eq!(p.mtu, 8986);
        assert_eq!(p.rx_offloads, rx_offload_scatter());
        assert!(p.chained);
        assert_eq!(p.describe(), "mbuf chains (RX scatter on)");
        // net_pcap (DPDK 22.11) chains without offering the offload.
        let p = plan(
            Some(9000),
            0,
            &info("net_pcap", u16::MAX, u32::MAX, 0),
            2048,
        )
        .unwrap();
        assert_eq!((p.rx_offloads, p.chained), (0, true));
    }

    #[test]
    fn outside_the_device_range_is_a_usage_error() {
        // A NIC: max_rx_pktlen 9728, max MTU 9702 (overhead 26).
        let i = info("net_ice", 9702, 9728, rx_offload_scatter());
        assert_eq!(plan(Some(9716), 0, &i, 2048).unwrap().mtu, 9702);
        let e = plan(Some(9717), 0, &i, 2048).unwrap_err().to_string();
        assert_eq!(
            e,
            "--max-frame 9717: port 0 (net_ice) takes frames of 82..=9716 bytes (MTU 68..=9702): use a --max-frame in that range"
        );
        assert!(plan(Some(81), 0, &i, 2048).is_err());
        assert!(plan(Some(82), 0, &i, 2048).is_ok());
        // One mbuf holds 2048 - 26 + 14 = 2036 bytes of frame here.
        assert!(!plan(Some(2036), 0, &i, 2048).unwrap().chained);
        assert!(plan(Some(2037), 0, &i, 2048).unwrap().chained);
    }

    #[test]
    fn multi_segs_only_when_chained_and_offered() {
        let mut i = info("net_ring", u16::MAX, u32::MAX, 0);
        i.tx_offload_capa = tx_offload_multi_segs() | 1;
        assert_eq!(tx_offloads(true, &i), tx_offload_multi_segs());
        assert_eq!(tx_offloads(false, &i), 0);
        i.tx_offload_capa = 0;
        assert_eq!(tx_offloads(true, &i), 0);
    }
}
