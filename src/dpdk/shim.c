/* Helpers for DPDK state that Rust cannot name directly. */
#include "wrapper.h"

/* rte_errno is a per-lcore (thread-local) variable behind a macro. */
int tqfwd_rte_errno(void) { return rte_errno; }

const uint64_t tqfwd_rss_hf_ip_tcp_udp = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP;
const uint64_t tqfwd_mbuf_f_rx_rss_hash = RTE_MBUF_F_RX_RSS_HASH;
const uint64_t tqfwd_tx_offload_mbuf_fast_free = RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
const uint16_t tqfwd_mbuf_default_buf_size = RTE_MBUF_DEFAULT_BUF_SIZE;
const uint64_t tqfwd_rx_offload_scatter = RTE_ETH_RX_OFFLOAD_SCATTER;
const uint64_t tqfwd_tx_offload_multi_segs = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
