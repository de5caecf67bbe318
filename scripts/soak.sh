#!/usr/bin/env bash
# Soak test (not in CI): tqfwd forwards endless 64-byte frames between two
# net_null ports for MINUTES (default 10) with back-pressure (--on-full
# wait), while this script samples its resident memory (VmRSS) and the stats
# lines every few seconds. At the end it checks:
#   * exit 0, JSON conservation_ok true, mbufs_in_use 0;
#   * stats-line totals (rx, tx, drops) never decrease, tx <= rx;
#   * memory flat after warm-up (the first max(10 s, 20 %) of the run):
#     max - min of VmRSS within SOAK_RSS_TOL_KB (default 2048 KiB).
#
#   scripts/soak.sh [MINUTES] [tqfwd options...]
#   scripts/soak.sh 60 --backend ring
#
# Env: SOAK_SAMPLE_SECS (default 5), SOAK_RSS_TOL_KB (default 2048).
# Output: target/soak/<time>/{rss.tsv,stdout.log,stderr.log,stats.json}.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-10}"
shift || true
sample="${SOAK_SAMPLE_SECS:-5}"
tol_kb="${SOAK_RSS_TOL_KB:-2048}"
duration=$(awk -v m="$minutes" 'BEGIN { printf "%.3f", m * 60 }')

scripts/install-deps.sh >/dev/null
scripts/hugepages.sh setup 512 >/dev/null || true
cargo build --release --bins --features testkit
if awk '/^HugePages_Free/ {exit !($2 >= 300)}' /proc/meminfo && grep -q hugetlbfs /proc/mounts; then
    mem=(--in-memory -m 512)
else
    mem=(--no-huge -m 512)
fi
out="target/soak/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo "soak: ${minutes} min, sample every ${sample} s, RSS tolerance ${tol_kb} KiB, EAL memory: ${mem[*]}; output in $out"

./target/release/tqfwd -l 0-1 --no-pci --file-prefix "tqfwd-soak-$$" "${mem[@]}" --log-level=lib.eal:warning \
    --vdev=net_null0,size=64 --vdev=net_null1,size=64 -- \
    --on-full wait --duration "$duration" --stats-interval "$sample" --stats-json "$out/stats.json" "$@" \
    >"$out/stdout.log" 2>"$out/stderr.log" &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true' INT TERM

start=$(date +%s.%N)
printf 't_s\tvmrss_kb\n' >"$out/rss.tsv"
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    now=$(date +%s.%N)
    if [ -n "$rss" ]; then
        t=$(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.1f", b - a }')
        printf '%s\t%s\n' "$t" "$rss" >>"$out/rss.tsv"
    fi
    sleep "$sample" &
    wait $! || true
done
set +e
wait "$pid"
rc=$?
set -e
trap - INT TERM

fail=0
check() { # check OK|FAIL message
    if [ "$1" = OK ]; then echo "  ok    $2"; else echo "  FAIL  $2"; fail=1; fi
}
echo "soak: results"
[ "$rc" -eq 0 ] && check OK "exit 0" || check FAIL "exit $rc (see $out/stderr.log)"

if [ -s "$out/stats.json" ]; then
    grep -q '"conservation_ok": true' "$out/stats.json" && check OK "conservation_ok true" || check FAIL "conservation_ok not true"
    grep -q '"mbufs_in_use": 0,' "$out/stats.json" && check OK "mbufs_in_use 0" || check FAIL "mbufs_in_use not 0"
    grep -E '"(rx_packets|tx_packets|drops_total)":' "$out/stats.json" | head -n 3 | tr -d ' ,' | tr '\n' ' ' | sed 's/^/        /'
    echo
else
    check FAIL "no stats JSON"
fi

# Stats lines: "[  12.0s] rx ... total rx N tx M drops D"
mono=$(awk '/^\[/ {
        for (i = 1; i <= NF; i++) if ($i == "total") { rx = $(i+2); tx = $(i+4); dr = $(i+6) }
        n++
        if (rx < prx || tx < ptx || dr < pdr) { bad = bad sprintf("line %d: %s/%s/%s after %s/%s/%s; ", n, rx, tx, dr, prx, ptx, pdr) }
        if (tx > rx) { bad = bad sprintf("line %d: tx %s > rx %s; ", n, tx, rx) }
        prx = rx; ptx = tx; pdr = dr
    }
    END { if (n < 2) print "FAIL only " n+0 " stats lines"; else if (bad != "") print "FAIL " bad; else print "OK " n " stats lines, totals monotonic, last rx " prx " tx " ptx " drops " pdr }' "$out/stdout.log")
check "${mono%% *}" "${mono#* }"

warm=$(awk -v d="$duration" 'BEGIN { w = d * 0.2; if (w < 10) w = 10; print w }')
flat=$(awk -v warm="$warm" -v tol="$tol_kb" 'NR > 1 && $1 >= warm {
        n++; if (n == 1 || $2 < min) min = $2; if (n == 1 || $2 > max) max = $2; if (n == 1) first = $2; last = $2
    }
    NR > 1 && NR == 2 { start = $2 }
    END {
        if (n < 2) { print "FAIL only " n+0 " RSS samples after the " warm " s warm-up"; exit }
        msg = sprintf("RSS after %s s warm-up: %d samples, min %d KiB, max %d KiB, first %d, last %d (spread %d KiB, tolerance %d; at start %d KiB)", warm, n, min, max, first, last, max - min, tol, start)
        print ((max - min <= tol) ? "OK " : "FAIL ") msg
    }' "$out/rss.tsv")
check "${flat%% *}" "${flat#* }"

if [ "$fail" -ne 0 ]; then
    echo "soak: FAILED (logs in $out)"
    exit 1
fi
echo "soak: passed"
