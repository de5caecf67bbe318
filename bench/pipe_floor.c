/* bench/pipe_floor.c — the floor of a two-lcore pipeline built from DPDK's
 * own primitives: what the RX+TX lcore of a pipeline that hands packets on
 * through rte_rings pays on this host before it carries a single fact
 * about a packet (the anchor beside testpmd io in bench/floor.py).
 *
 * The shape of tqfwd's default layout, with nothing but the hand-offs:
 * lcore A (the main lcore) receives bursts from port p (0 and 1 in turn)
 * and enqueues them on ring to_worker[p]; it dequeues bursts from
 * ring to_tx[p] and transmits them on port p ^ 1. Lcore B (the worker)
 * moves bursts from to_worker[p] to to_tx[p]. What the worker does to each
 * packet on the way (the second argument):
 *   none   nothing (the default): the hand-offs alone;
 *   mtod   rewrites the frame's first 12 bytes (the MACs) at
 *          rte_pktmbuf_mtod(), as a DPDK worker finds its frame: a read
 *          of the mbuf header on the worker's core;
 *   frame  the same bytes at the frame's fixed place in this pool's mbufs
 *          (header, no private area, default headroom), as tqfwd's worker
 *          finds it from its queue word: no read of the header.
 * Packets are handed on in batches of BATCH (default 64, tqfwd's default
 * `--handoff-batch`): A receives a batch in bursts of 32 for as long as
 * the port fills them, each stage moves up to a batch per ring operation,
 * and A transmits what it dequeues in bursts of 32.
 * Every ring is single-producer/single-consumer (`RING_F_SP_ENQ |
 * RING_F_SC_DEQ`), the mempool's cache is 512 (tqfwd's). A burst the
 * next stage refuses is kept and offered again; A receives only while it
 * holds nothing (tqfwd's `--on-full wait`), so nothing is dropped.
 *
 * Busy cycles are counted as testpmd's --record-core-cycles counts them:
 * the TSC time of every loop pass that moved a packet. Printed as one JSON
 * line: seconds, packets transmitted, Mpps, each lcore's busy cycles per
 * transmitted packet.
 *
 * Compiled by hand or by a bench script:
 *   cc -O3 -march=native bench/pipe_floor.c $(pkg-config --cflags --libs libdpdk) -o pipe_floor
 * Usage (two net_null ports, as bench/ab.py and testpmd io use them):
 *   pipe_floor -l 0-1 --no-pci --in-memory --file-prefix pf \
 *     --vdev=net_null0,size=64 --vdev=net_null1,size=64 -- \
 *     [SECONDS [none|mtod|frame [BATCH]]]          (3 none 64)
 * Exit codes: 0 ok; 1 a DPDK call failed; 2 bad usage.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#define BURST 32
#define MAX_BATCH 256
#define RING_SIZE 2048
#define POOL_CACHE 512
#define NB_MBUF 16383
#define DESC 1024

static struct rte_ring *to_worker[2], *to_tx[2];
static volatile int stop_worker;
enum touch { TOUCH_NONE, TOUCH_MTOD, TOUCH_FRAME };
static enum touch touch;
static unsigned batch = 2 * BURST;
static const char *const touch_names[] = {"none", "mtod", "frame"};
static uint64_t worker_busy, worker_moved;

static int die(const char *what)
{
    fprintf(stderr, "pipe_floor: %s failed\n", what);
    return 1;
}

/* Lcore B: moves bursts from to_worker[p] to to_tx[p]. */
static int worker(void *arg)
{
    (void)arg;
    struct rte_mbuf *held[2][MAX_BATCH];
    unsigned n_held[2] = {0, 0};
    uint64_t busy = 0, moved = 0;
    while (!stop_worker || n_held[0] || n_held[1] || !rte_ring_empty(to_worker[0]) ||
           !rte_ring_empty(to_worker[1])) {
        uint64_t t0 = rte_rdtsc();
        unsigned did = 0;
        for (int p = 0; p < 2; p++) {
            if (n_held[p] == 0) {
                unsigned n = rte_ring_sc_dequeue_burst(to_worker[p], (void **)held[p], batch, NULL);
                for (unsigned i = 0; touch != TOUCH_NONE && i < n; i++) {
                    uint8_t *f = touch == TOUCH_MTOD
                                     ? rte_pktmbuf_mtod(held[p][i], uint8_t *)
                                     : (uint8_t *)held[p][i] + sizeof(struct rte_mbuf) +
                                           RTE_PKTMBUF_HEADROOM;
                    memset(f, 0x02, 6);
                    memset(f + 6, 0x04, 6);
                }
                n_held[p] = n;
                did += n;
            }
            if (n_held[p]) {
                unsigned sent =
                    rte_ring_sp_enqueue_burst(to_tx[p], (void **)held[p], n_held[p], NULL);
                if (sent && sent < n_held[p])
                    memmove(held[p], held[p] + sent, (n_held[p] - sent) * sizeof(held[p][0]));
                n_held[p] -= sent;
                moved += sent;
                did += sent;
            }
        }
        if (did)
            busy += rte_rdtsc() - t0;
    }
    worker_busy = busy;
    worker_moved = moved;
    return 0;
}

