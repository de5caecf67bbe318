#!/usr/bin/env bash
# bench/l3fwd.sh — tqfwd's L3 mode (--routes) head to head with DPDK's l3fwd.
#
# Builds l3fwd from the dpdk-doc example (/usr/share/dpdk/examples/l3fwd;
# dpdk-doc is installed with apt when missing): copies l3fwd and common to
# target/l3fwd-build/, applies bench/l3fwd.patch (RX offloads masked by what
# the port offers, tables sized for 1,000,000 IPv4 routes, a pool that holds
# net_pcap's replayed frames: see the patch's header) and runs `make shared`
# with -I.../common in CFLAGS; rebuilt when the patch or DPDK changes.
# Writes the traffic (bench/l3fwd.py, Python's struct: 64-byte IPv4/UDP
# frames, 60 bytes in the pcap) and the route tables in l3fwd's format
# (`R<prefix>/<len> <port>`; one file with both families for tqfwd --routes,
# split into --rule_ipv4 / --rule_ipv6 files for l3fwd):
#   16   16 routes (198.18.0.0/24 -> 0, 198.18.1.0/24 -> 1, 14 others,
#        4 IPv6); 1024 UDP flows to the two /24s, 8192 frames
#   1m   1,000,000 random distinct IPv4 prefixes (mostly /24 and shorter,
#        2 % longer; host bits clear; port 0 or 1) + 4 IPv6; 65,536 flows,
#        each to a random address of a route drawn at random, 1 frame each
# Then, per table, alternates on the same two net_pcap ports
# (rx_pcap=F,rx_pcap=F,infinite_rx=1 each; own --file-prefix, --no-pci,
# --in-memory on huge pages, else --no-huge -m 2048), the first contender
# rotating each round:
#   l3fwd-lpm-1  l3fwd --lookup=lpm -l 0    --config="(0,0,0),(1,0,0)"
#   l3fwd-lpm-2  l3fwd --lookup=lpm -l 0-1  --config="(0,0,0),(1,0,1)"
#   l3fwd-fib-1  l3fwd --lookup=fib -l 0    --config="(0,0,0),(1,0,0)"
#                (all: -p 0x3 --parse-ptype --rule_ipv4=F4 --rule_ipv6=F6)
#   testpmd-io   dpdk-testpmd -l 0-1 --forward-mode=io (1 forwarding lcore):
#                the I/O anchor
#   tqfwd-tq     tqfwd -l 0-1 --routes F --backend tq
#   tqfwd-ring   tqfwd -l 0-1 --routes F --backend ring
#   tqfwd-copy   tqfwd -l 0-1 --routes F --backend ring --handoff copy
#   tqfwd-l2     tqfwd -l 0-1 --backend tq (no --routes; for reference)
# A tqfwd that refuses --routes (exit 2) has its --routes contenders
# skipped with that message. Each run: start-up until the ports transmit
# (telemetry), 1 s warm-up, then S s between two reads of /ethdev/stats,N
# over DPDK telemetry. Per contender and table: forwarded Mpps (both ports'
# opackets / s), cycles per forwarded packet (l3fwd, testpmd: TSC Hz x
# lcores / pps, busy polling; tqfwd: its --stats-json busy cycles per
# lcore), medians, paired ratios against l3fwd-lpm-1 and tq / ring, tqfwd's
# host placement (lcore_trip_ns), the L3 cost beyond I/O (l3fwd-lpm-1 less
# testpmd-io, cycles/pkt) beside tqfwd's worker lcore.
# See bench/README.md, "Against DPDK's l3fwd".
#
# Writes bench/results/l3fwd-<date>.md (also on stdout) and .json.
#
# Usage: bench/l3fwd.sh [options]
#   --rounds N       rounds (default 5)
#   --seconds S      measured seconds per run, after 1 s of warm-up (default 5)
#   --tables L       of 16, 1m, comma-separated (default 16,1m)
#   --only L         only these contenders, comma-separated (names above;
#                    default all); the ratios need l3fwd-lpm-1
#   --tqfwd PATH     the tqfwd binary (default target/release/tqfwd; copied
#                    to a private directory first)
#   --build          cargo build --release --bins --features testkit first
#   --wait-quiet S   wait up to S s for a quiet machine first: no cargo,
#                    rustc, tqfwd*, testpmd running and CPUs < 15 % busy;
#                    up to 120 s again before each round (default 900; 0: no)
#   --ports "ARGS"   EAL device options instead of the net_pcap ports, e.g.
#                    "-a 0000:3b:00.0 -a 0000:3b:00.1" (NIC host: no --no-pci,
#                    no vdevs; the traffic comes from your generator, built
#                    like the pcaps here)
#   --seed N         seed of the 1M table and its flows (default 1)
#   --results DIR    where the .md and .json go (default bench/results)
#   --write-traffic DIR
#                    only write the route files (both families; l3fwd's v4
#                    and v6 files) and the pcaps of --tables to DIR, and
#                    exit: the traffic for a NIC host's generator
#   -h, --help       this text
# Exit codes: 0 ok; 1 a run failed (crash, tqfwd end check failed, no
# figures) or nothing ran; 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

