#!/usr/bin/env bash
# bench/pipeline.sh — the forwarding-pipeline benchmark, in one command.
#
# Builds tqfwd and tqfwd-gen, writes 64-byte UDP over 1024 flows with
# tqfwd-gen, then runs on the same two virtual ports and the same lcores
# (-l 0-1, --no-pci, --in-memory on huge pages, else --no-huge -m 1024):
#   tq           tqfwd --backend tq   (main lcore RX+TX, lcore 1 worker)
#   ring         tqfwd --backend ring (same layout)
#   testpmd-mac  dpdk-testpmd --forward-mode=mac, one forwarding lcore
#   testpmd-io   dpdk-testpmd --forward-mode=io,  one forwarding lcore
# on net_null (size=64, the CPU ceiling) and net_pcap (infinite_rx=1
# replaying the generated file, TX discarded). The contenders alternate
# A B C D A B C D ... for R rounds; each run forwards S+1 seconds and only
# the stats lines after the first second count; figures are medians over
# rounds. Full mode: the default point (burst 32, depth 2048, sharded,
# --on-full wait, --worker-cycles 0) for all contenders on both traffics,
# burst 8/64 for all contenders, then one-factor-at-a-time sweeps for tq
# and ring on net_null: --on-full drop (overload: drop vs wait, with the
# drops after RX), depth 1024/4096/16384, topology shared, --worker-cycles
# 100/500, every 2-lcore layout and -l 0, and the default point without
# --latency (the latency cost); the net_null default, on-full drop and no
# --latency rows run twice per round (A B ... B A). tqfwd runs always use
# --latency --latency-sample 16 unless the row says otherwise.
# Then latency below saturation: capacity = min(tq, ring) net_null
# default-point median of this run; tq and ring alternated at 25/50/75 %
# of it (--rx-rate, --on-full drop), R rounds. Then the physical floor:
# bench/pingpong.c (compiled here with cc -O2 -pthread) bounces one cache
# line between CPUs 0 and 1, one-way ns, median of 5 runs. The report adds
# the cores that 14.88/37.2/59.52/148.8 Mpps would need per role, from the
# busy cycles per packet of the rows that isolate RX, worker and TX and
# the TSC Hz. Afterwards (full mode) perf record a tq, a ring and a
# testpmd io run (by thread and library: the PMD beside the rest) and
# perf stat a tq and a ring run.
#
# Writes:
#   stdout                                    markdown tables, ratios, targets
#   bench/results/pipeline-<date>.md          the same
#   bench/results/pipeline-<date>.json        every run and every median
#   bench/results/pipeline-<date>.svg         throughput / latency chart
#   bench/results/pipeline-<date>-perf.txt    perf output (full mode)
# --quick writes target/bench/pipeline-<date>-quick.{md,json,svg} instead.
# bench/results/ tracks the latest full run of each bench, listed in
# bench/results/README.md: a new full run replaces the previous one there
# (git rm the old files, update the index).
# See bench/README.md, "Pipeline bench".
#
# Usage: bench/pipeline.sh [options]
#   --quick          net_null only: default point, on-full drop (tq, ring),
#                    no --latency (tq), 2 rounds of 1+1 s runs; one load
#                    (50 %, 1 round); the floor (< 90 s once built);
#                    outputs under target/bench/
#   --rounds N       rounds (default 3; quick 2)
#   --seconds S      measured seconds per run, after a 1 s warm-up
#                    (default 2; quick 1)
#   --wait-quiet S   wait up to S s for a quiet machine first: no cargo,
#                    rustc, tqfwd*, testpmd running and CPUs < 15 % busy
#                    (default 900; quick 0)
#   --match-placement N
#                    re-run a group (one point's contenders, back to back)
#                    up to N times, its tqfwd runs only, while its tq and
#                    ring runs drew different host placements (near / far,
#                    from lcore_trip_ns); the redraws add to the time
#                    (default 3, quick too; 0: never)
#   --no-perf        skip the perf record / perf stat runs
#   --perf-only      only the perf record / perf stat runs (tq, ring and
#                    testpmd io, by thread and library;
#                    net_null, default point, 3 s each)
#   --no-build       use the binaries in target/release as they are
#   --contenders L   only these contenders, comma-separated, of tq, ring,
#                    testpmd-mac, testpmd-io (default: all)
#   -h, --help       this text
#
# Many-core sweep (bench/pipeline_sweep.py; bench/README.md, "Many-core
# sweep"): with --lcores, instead of the runs above, pipeline shapes on the
# lcores given, each role on lcores of its own (the first lcore is EAL's
# main lcore and takes the first role): k RX+TX -> 1 worker and
# k RX -> 1 worker -> 1 TX for k = 1, 2, 4, 8, 16 (more while the list
# allows), k RX -> m workers -> t TX for 1-2-1, 2-2-2, 2-4-2, 4-4-4,
# 4-8-4 and 8-16-8, and a --class on a worker of its own (RX+W+TX | class W
# on 2 lcores, 1-1+class-1, 2-2+class-2); each for tq, ring and copy
# (--backend ring --handoff copy), alternated, R rounds. Per row and
# contender: forwarded Mpps (median), busy cycles per forwarded packet per
# role, p50/p90/p99 at 10 % and 50 % of the row's capacity (--rx-rate).
# A row that needs more lcores than the list holds is listed with the
# count it needs, not run. Writes bench/results/pipeline-sweep-<date>.{md,json}
# (--quick: target/bench/pipeline-sweep-<date>-quick.*).
#   --lcores LIST    EAL lcore list (0-1, 2-33, 0,2,4-7; ID@CPU as EAL's
#                    --lcores takes it); turns the sweep on
#   --eal "ARGS"     the ports: EAL device options instead of the virtual
#                    ports (--no-pci and the vdevs), e.g. "-a 0000:3b:00.0
#                    -a 0000:3b:00.1"; traffic comes from your generator
#   --traffic T      virtual ports: pcap (default: net_pcap replaying 64 B
#                    UDP over 1024 flows, one rx_pcap per RX lcore) or null
#                    (net_null: no flows, no class rows)
#   --rows L         row families, comma-separated, of mp, shape, class
#                    (default: all)
#   --class-match M  the class's MATCH (default udp,src=10.0.0.0/24: a
#                    quarter of the generated flows)
#   --loads L        latency loads as fractions of the row's capacity
#                    (default 0.1,0.5)
#   --dry-run        print the rows and their tqfwd commands, run nothing
#   --contenders L   of tq, ring, copy (default: all three)
#   --rounds N, --seconds S, --wait-quiet S, --no-build, --quick as above
#                    (defaults 5 rounds of 2 s: about 5 min on 2 lcores,
#                    50 on 32; quick: 1 round of 1 s)
# Exit codes: 0 ok; 1 a run failed (crash, end check failed, no figures),
# or no configuration ran at all; 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

