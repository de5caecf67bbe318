#!/usr/bin/env bash
# bench/metrics_ab.sh — the cost of `--metrics` scraped once a second.
#
# Alternates runs of one tqfwd binary on net_null (size=64, -l 0-1, main
# lcore RX+TX, lcore 1 worker): A without --metrics, B with --metrics and
# curl fetching /metrics once a second while it forwards. Prints tx Mpps
# per run (from --stats-json), the scrapes each B run answered with 200,
# and the paired ratios B/A with their median; then what one scrape costs
# (scrape_cost below). On a shared machine run it
# under the test lock: flock /tmp/tqfwd-tests.lock bench/metrics_ab.sh
#
# Usage: bench/metrics_ab.sh [ROUNDS=7] [SECONDS=3] [-- extra tqfwd options]
#   TQFWD=path  the binary (default target/release/tqfwd)
set -euo pipefail
BIN=${TQFWD:-target/release/tqfwd}
ROUNDS=${1:-7}
SECS=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
TMP=$(mktemp -d /tmp/tqfwd-metrics-ab.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${free:-0}" -ge 256 ] && grep -q hugetlbfs /proc/mounts; then
    MEM=(--in-memory -m 512)
else
    MEM=(--no-huge -m 512)
fi

run() { # $1 = A|B
    local x=$1 json=$TMP/$1.json scrapes=$TMP/$1.scrapes
    local -a metrics=()
    [ "$x" = B ] && metrics=(--metrics "127.0.0.1:$PORT")
    : >"$scrapes"
    "$BIN" -l 0-1 --no-pci "${MEM[@]}" --file-prefix "mab$x$$" --log-level=lib.eal:error \
        --vdev=net_null0,size=64 --vdev=net_null1,size=64 -- \
        --duration "$SECS" --stats-interval 0 "${metrics[@]}" "${EXTRA[@]}" \
        --stats-json "$json" >/dev/null 2>&1 &
    local pid=$!
    if [ "$x" = B ]; then
        sleep 0.5
        while kill -0 "$pid" 2>/dev/null; do
            curl -s -o /dev/null -w '%{http_code}\n' --max-time 2 \
                "http://127.0.0.1:$PORT/metrics" >>"$scrapes" || true
            sleep 1
        done
    fi
    wait "$pid"
    python3 -c "import json;j=json.load(open('$json'));print('$x', j['tx_mpps'], $(grep -c '^200$' "$scrapes" || true))"
}

# What one scrape costs the thread that answers it: on-CPU time of the
# tqfwd-metrics thread (/proc/PID/task/TID/schedstat, ns) over 200 scrapes
# back to back, and curl's median total time, on a forwarding run.
scrape_cost() {
    "$BIN" -l 0-1 --no-pci "${MEM[@]}" --file-prefix "mabC$$" --log-level=lib.eal:error \
        --vdev=net_null0,size=64 --vdev=net_null1,size=64 -- \
        --duration 30 --stats-interval 0 --metrics "127.0.0.1:$PORT" "${EXTRA[@]}" \
        >/dev/null 2>&1 &
    local pid=$! tid="" t0 t1 i
    for _ in $(seq 100); do
        curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/metrics" && break
        sleep 0.1
    done
    for t in /proc/$pid/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = tqfwd-metrics ] && tid=${t##*/}
    done
    t0=$(cut -d' ' -f1 "/proc/$pid/task/$tid/schedstat")
    for i in $(seq 200); do
        curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$PORT/metrics"
    done >"$TMP/times"
    t1=$(cut -d' ' -f1 "/proc/$pid/task/$tid/schedstat")
    kill -INT "$pid"
    wait "$pid" || true
    python3 -c "
import statistics
t = [float(x) for x in open('$TMP/times')]
print('scrape cost: %.1f us on-CPU per scrape (tqfwd-metrics thread, 200 scrapes), curl total median %.2f ms'
      % (($t1 - $t0) / 200 / 1e3, statistics.median(t) * 1e3))
"
}

for _ in $(seq "$ROUNDS"); do
    run A
    run B
done | python3 -c "
import sys, statistics
a, b, n = [], [], []
for line in sys.stdin:
    k, v, s = line.split()
    print(line.strip())
    (a if k == 'A' else b).append(float(v))
    if k == 'B':
        n.append(int(s))
r = [y / x for x, y in zip(a, b)]
print('A (no --metrics) median %.3f Mpps  B (--metrics, curl 1/s) median %.3f Mpps  paired B/A median %.3f  ratios %s  scrapes answered per B run %s'
      % (statistics.median(a), statistics.median(b), statistics.median(r), ' '.join('%.3f' % x for x in r), n))
"
scrape_cost