ROUNDS=5 SECS=5 TABLES=16,1m ONLY="" TQFWD=target/release/tqfwd BUILD=0 WAIT_QUIET=900 PORTS="" SEED=1
RESULTS=bench/results WRITE_TRAFFIC=""
ORIG_ARGS=("$@")
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "l3fwd.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) need_arg "$@"; ROUNDS="$2"; shift ;;
        --seconds) need_arg "$@"; SECS="$2"; shift ;;
        --tables) need_arg "$@"; TABLES="$2"; shift ;;
        --only) need_arg "$@"; ONLY="$2"; shift ;;
        --tqfwd) need_arg "$@"; TQFWD="$2"; shift ;;
        --build) BUILD=1 ;;
        --wait-quiet) need_arg "$@"; WAIT_QUIET="$2"; shift ;;
        --ports) need_arg "$@"; PORTS="$2"; shift ;;
        --seed) need_arg "$@"; SEED="$2"; shift ;;
        --results) need_arg "$@"; RESULTS="$2"; shift ;;
        --write-traffic) need_arg "$@"; WRITE_TRAFFIC="$2"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "l3fwd.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for v in "$ROUNDS" "$SECS" "$WAIT_QUIET" "$SEED"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "l3fwd.sh: '$v' is not a whole number" >&2; exit 2; }
done
[ "$ROUNDS" -ge 1 ] || { echo "l3fwd.sh: --rounds must be >= 1" >&2; exit 2; }
[ "$SECS" -ge 1 ] || { echo "l3fwd.sh: --seconds must be >= 1" >&2; exit 2; }
command -v python3 >/dev/null || { echo "l3fwd.sh: python3 not found" >&2; exit 1; }
for t in ${TABLES//,/ }; do
    case "$t" in 16|1m) ;; *) echo "l3fwd.sh: unknown table '$t' (16, 1m)" >&2; exit 2 ;; esac
done
for n in ${ONLY//,/ }; do
    case "$n" in
        l3fwd-lpm-1|l3fwd-lpm-2|l3fwd-fib-1|testpmd-io|tqfwd-tq|tqfwd-ring|tqfwd-copy|tqfwd-l2) ;;
        *) echo "l3fwd.sh: unknown contender '$n' (l3fwd-lpm-1, l3fwd-lpm-2, l3fwd-fib-1, testpmd-io," \
                "tqfwd-tq, tqfwd-ring, tqfwd-copy, tqfwd-l2)" >&2; exit 2 ;;
    esac
done
STAMP=$(date +%Y-%m-%d-%H%M%S)
if [ -n "$WRITE_TRAFFIC" ]; then
    exec python3 bench/l3fwd.py --write-traffic "$WRITE_TRAFFIC" --tables "$TABLES" --seed "$SEED"
fi

if ! command -v dpdk-testpmd >/dev/null || ! pkg-config --exists libdpdk 2>/dev/null; then
    scripts/install-deps.sh >&2
fi

# ---- l3fwd from dpdk-doc, patched, in target/l3fwd-build
EXAMPLES=/usr/share/dpdk/examples
if [ ! -d "$EXAMPLES/l3fwd" ]; then
    echo "l3fwd.sh: installing dpdk-doc (DPDK's example sources)" >&2
    apt-get install -y dpdk-doc >&2 || { apt-get update >&2 && apt-get install -y dpdk-doc >&2; }
fi
[ -d "$EXAMPLES/l3fwd" ] && [ -d "$EXAMPLES/common" ] ||
    { echo "l3fwd.sh: no $EXAMPLES/l3fwd after installing dpdk-doc" >&2; exit 1; }
B="$PWD/target/l3fwd-build"
KEY="patch $(sha256sum bench/l3fwd.patch | cut -c1-16); dpdk-doc $(dpkg-query -W -f='${Version}' dpdk-doc 2>/dev/null || echo '?'); libdpdk $(pkg-config --modversion libdpdk)"
if [ -x "$B/l3fwd/build/l3fwd" ] && [ "$(cat "$B/stamp" 2>/dev/null)" = "$KEY" ]; then
    echo "l3fwd.sh: l3fwd up to date in $B ($KEY)" >&2