QUICK=0 ROUNDS="" SECONDS_ARG="" WAIT_QUIET="" PERF=1 BUILD=1 PERF_ONLY=0 CONTENDERS="" MATCH=""
LCORES="" EAL_PORTS="" TRAFFIC="" ROWS="" CLASS_MATCH="" LOADS="" DRY_RUN=0
ORIG_ARGS=("$@")
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "pipeline.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --rounds) need_arg "$@"; ROUNDS="$2"; shift ;;
        --seconds) need_arg "$@"; SECONDS_ARG="$2"; shift ;;
        --wait-quiet) need_arg "$@"; WAIT_QUIET="$2"; shift ;;
        --match-placement) need_arg "$@"; MATCH="$2"; shift ;;
        --no-perf) PERF=0 ;;
        --perf-only) PERF_ONLY=1 ;;
        --no-build) BUILD=0 ;;
        --contenders) need_arg "$@"; CONTENDERS="$2"; shift ;;
        --lcores) need_arg "$@"; LCORES="$2"; shift ;;
        --eal) need_arg "$@"; EAL_PORTS="$2"; shift ;;
        --traffic) need_arg "$@"; TRAFFIC="$2"; shift ;;
        --rows) need_arg "$@"; ROWS="$2"; shift ;;
        --class-match) need_arg "$@"; CLASS_MATCH="$2"; shift ;;
        --loads) need_arg "$@"; LOADS="$2"; shift ;;
        --dry-run) DRY_RUN=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "pipeline.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for v in "$ROUNDS" "$SECONDS_ARG" "$WAIT_QUIET" "$MATCH"; do
    [ -z "$v" ] || [[ "$v" =~ ^[0-9]+$ ]] || { echo "pipeline.sh: '$v' is not a whole number" >&2; exit 2; }
