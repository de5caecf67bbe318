#!/usr/bin/env bash
# Runs tqfwd with a preset from dpdk-config/ (one file per target: e810,
# cx6dx, null, pcap, memif, af_packet).
#
#   scripts/run.sh dpdk-config/<preset>.conf [extra tqfwd options]
#   scripts/run.sh dpdk-config/pcap.conf --duration 5 --backend ring
#
# Sources the preset, checks huge pages (hardware presets need them;
# software presets fall back to --no-huge -m NO_HUGE_MB), checks that PCI
# devices sit on the expected driver, prints the exact command and runs it.
# Extra options replace the preset's option of the same name (--peer-mac
# adds). A preset may define preset_setup (before tqfwd), preset_start_peers
# (after tqfwd started in the background) and preset_teardown (after tqfwd
# exited, also on errors and Ctrl-C, which goes to tqfwd only).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: $0 dpdk-config/<preset>.conf [extra tqfwd options]" >&2
    echo "presets: $(cd dpdk-config && ls ./*.conf | sed 's|^\./||' | tr '\n' ' ')" >&2
    exit 2
}
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
preset=$1
shift
[ -f "$preset" ] || { echo "run: no such preset file: $preset" >&2; usage; }

export TQFWD_BIN_DIR=${TQFWD_BIN_DIR:-target/release}

# Preset defaults (a preset overrides what it needs).
PRESET_KIND=software
LCORES=0-1
EAL_ARGS=()
TQFWD_ARGS=()
NO_HUGE_MB=512
HUGE_MIN_MB=256      # software presets: tqfwd's pool is ~40 MB
PCI_DEVICES=()
EXPECT_DRIVER=
PEER_PIDS=()
# shellcheck source=/dev/null
source "$preset"
name=$(basename "$preset" .conf)

# --- binaries ---
if [ ! -x "$TQFWD_BIN_DIR/tqfwd" ] || [ ! -x "$TQFWD_BIN_DIR/tqfwd-gen" ] || [ ! -x "$TQFWD_BIN_DIR/tqfwd-udp-peer" ]; then
    echo "run: building (cargo build --release --bins --features testkit)"
    cargo build --release --bins --features testkit
fi

