#!/usr/bin/env bash
# bench/queue.sh — the hand-off queue benchmark, in one command.
#
# Builds target/release/tqfwd-queue-bench, runs the dpdk-test
# ring_perf_autotest anchor, then the bench inside EAL (producer on the main
# lcore, consumer on the other), alternating the contenders (TransferQueue
# sharded / shared, rte_ring SP/SC / MP/SC) round by round, and writes:
#   stdout                                   the markdown table
#   bench/results/queue-<date>.md            the same table
#   bench/results/queue-<date>.json          all figures, every round
#   bench/results/queue-<date>-ring_perf.log the raw dpdk-test output
#   bench/results/queue-<date>-perf.txt      with --perf: perf stat output
# With --scatter it runs the scatter and drain rows instead (one producer
# lcore, k = 1, 2, 4, 8 queues, one consumer lcore; no anchor, no latency
# runs) and writes bench/results/queue-scatter-<date>.{md,json}.
# --quick writes the same files under target/bench/ instead.
# bench/results/ tracks the latest full run of each bench, listed in
# bench/results/README.md: a new full run replaces the previous one there
# (git rm the old files, update the index).
# See bench/README.md for what every column means.
#
# Usage: bench/queue.sh [options] [-- extra tqfwd-queue-bench options]
#   --quick            3 rounds, 50 ms throughput + 25 ms latency runs (< 60 s);
#                      outputs under target/bench/
#   --scatter          the scatter and drain rows instead of the hand-off rows
#                      (7 rounds of 200 ms runs: about 1.5 min); not with
#                      --latency-ms, --rate, --perf or --anchor-runs
#   --rounds N         rounds over all configurations (default 7, quick 3)
#   --duration-ms MS   throughput run length (default 200, quick 50)
#   --latency-ms MS    latency run length (default 100, quick 25)
#   --rate MITEMS      offered load of the latency runs, Mitems/s (default 4)
#   --lcores LIST      EAL lcore list (default 0-1; >= 3 lcores adds the
#                      multi-producer rows, e.g. 0-3)
#   --no-anchor        skip dpdk-test ring_perf_autotest
#   --anchor-runs N    ring_perf_autotest runs, medians taken (default 3,
#                      quick 1)
#   --perf             afterwards, perf stat two 1 s throughput runs (TQ
#                      sharded and rte_ring SP/SC, burst 32, depth 4096)
#   --wait-quiet S     wait up to S seconds for the CPUs to be idle (< 10 %
#                      busy over 2 s) before measuring
#   -h, --help         this text
# Exit codes: 0 ok; 1 the bench failed (e.g. items lost, or no configuration
# ran: the options left none that the lcores can run); 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

QUICK=0 SCATTER=0 ROUNDS="" DURATION="" LATENCY="" RATE="" LCORES="0-1" ANCHOR=1 ANCHOR_RUNS="" PERF=0 WAIT_QUIET=0
EXTRA=()
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "queue.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --scatter) SCATTER=1 ;;
        --rounds) need_arg "$@"; ROUNDS="$2"; shift ;;
        --duration-ms) need_arg "$@"; DURATION="$2"; shift ;;
        --latency-ms) need_arg "$@"; LATENCY="$2"; shift ;;
        --rate) need_arg "$@"; RATE="$2"; shift ;;
        --lcores) need_arg "$@"; LCORES="$2"; shift ;;
        --no-anchor) ANCHOR=0 ;;
        --anchor-runs) need_arg "$@"; ANCHOR_RUNS="$2"; shift ;;
        --perf) PERF=1 ;;
        --wait-quiet) need_arg "$@"; WAIT_QUIET="$2"; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "queue.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$SCATTER" = 1 ]; then
    for v in "$LATENCY" "$RATE" "$ANCHOR_RUNS"; do
        [ -z "$v" ] || { echo "queue.sh: --scatter has no latency runs and no anchor: drop --latency-ms, --rate and --anchor-runs" >&2; exit 2; }
    done
    [ "$PERF" = 0 ] || { echo "queue.sh: --perf is for the hand-off rows, not --scatter" >&2; exit 2; }
    ANCHOR=0
fi
[ -n "$ANCHOR_RUNS" ] || ANCHOR_RUNS=$([ "$QUICK" = 1 ] && echo 1 || echo 3)
case "$ANCHOR_RUNS" in ''|*[!0-9]*|0) echo "queue.sh: --anchor-runs needs a number >= 1" >&2; exit 2 ;; esac

BIN=target/release/tqfwd-queue-bench
# Full runs are tracked in bench/results/; --quick runs are plumbing checks
# and stay out of the tree.
RESULTS=$([ "$QUICK" = 1 ] && echo target/bench || echo bench/results)
STAMP=$(date +%Y-%m-%d-%H%M%S)
mkdir -p "$RESULTS"

echo "queue.sh: building $BIN" >&2
cargo build --release --bin tqfwd-queue-bench >&2

# Huge pages if at least 256 MiB are free, else plain memory.
free_kb=$(awk '/HugePages_Free/ {f=$2} /Hugepagesize/ {s=$2} END {print f*s}' /proc/meminfo)
if [ "${free_kb:-0}" -ge 262144 ]; then
    MEM=(--in-memory)
    MEM_NOTE="huge pages ($((free_kb / 1024)) MiB free)"
else
    MEM=(--no-huge -m 512)
    MEM_NOTE="no huge pages (--no-huge -m 512)"
fi