done
[ -z "$ROUNDS" ] || [ "$ROUNDS" -ge 1 ] || { echo "pipeline.sh: --rounds must be >= 1" >&2; exit 2; }
[ -z "$SECONDS_ARG" ] || [ "$SECONDS_ARG" -ge 1 ] || { echo "pipeline.sh: --seconds must be >= 1" >&2; exit 2; }
SWEEP=$([ -n "$LCORES" ] && echo 1 || echo 0)
if [ "$SWEEP" = 0 ]; then
    for o in "--eal:$EAL_PORTS" "--traffic:$TRAFFIC" "--rows:$ROWS" "--class-match:$CLASS_MATCH" \
             "--loads:$LOADS" "--dry-run:${DRY_RUN#0}"; do
        [ -z "${o#*:}" ] || { echo "pipeline.sh: ${o%%:*} belongs to the sweep: give --lcores LIST" >&2; exit 2; }
    done
elif [ "$PERF_ONLY" = 1 ] || [ -n "$MATCH" ]; then
    echo "pipeline.sh: --perf-only and --match-placement are not sweep options (--lcores)" >&2; exit 2
fi
if [ "$SWEEP" = 1 ] && [ "$QUICK" = 1 ]; then
    ROUNDS=${ROUNDS:-1} SECONDS_ARG=${SECONDS_ARG:-1} WAIT_QUIET=${WAIT_QUIET:-0}
elif [ "$SWEEP" = 1 ]; then
    ROUNDS=${ROUNDS:-5} SECONDS_ARG=${SECONDS_ARG:-2} WAIT_QUIET=${WAIT_QUIET:-900}
elif [ "$QUICK" = 1 ]; then
    ROUNDS=${ROUNDS:-2} SECONDS_ARG=${SECONDS_ARG:-1} WAIT_QUIET=${WAIT_QUIET:-0} PERF=0
else
    ROUNDS=${ROUNDS:-3} SECONDS_ARG=${SECONDS_ARG:-2} WAIT_QUIET=${WAIT_QUIET:-900}
fi

# Full runs are tracked in bench/results/; --quick runs are plumbing checks
# and stay out of the tree.
RESULTS=$([ "$QUICK" = 1 ] && echo target/bench || echo bench/results)
STAMP=$(date +%Y-%m-%d-%H%M%S)
command -v python3 >/dev/null || { echo "pipeline.sh: python3 not found" >&2; exit 1; }
SWEEP_PY=(python3 bench/pipeline_sweep.py --lcores "$LCORES" --rounds "$ROUNDS" --seconds "$SECONDS_ARG"
          --wait-quiet "$WAIT_QUIET" --results "$RESULTS" --stamp "$STAMP"
          --command="bench/pipeline.sh ${ORIG_ARGS[*]}")
[ -n "$EAL_PORTS" ] && SWEEP_PY+=(--eal="$EAL_PORTS")
[ -n "$TRAFFIC" ] && SWEEP_PY+=(--traffic "$TRAFFIC")
[ -n "$ROWS" ] && SWEEP_PY+=(--rows "$ROWS")
[ -n "$CLASS_MATCH" ] && SWEEP_PY+=(--class-match "$CLASS_MATCH")
[ -n "$LOADS" ] && SWEEP_PY+=(--loads "$LOADS")
[ -n "$CONTENDERS" ] && SWEEP_PY+=(--contenders "$CONTENDERS")
[ "$QUICK" = 1 ] && SWEEP_PY+=(--quick)
if [ "$DRY_RUN" = 1 ]; then
    exec "${SWEEP_PY[@]}" --dry-run --tqfwd target/release/tqfwd --pcap PCAP --mem="--in-memory" --mem-note=-
