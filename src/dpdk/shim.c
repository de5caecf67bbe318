/* Helpers for DPDK state that Rust cannot name directly, and the pdump
 * reply gate (rte_mp_reply, below). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include "wrapper.h"

/* rte_errno is a per-lcore (thread-local) variable behind a macro. */
int tqfwd_rte_errno(void) { return rte_errno; }

const uint64_t tqfwd_rss_hf_ip_tcp_udp = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP;
const uint64_t tqfwd_mbuf_f_rx_rss_hash = RTE_MBUF_F_RX_RSS_HASH;
const uint64_t tqfwd_tx_offload_mbuf_fast_free = RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
const uint16_t tqfwd_mbuf_default_buf_size = RTE_MBUF_DEFAULT_BUF_SIZE;
const uint64_t tqfwd_rx_offload_scatter = RTE_ETH_RX_OFFLOAD_SCATTER;
const uint64_t tqfwd_tx_offload_multi_segs = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;

/*
 * The pdump reply gate (see src/dpdk/pdump.rs for the why).
 *
 * DPDK 22.11's pdump server, on EAL's multi-process thread, removes its
 * RX/TX callbacks without waiting for an lcore that is inside one and then
 * answers the secondary (dpdk-dumpcap) with rte_mp_reply; the secondary
 * then frees the ring and mempool the callback copies into. This
 * definition interposes on EAL's (the executable exports it, so
 * librte_pdump's call binds here): for an "mp_pdump" answer it first runs
 * tqfwd_pdump_reply_gate (Rust), which waits until every port-polling
 * lcore has passed a quiescent point, then calls EAL's own rte_mp_reply.
 * Every other message goes straight through.
 */
extern void tqfwd_pdump_reply_gate(void);

typedef int (*tqfwd_mp_reply_fn)(struct rte_mp_msg *, const char *);

int rte_mp_reply(struct rte_mp_msg *msg, const char *peer)
{
	static tqfwd_mp_reply_fn real;
	tqfwd_mp_reply_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (f == NULL) {
		f = (tqfwd_mp_reply_fn)dlsym(RTLD_NEXT, "rte_mp_reply");
		if (f == NULL) {
			rte_errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	if (msg != NULL && strncmp(msg->name, "mp_pdump", RTE_MP_MAX_NAME_LEN) == 0)
		tqfwd_pdump_reply_gate();
	return f(msg, peer);
}

/* 1 when this process's rte_mp_reply is the definition above. */
int tqfwd_mp_reply_interposed(void)
{
	void *f = dlsym(RTLD_DEFAULT, "rte_mp_reply");
	return f == (void *)rte_mp_reply;
}