# --- merge options: the user's replace the preset's of the same name ---
# (tqfwd rejects a single-valued option given twice). Which options take no
# value and which may repeat is read from `tqfwd --help`.
help=$("$TQFWD_BIN_DIR/tqfwd" --help 2>/dev/null || true)
declare -A is_flag=() is_repeatable=()
while read -r o; do [ -n "$o" ] && is_flag[$o]=1; done < <(sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z0-9-]+)$/\2/p' <<< "$help")
while read -r o; do [ -n "$o" ] && is_repeatable[$o]=1; done < <(awk '/^ +(-[a-zA-Z], )?--[a-z0-9-]+/ {opt = ($1 ~ /^--/) ? $1 : $2} /\(repeatable\)/ {print opt}' <<< "$help")
flag_only() { [ -n "${is_flag[$1]:-}" ]; }
declare -A overridden=()
RUN_DURATION=
prev=
for a in "$@"; do
    key=${a%%=*}
    if [[ "$a" == --* ]] && [ -z "${is_repeatable[$key]:-}" ]; then
        overridden[$key]=1
    fi
    [ "$prev" = --duration ] && RUN_DURATION=$a
    case "$a" in --duration=*) RUN_DURATION=${a#--duration=} ;; esac
    prev=$a
done
app=()
skip_next=0
for a in "${TQFWD_ARGS[@]}"; do
    if [ "$skip_next" = 1 ]; then skip_next=0; continue; fi
    key=${a%%=*}
    if [[ "$a" == --* ]] && [ -n "${overridden[$key]:-}" ]; then
        [[ "$a" != *=* ]] && ! flag_only "$a" && skip_next=1
        continue
    fi
    app+=("$a")
done
# the preset's own --duration counts when the user gave none
if [ -z "$RUN_DURATION" ]; then
    for ((i = 0; i < ${#app[@]}; i++)); do
        [ "${app[$i]}" = --duration ] && RUN_DURATION=${app[$((i + 1))]:-}
    done
fi
export RUN_DURATION
app+=("$@")

# --- huge pages ---
free_pages=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
page_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
free_mb=$(( ${free_pages:-0} * ${page_kb:-2048} / 1024 ))
mounted=0
grep -q hugetlbfs /proc/mounts && mounted=1
MEM_ARGS=()
PEER_MEM_ARGS=()
if [ "$mounted" = 1 ] && [ "$free_mb" -ge "$HUGE_MIN_MB" ]; then
    echo "run: huge pages: $free_mb MB free"
    if [ "$PRESET_KIND" = software ]; then
        # no runtime files: several DPDK processes (memif peers) coexist
        MEM_ARGS=(--in-memory)
        PEER_MEM_ARGS=(--in-memory -m 128)
    fi
elif [ "$PRESET_KIND" = hardware ]; then
    echo "run: $name needs >= $HUGE_MIN_MB MB of free huge pages (free: $free_mb MB, hugetlbfs mounted: $mounted)." >&2
    echo "run: reserve them: scripts/hugepages.sh setup 2048 (or 1 GiB pages on the kernel command line)" >&2
    exit 1
else
    echo "run: no free huge pages ($free_mb MB free, hugetlbfs mounted: $mounted): using --no-huge -m $NO_HUGE_MB (slower)"
    MEM_ARGS=(--no-huge -m "$NO_HUGE_MB" --file-prefix "tqfwd-$name-$$")
    PEER_MEM_ARGS=(--no-huge -m 256)
fi
export PEER_MEM_ARGS

# --- devices (hardware presets) ---
for dev in "${PCI_DEVICES[@]}"; do
    sys=/sys/bus/pci/devices/$dev
    if [ ! -e "$sys" ]; then
        echo "run: PCI device $dev not found (set TQ_PCI0/TQ_PCI1; scripts/numa.sh lists the NICs)" >&2
        exit 1
    fi
    drv=$(basename "$(readlink "$sys/driver" 2>/dev/null)" 2>/dev/null || true)
    if [ -n "$EXPECT_DRIVER" ] && [ "$drv" != "$EXPECT_DRIVER" ]; then
        echo "run: $dev is on driver '${drv:-none}', $name expects '$EXPECT_DRIVER' (scripts/bind.sh)" >&2
        exit 1
    fi
    node=$(cat "$sys/numa_node" 2>/dev/null || echo -1)
    echo "run: $dev driver $drv NUMA node $node (lcores $LCORES: scripts/numa.sh -l $LCORES)"
done

cmd=("$TQFWD_BIN_DIR/tqfwd" -l "$LCORES" "${EAL_ARGS[@]}" "${MEM_ARGS[@]}" -- "${app[@]}")
show=
for a in "${cmd[@]}"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,@+%-]+$ ]]; then show+="$a "; else show+="$(printf '%q' "$a") "; fi
done
echo "run: $show"

has() { declare -F "$1" >/dev/null; }
if has preset_setup; then preset_setup; fi

if ! has preset_start_peers && ! has preset_teardown; then
    exec "${cmd[@]}"
fi

# tqfwd in the background so the preset's peers can start beside it.
tq_pid=
cleanup() {
    trap - EXIT INT TERM
    if [ -n "$tq_pid" ] && kill -0 "$tq_pid" 2>/dev/null; then
        kill -INT "$tq_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$tq_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$tq_pid" 2>/dev/null || true
    fi
    if has preset_teardown; then preset_teardown || true; fi
}
trap cleanup EXIT
trap '[ -n "$tq_pid" ] && kill -INT "$tq_pid" 2>/dev/null' INT TERM
"${cmd[@]}" &
tq_pid=$!
if has preset_start_peers; then preset_start_peers; fi
set +e
wait "$tq_pid"
rc=$?
# a trapped Ctrl-C interrupts `wait` (rc > 128): keep waiting for the drain
while [ "$rc" -gt 128 ] && kill -0 "$tq_pid" 2>/dev/null; do
    wait "$tq_pid"
    rc=$?
done
set -e
tq_pid=
cleanup
exit "$rc"