int main(int argc, char **argv)
{
    int used = rte_eal_init(argc, argv);
    if (used < 0)
        return die("rte_eal_init");
    argc -= used;
    argv += used;
    double seconds = 3.0;
    if (argc > 4 || (argc > 1 && (seconds = atof(argv[1])) <= 0) ||
        (argc > 3 && ((batch = (unsigned)atoi(argv[3])) < 1 || batch > MAX_BATCH))) {
        fprintf(stderr, "pipe_floor: usage: ... -- [SECONDS [none|mtod|frame [BATCH 1-%d]]]\n",
                MAX_BATCH);
        return 2;
    }
    if (argc >= 3) {
        int t = 0;
        while (t < 3 && strcmp(argv[2], touch_names[t]) != 0)
            t++;
        if (t == 3) {
            fprintf(stderr, "pipe_floor: the touch '%s' is none, mtod or frame\n", argv[2]);
            return 2;
        }
        touch = (enum touch)t;
    }
    if (rte_eth_dev_count_avail() < 2 || rte_lcore_count() < 2) {
        fprintf(stderr, "pipe_floor: needs two ports and two lcores\n");
        return 2;
    }
    struct rte_mempool *pool = rte_pktmbuf_pool_create("pf_pool", NB_MBUF, POOL_CACHE, 0,
                                                       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
    if (pool == NULL)
        return die("rte_pktmbuf_pool_create");
    for (uint16_t p = 0; p < 2; p++) {
        struct rte_eth_conf conf;
        memset(&conf, 0, sizeof(conf));
        char name[32];
        if (rte_eth_dev_configure(p, 1, 1, &conf) < 0 ||
            rte_eth_rx_queue_setup(p, 0, DESC, rte_socket_id(), NULL, pool) < 0 ||
            rte_eth_tx_queue_setup(p, 0, DESC, rte_socket_id(), NULL) < 0 ||
            rte_eth_dev_start(p) < 0)
            return die("port setup");
        snprintf(name, sizeof(name), "pf_tw%u", p);
        to_worker[p] = rte_ring_create(name, RING_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
        snprintf(name, sizeof(name), "pf_tt%u", p);
        to_tx[p] = rte_ring_create(name, RING_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (to_worker[p] == NULL || to_tx[p] == NULL)
            return die("rte_ring_create");
    }
    unsigned wl = rte_get_next_lcore(-1, 1, 0);
    if (rte_eal_remote_launch(worker, NULL, wl) != 0)
        return die("rte_eal_remote_launch");

    /* Lcore A: RX into to_worker[p], to_tx[p] out to port p ^ 1. */
    struct rte_mbuf *rx[2][MAX_BATCH], *tx[2][MAX_BATCH];
    unsigned n_rx[2] = {0, 0}, n_tx[2] = {0, 0};
    int holding[2] = {0, 0}; /* what the ring refused: no RX until it fits */
    uint64_t hz = rte_get_tsc_hz();
    uint64_t warm = rte_rdtsc() + hz, end = warm + (uint64_t)(seconds * hz);
    uint64_t busy = 0, sent_total = 0, busy_warm = 0, sent_warm = 0;
    int warmed = 0;
    for (;;) {
        uint64_t t0 = rte_rdtsc();
        if (!warmed && t0 >= warm) {
            warmed = 1;
            busy_warm = busy;
            sent_warm = sent_total;
        }
        if (t0 >= end)
            break;
        unsigned did = 0;
        for (int p = 0; p < 2; p++) {
            /* A batch: PMD bursts for as long as the port fills them. */
            while (!holding[p] && n_rx[p] < batch) {
                unsigned want = batch - n_rx[p] < BURST ? batch - n_rx[p] : BURST;
                unsigned got = rte_eth_rx_burst(p, 0, rx[p] + n_rx[p], want);
                n_rx[p] += got;
                did += got;
                if (got < want)
                    break;
            }
            if (n_rx[p]) {
                unsigned q = rte_ring_sp_enqueue_burst(to_worker[p], (void **)rx[p], n_rx[p], NULL);
                if (q && q < n_rx[p])
                    memmove(rx[p], rx[p] + q, (n_rx[p] - q) * sizeof(rx[p][0]));
                n_rx[p] -= q;
            }
            holding[p] = n_rx[p] != 0;
        }
        for (int p = 0; p < 2; p++) {
            if (n_tx[p] == 0)
                n_tx[p] = rte_ring_sc_dequeue_burst(to_tx[p], (void **)tx[p], batch, NULL);
            while (n_tx[p]) {
                unsigned s = rte_eth_tx_burst(p ^ 1, 0, tx[p], n_tx[p] < BURST ? n_tx[p] : BURST);
                if (s && s < n_tx[p])
                    memmove(tx[p], tx[p] + s, (n_tx[p] - s) * sizeof(tx[p][0]));
                n_tx[p] -= s;
                sent_total += s;
                did += s;
                if (s == 0)
                    break;
            }
        }
        if (did)
            busy += rte_rdtsc() - t0;
    }
    /* Drain: stop the worker once A holds nothing more for it; free what
     * is left on the TX side. */
    for (int p = 0; p < 2; p++) {
        while (n_rx[p]) {
            unsigned q = rte_ring_sp_enqueue_burst(to_worker[p], (void **)rx[p], n_rx[p], NULL);
            memmove(rx[p], rx[p] + q, (n_rx[p] - q) * sizeof(rx[p][0]));
            n_rx[p] -= q;
        }
    }
    stop_worker = 1;
    for (;;) {
        int idle = rte_eal_get_lcore_state(wl) != RUNNING;
        for (int p = 0; p < 2; p++) {
            if (n_tx[p] == 0)
                n_tx[p] = rte_ring_sc_dequeue_burst(to_tx[p], (void **)tx[p], batch, NULL);
            rte_pktmbuf_free_bulk(tx[p], n_tx[p]);
            n_tx[p] = 0;
        }
        if (idle && rte_ring_empty(to_tx[0]) && rte_ring_empty(to_tx[1]))
            break;
    }
    rte_eal_wait_lcore(wl);
    uint64_t pkts = sent_total - sent_warm;
    double secs = seconds;
    printf("{\"seconds\": %.1f, \"packets\": %" PRIu64 ", \"mpps\": %.2f, "
           "\"rxtx_cycles_per_packet\": %.2f, \"worker_cycles_per_packet\": %.2f, "
           "\"touch\": \"%s\", \"mbufs_in_use\": %u}\n",
           secs, pkts, pkts / secs / 1e6, (double)(busy - busy_warm) / (double)pkts,
           (double)worker_busy / (double)worker_moved, touch_names[touch],
           rte_mempool_in_use_count(pool));
    for (uint16_t p = 0; p < 2; p++) {
        rte_eth_dev_stop(p);
        rte_eth_dev_close(p);
    }
    rte_eal_cleanup();
    return 0;
}
