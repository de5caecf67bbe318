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
const uint64_t tqfwd_rx_offload_ipv4_cksum = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
const uint64_t tqfwd_tx_offload_multi_segs = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;

/*
 * rte_ring_enqueue_zc_burst_elem_start that never waits for another
 * producer: on a serialized (HTS) ring whose previous reservation is not
 * finished yet it reserves nothing and returns 0, where DPDK's start would
 * spin until that reservation is finished. A caller that already holds a
 * reservation on another ring uses it, so that it never waits while it
 * holds one (no cycle of producers waiting on each other's rings, and no
 * chain of stalled rings behind one preempted producer). The move of the
 * head is DPDK 22.11's __rte_ring_hts_move_prod_head, same orderings,
 * with the wait replaced by the test and the CAS tried once. Any other
 * sync type (single producer) goes to DPDK's own start, which never
 * waits there.
 */
unsigned int tqfwd_ring_enqueue_zc_try_start(struct rte_ring *r, unsigned int esize,
                                             unsigned int n, struct rte_ring_zc_data *zcd)
{
    union __rte_ring_hts_pos op, np;
    uint32_t cons_tail, free_entries;

    if (r->prod.sync_type != RTE_RING_SYNC_MT_HTS)
        return rte_ring_enqueue_zc_burst_elem_start(r, esize, n, zcd, NULL);
    op.raw = __atomic_load_n(&r->hts_prod.ht.raw, __ATOMIC_ACQUIRE);
    if (op.pos.head != op.pos.tail)
        return 0;
    cons_tail = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);
    free_entries = r->capacity + cons_tail - op.pos.head;
    if (n > free_entries)
        n = free_entries;
    if (n == 0)
        return 0;
    np.pos.tail = op.pos.tail;
    np.pos.head = op.pos.head + n;
    if (!__atomic_compare_exchange_n(&r->hts_prod.ht.raw, &op.raw, np.raw, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
        return 0;
    __rte_ring_get_elem_addr(r, op.pos.head, esize, n, &zcd->ptr1, &zcd->n1, &zcd->ptr2);
    return n;
}

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