fi
mkdir -p "$RESULTS"
if ! command -v dpdk-testpmd >/dev/null || ! pkg-config --exists libdpdk 2>/dev/null; then
    scripts/install-deps.sh >&2
fi

if [ "$BUILD" = 1 ]; then
    echo "pipeline.sh: cargo build --release --bins --features testkit" >&2
    cargo build --release --bins --features testkit >&2
fi
# Private copies: other engineers may rebuild target/release mid-run.
WORK=$(mktemp -d /tmp/tqfwd-pipeline.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp target/release/tqfwd target/release/tqfwd-gen "$WORK/"
# The physical floor (bench/pingpong.c): C, built with whichever compiler
# install-deps.sh left (cc, else clang); without one it is reported as not
# measured.
CC=$(command -v cc || command -v clang || true)
PINGPONG=()
if [ "$SWEEP" = 1 ]; then
    :  # the sweep measures no floor
elif [ -n "$CC" ] && "$CC" -O2 -pthread -o "$WORK/pingpong" bench/pingpong.c >&2; then
    PINGPONG=(--pingpong "$WORK/pingpong")
else
    echo "pipeline.sh: could not compile bench/pingpong.c (cc/clang): no physical floor" >&2
fi
PCAP="$WORK/udp64-1024flows.pcap"
"$WORK/tqfwd-gen" --out "$PCAP" --flows 1024 --packets 8192 --size 64 >&2

# Huge pages: reserve if allowed; use them when >= 512 MiB are free
# (testpmd's default pool alone is ~340 MiB), else --no-huge -m 1024. The
# sweep keeps a host's own reservation when it has 512 MiB free.
free_kb=$(awk '/HugePages_Free/ {f=$2} /Hugepagesize/ {s=$2} END {print f*s}' /proc/meminfo)
if [ "$SWEEP" = 0 ] || [ "${free_kb:-0}" -lt 524288 ]; then
    scripts/hugepages.sh setup 512 >&2 || true
    free_kb=$(awk '/HugePages_Free/ {f=$2} /Hugepagesize/ {s=$2} END {print f*s}' /proc/meminfo)
fi
if [ "${free_kb:-0}" -ge 524288 ] && grep -q hugetlbfs /proc/mounts; then
    MEM="--in-memory"
    MEM_NOTE="huge pages ($((free_kb / 1024)) MiB free, --in-memory)"
else
    MEM="--no-huge -m 1024"
    MEM_NOTE="NO huge pages (--no-huge -m 1024): not comparable with huge-page figures"
fi
echo "pipeline.sh: EAL memory: $MEM_NOTE" >&2
if [ "$SWEEP" = 1 ]; then
    [ -z "$EAL_PORTS" ] || [ "$MEM" = "--in-memory" ] ||
        echo "pipeline.sh: WARNING: a NIC's DMA needs huge pages; reserve them (scripts/hugepages.sh setup)" >&2
    rc=0
    "${SWEEP_PY[@]}" --tqfwd "$WORK/tqfwd" --pcap "$PCAP" --mem="$MEM" --mem-note="$MEM_NOTE" || rc=$?
    exit $rc
fi

PY=(python3 bench/pipeline.py --tqfwd "$WORK/tqfwd" --pcap "$PCAP" --mem="$MEM" --mem-note="$MEM_NOTE"
    --rounds "$ROUNDS" --seconds "$SECONDS_ARG" --wait-quiet "$WAIT_QUIET" --results "$RESULTS"
    --stamp "$STAMP" --command="bench/pipeline.sh ${ORIG_ARGS[*]}" "${PINGPONG[@]}")
[ "$QUICK" = 1 ] && PY+=(--quick)
[ "$PERF" = 1 ] && PY+=(--perf)
[ "$PERF_ONLY" = 1 ] && PY+=(--perf-only)
[ -n "$CONTENDERS" ] && PY+=(--contenders "$CONTENDERS")
[ -n "$MATCH" ] && PY+=(--match-placement "$MATCH")
"${PY[@]}"
