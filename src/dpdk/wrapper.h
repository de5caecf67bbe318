/* Headers the bindings are generated from (build.rs). Fast-path `static inline`
 * functions get out-of-line wrappers through bindgen's wrap_static_fns. */
#include <rte_config.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ring.h>
#include <rte_ring_peek_zc.h>
#include <rte_flow.h>
#include <rte_telemetry.h>
#include <rte_version.h>
#include <rte_bus_vdev.h>
#include <rte_pdump.h>
#include <rte_fib.h>
#include <rte_fib6.h>

/* Small helpers for what bindgen cannot reach (thread-local rte_errno). */
int tqfwd_rte_errno(void);

/* rte_ring_enqueue_zc_burst_elem_start that reserves nothing, rather than
 * wait, where a serialized (HTS) ring's previous reservation is not
 * finished (shim.c). */
unsigned int tqfwd_ring_enqueue_zc_try_start(struct rte_ring *r, unsigned int esize,
                                             unsigned int n, struct rte_ring_zc_data *zcd);

/* Values DPDK defines through function-like macros (RTE_BIT64), which
 * bindgen cannot evaluate; shim.c computes them in C. */
extern const uint64_t tqfwd_rss_hf_ip_tcp_udp;
extern const uint64_t tqfwd_mbuf_f_rx_rss_hash;
extern const uint64_t tqfwd_tx_offload_mbuf_fast_free;
extern const uint16_t tqfwd_mbuf_default_buf_size;
extern const uint64_t tqfwd_rx_offload_scatter;
extern const uint64_t tqfwd_rx_offload_ipv4_cksum;
extern const uint64_t tqfwd_tx_offload_multi_segs;

/* 1 when shim.c's rte_mp_reply (the pdump reply gate) is the one this
 * process calls. */
int tqfwd_mp_reply_interposed(void);