# CPU busy share over 2 s, from /proc/stat (the load average lags).
cpu_busy() {
    local a b
    read -r -a a < <(grep '^cpu ' /proc/stat)
    sleep 2
    read -r -a b < <(grep '^cpu ' /proc/stat)
    local idle=$(( (b[4] + b[5]) - (a[4] + a[5]) )) total=0 i
    for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
    echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}
busy=$(cpu_busy)
if [ "$WAIT_QUIET" -gt 0 ] && [ "$busy" -ge 10 ]; then
    deadline=$(( $(date +%s) + WAIT_QUIET ))
    while [ "$busy" -ge 10 ] && [ "$(date +%s)" -lt "$deadline" ]; do
        echo "queue.sh: CPUs ${busy}% busy, waiting for quiet" >&2
        sleep 8
        busy=$(cpu_busy)
    done
fi
LOAD_NOTE="CPUs ${busy}% busy before the run (load avg $(cut -d' ' -f1-3 /proc/loadavg))"
echo "queue.sh: $LOAD_NOTE; EAL memory: $MEM_NOTE; lcores $LCORES" >&2
if [ "$busy" -ge 10 ]; then
    echo "queue.sh: warning: the machine is busy; figures will be noisy (try --wait-quiet 300)" >&2
fi

# The anchor: DPDK's own ring benchmark, same lcores, its own file prefix.
ANCHOR_ARGS=()
if [ "$SCATTER" = 1 ]; then
    : # no anchor: ring_perf_autotest has no scatter or drain case
elif [ "$ANCHOR" = 1 ]; then
    ALOG="$RESULTS/queue-$STAMP-ring_perf.log"
    echo "queue.sh: anchor: $ANCHOR_RUNS x DPDK_TEST=ring_perf_autotest dpdk-test -l $LCORES --no-pci ${MEM[*]} (log $ALOG)" >&2
    if ! command -v dpdk-test >/dev/null; then
        ANCHOR_ARGS=(--anchor-error "dpdk-test not found (Debian package dpdk)")
    else
        : >"$ALOG"
        arc=0
        for ((i = 1; i <= ANCHOR_RUNS; i++)); do
            echo "=== ring_perf_autotest run $i of $ANCHOR_RUNS ===" >>"$ALOG"
            DPDK_TEST=ring_perf_autotest timeout 300 dpdk-test -l "$LCORES" --no-pci "${MEM[@]}" \
                --file-prefix "tqqb-anchor-$$" </dev/null >>"$ALOG" 2>&1 || { arc=$?; break; }
        done
        if [ "$arc" -ne 0 ]; then
            ANCHOR_ARGS=(--anchor-error "dpdk-test ring_perf_autotest exited with code $arc (see $ALOG)")
        else
            ANCHOR_ARGS=(--anchor "$ALOG")
        fi
    fi
else
    ANCHOR_ARGS=(--anchor-error "skipped (--no-anchor)")
fi

APP=()
KIND=queue
[ "$SCATTER" = 1 ] && { APP+=(--scatter); KIND=queue-scatter; }
[ "$QUICK" = 1 ] && APP+=(--quick)
[ -n "$ROUNDS" ] && APP+=(--rounds "$ROUNDS")
[ -n "$DURATION" ] && APP+=(--duration-ms "$DURATION")
[ -n "$LATENCY" ] && APP+=(--latency-ms "$LATENCY")
[ -n "$RATE" ] && APP+=(--rate "$RATE")

JSON="$RESULTS/$KIND-$STAMP.json"
MD="$RESULTS/$KIND-$STAMP.md"
CMD=("$BIN" -l "$LCORES" --no-pci "${MEM[@]}" --file-prefix "tqqb-$$" --
     "${APP[@]}" "${ANCHOR_ARGS[@]}" --json "$JSON" --label "$STAMP"
     --note "EAL memory: $MEM_NOTE; $LOAD_NOTE" "${EXTRA[@]}")
echo "queue.sh: ${CMD[*]}" >&2
rc=0
"${CMD[@]}" | tee "$MD" || rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
    echo "queue.sh: tqfwd-queue-bench failed (exit $rc)" >&2
    rm -f "$MD"
    exit "$rc"
fi
if [ "$QUICK" = 1 ]; then
    echo "queue.sh: wrote $MD, $JSON (--quick: bench/results/ untouched)" >&2
else
    echo "queue.sh: wrote $MD, $JSON (list the run in $RESULTS/README.md)" >&2
fi

if [ "$PERF" = 1 ]; then
    PLOG="$RESULTS/queue-$STAMP-perf.txt"
    : >"$PLOG"
    for c in tq-sharded ring-spsc; do
        echo "== perf stat, $c, burst 32, depth 4096, 1 s throughput run ==" | tee -a "$PLOG"
        perf stat -e cycles,instructions,cache-misses,task-clock,context-switches,cpu-migrations -- \
            "$BIN" -l "$LCORES" --no-pci "${MEM[@]}" --file-prefix "tqqb-perf-$$" -- \
            --rounds 1 --duration-ms 1000 --latency-ms 1 --bursts 32 --depths 4096 \
            --contenders "$c" --single-producer-only 2>&1 >/dev/null |
            grep -vE '^(EAL|TELEMETRY|tqfwd-queue-bench):' | tee -a "$PLOG"
    done
    if grep -q '<not supported>' "$PLOG"; then
        echo "queue.sh: note: hardware counters are <not supported> here (e.g. a VM without a virtual PMU)" | tee -a "$PLOG"
    fi
fi