else
    echo "l3fwd.sh: building l3fwd in $B ($KEY)" >&2
    rm -rf "$B"
    mkdir -p "$B"
    cp -r "$EXAMPLES/l3fwd" "$EXAMPLES/common" "$B/"
    chmod -R u+w "$B"
    (cd "$B/l3fwd" && patch -p1 --no-backup-if-mismatch < "$OLDPWD/bench/l3fwd.patch" >&2 &&
        CFLAGS="-I$B/common" make shared >&2) ||
        { echo "l3fwd.sh: l3fwd build failed" >&2; exit 1; }
    echo "$KEY" > "$B/stamp"
fi

# ---- tqfwd (optional: its rows are skipped without it)
if [ "$BUILD" = 1 ]; then
    echo "l3fwd.sh: cargo build --release --bins --features testkit" >&2
    cargo build --release --bins --features testkit >&2
fi
# Private copies: other engineers may rebuild target/ mid-run.
WORK=$(mktemp -d /tmp/tqfwd-l3fwd.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp "$B/l3fwd/build/l3fwd-shared" "$WORK/l3fwd"
TQ_COPY="$TQFWD" TQ_NOTE="none at $TQFWD: the tqfwd contenders are skipped"
if [ -x "$TQFWD" ]; then
    cp "$TQFWD" "$WORK/tqfwd"
    TQ_COPY="$WORK/tqfwd"
    TQ_NOTE="$TQFWD ($("$WORK/tqfwd" --version 2>/dev/null | head -1), sha256 $(sha256sum "$WORK/tqfwd" | cut -c1-16))"
else
    echo "l3fwd.sh: no tqfwd at $TQFWD (cargo build --release --features testkit, or --build): its rows are skipped" >&2
fi
L3_NOTE="dpdk-doc's example + bench/l3fwd.patch ($KEY), make shared (-O3 $(pkg-config --cflags libdpdk | grep -o -- '-march=[^ ]*' || true))"

# ---- huge pages: reserve 2 GiB if allowed (l3fwd FIB with the 1M table
# takes ~1.4 GiB, LPM ~1 GiB: the tables and 147,456 mbufs); use them with
# >= 1.5 GiB free, else --no-huge -m 2048
free_kb=$(awk '/HugePages_Free/ {f=$2} /Hugepagesize/ {s=$2} END {print f*s}' /proc/meminfo)
if [ "${free_kb:-0}" -lt 1572864 ]; then
    total=$(awk '/HugePages_Total/ {print $2}' /proc/meminfo)
    scripts/hugepages.sh setup $(( ${total:-0} + (1572864 - ${free_kb:-0}) / 2048 + 64 )) >&2 || true
    free_kb=$(awk '/HugePages_Free/ {f=$2} /Hugepagesize/ {s=$2} END {print f*s}' /proc/meminfo)
fi
if [ "${free_kb:-0}" -ge 1572864 ] && grep -q hugetlbfs /proc/mounts; then
    MEM="--in-memory"
    MEM_NOTE="huge pages ($((free_kb / 1024)) MiB free, --in-memory)"
else
    MEM="--no-huge -m 2048 --in-memory"
    MEM_NOTE="NO huge pages (--no-huge -m 2048): not comparable with huge-page figures"
fi
[ -z "$PORTS" ] || [ "$MEM" = "--in-memory" ] ||
    echo "l3fwd.sh: WARNING: a NIC's DMA needs huge pages; reserve them (scripts/hugepages.sh setup)" >&2
echo "l3fwd.sh: EAL memory: $MEM_NOTE" >&2

rc=0
python3 bench/l3fwd.py --l3fwd "$WORK/l3fwd" --l3fwd-note "$L3_NOTE" --tqfwd "$TQ_COPY" --tqfwd-note "$TQ_NOTE" \
    --rounds "$ROUNDS" --seconds "$SECS" --tables "$TABLES" --only "$ONLY" --ports="$PORTS" --seed "$SEED" \
    --wait-quiet "$WAIT_QUIET" --mem="$MEM" --mem-note="$MEM_NOTE" --work "$WORK" --results "$RESULTS" \
    --stamp "$STAMP" --keep target/bench --command="bench/l3fwd.sh ${ORIG_ARGS[*]}" || rc=$?
exit $rc
