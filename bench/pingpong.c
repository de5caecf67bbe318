/* bench/pingpong.c — the physical floor under the pipeline's latencies: one
 * cache line's one-way trip between two CPUs.
 *
 * Two threads, pinned to CPU A and CPU B (default 0 and 1, the CPUs of
 * tqfwd's lcores 0 and 1) with pthread_setaffinity_np, bounce one 64-byte
 * aligned line: A stores 2i-1 and spins until it reads 2i, B spins until it
 * reads 2i-1 and stores 2i (atomic release stores, acquire loads, no pause).
 * Each run times ROUND_TRIPS round trips with clock_gettime(CLOCK_MONOTONIC)
 * on A; one-way ns = run time / round trips / 2. After a warm-up of 100 000
 * round trips it makes RUNS runs and prints one JSON line: every run's
 * one-way ns, their median, and the TSC frequency measured with rdtsc over
 * a 100 ms sleep (x86 only, else 0).
 *
 * Compiled by bench/pipeline.sh: cc -O2 -pthread bench/pingpong.c
 * Usage: pingpong [ROUND_TRIPS [RUNS [CPU_A CPU_B]]]   (2000000 5 0 1)
 * Exit codes: 0 ok; 1 a thread could not be pinned or created; 2 bad usage.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define WARMUP 100000ULL
#define MAX_RUNS 100

struct line {
    _Atomic uint64_t v;
    char pad[64 - sizeof(uint64_t)];
} __attribute__((aligned(64)));

static struct line ball;
static uint64_t total_round_trips;
static int cpu_b;

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* B: answers every odd value with the next even one. */
static void *pong(void *arg)
{
    (void)arg;
    if (pin(cpu_b) != 0) {
        fprintf(stderr, "pingpong: cannot pin to CPU %d\n", cpu_b);
        exit(1);
    }
    for (uint64_t i = 1; i <= total_round_trips; i++) {
        while (atomic_load_explicit(&ball.v, memory_order_acquire) != 2 * i - 1)
            ;
        atomic_store_explicit(&ball.v, 2 * i, memory_order_release);
    }
    return NULL;
}

/* A: round trips first+1 .. first+n. */
static void ping(uint64_t first, uint64_t n)
{
    for (uint64_t i = first + 1; i <= first + n; i++) {
        atomic_store_explicit(&ball.v, 2 * i - 1, memory_order_release);
        while (atomic_load_explicit(&ball.v, memory_order_acquire) != 2 * i)
            ;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double tsc_hz(void)
{
#if defined(__x86_64__) || defined(__i386__)
    struct timespec d = {0, 100 * 1000 * 1000};
    double t0 = now_s();
    uint64_t c0 = __rdtsc();
    nanosleep(&d, NULL);
    uint64_t c1 = __rdtsc();
    double t1 = now_s();
    return (double)(c1 - c0) / (t1 - t0);
#else
    return 0.0;
#endif
}

int main(int argc, char **argv)
{
    uint64_t n = 2000000;
    int runs = 5, cpu_a = 0;
    cpu_b = 1;
    if (argc > 5 || (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(stderr, "usage: pingpong [ROUND_TRIPS [RUNS [CPU_A CPU_B]]]\n");
        return 2;
    }
    if (argc > 1)
        n = strtoull(argv[1], NULL, 10);
    if (argc > 2)
        runs = atoi(argv[2]);
    if (argc > 3)
        cpu_a = atoi(argv[3]);
    if (argc > 4)
        cpu_b = atoi(argv[4]);
    if (n == 0 || runs < 1 || runs > MAX_RUNS || cpu_a < 0 || cpu_b < 0 || cpu_a == cpu_b || argc == 4) {
        fprintf(stderr, "pingpong: bad arguments (ROUND_TRIPS >= 1, 1 <= RUNS <= %d, two different CPUs)\n",
                MAX_RUNS);
        return 2;
    }
    if (pin(cpu_a) != 0) {
        fprintf(stderr, "pingpong: cannot pin to CPU %d\n", cpu_a);
        return 1;
    }
    double hz = tsc_hz();
    total_round_trips = WARMUP + (uint64_t)runs * n;
    atomic_store(&ball.v, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, pong, NULL) != 0) {
        fprintf(stderr, "pingpong: pthread_create failed\n");
        return 1;
    }
    ping(0, WARMUP);
    double one_way[MAX_RUNS], sorted[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        ping(WARMUP + (uint64_t)r * n, n);
        double t1 = now_s();
        one_way[r] = (t1 - t0) * 1e9 / (double)n / 2.0;
    }
    pthread_join(t, NULL);
    memcpy(sorted, one_way, sizeof(double) * (size_t)runs);
    qsort(sorted, (size_t)runs, sizeof(double), cmp_double);
    double median = runs % 2 ? sorted[runs / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2.0;
    printf("{\"cpus\": [%d, %d], \"round_trips\": %llu, \"runs\": %d, \"one_way_ns\": %.1f, "
           "\"runs_one_way_ns\": [",
           cpu_a, cpu_b, (unsigned long long)n, runs, median);
    for (int r = 0; r < runs; r++)
        printf("%s%.1f", r ? ", " : "", one_way[r]);
    printf("], \"tsc_hz\": %.0f}\n", hz);
    return 0;
}
