#!/usr/bin/env bash
# Runs tqfwd with a preset from dpdk-config/ (one per target: e810, cx6dx,
# null, pcap, memif, af_packet).
#
#   scripts/run.sh dpdk-config/<preset>.toml [extra tqfwd options]
#   scripts/run.sh dpdk-config/pcap.toml --duration 5 --backend ring
#
# The preset's .toml is a tqfwd config file (options and EAL arguments) and
# is run as `tqfwd --config PRESET [memory options] -- [extra options]`:
# an extra option replaces the preset's value of that option (a repeatable
# one, like --peer-mac or --class, the preset's whole list). The .sh beside
# it is this script's part: PRESET_KIND (hardware presets need huge pages,
# software ones fall back to --no-huge -m NO_HUGE_MB), EXPECT_DRIVER for
# the PCI devices the preset allows (`-a`), and optional hooks:
# preset_setup (before tqfwd), preset_start_peers (after tqfwd started in
# the background), preset_teardown (after tqfwd exited, also on errors and
# Ctrl-C, which goes to tqfwd only). Prints the exact command and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: $0 dpdk-config/<preset>.toml [extra tqfwd options]" >&2
    echo "presets: $(cd dpdk-config && ls ./*.toml | sed 's|^\./||' | tr '\n' ' ')" >&2
    exit 2
}
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
preset=$1
shift
[ -f "$preset" ] || { echo "run: no such preset file: $preset" >&2; usage; }
case "$preset" in *.toml) ;; *) echo "run: a preset is a tqfwd config file (.toml): $preset" >&2; usage ;; esac

export TQFWD_BIN_DIR=${TQFWD_BIN_DIR:-target/release}

# Preset defaults (the preset's .sh overrides what it needs).
PRESET_KIND=software
NO_HUGE_MB=512
HUGE_MIN_MB=256      # software presets: tqfwd's pool is ~40 MB
EXPECT_DRIVER=
PEER_PIDS=()
name=$(basename "$preset" .toml)
hooks=${preset%.toml}.sh
if [ -f "$hooks" ]; then
    # shellcheck source=/dev/null
    source "$hooks"
fi
# The PCI devices the preset allows: the values of "-a"/"--allow" in its eal list.
mapfile -t PCI_DEVICES < <(grep -v '^ *#' "$preset" | grep -oE '"(-a|--allow)", *"[^",]+' | sed -E 's/.*"//')

# --- binaries ---
if [ ! -x "$TQFWD_BIN_DIR/tqfwd" ] || [ ! -x "$TQFWD_BIN_DIR/tqfwd-gen" ] || [ ! -x "$TQFWD_BIN_DIR/tqfwd-udp-peer" ]; then
    echo "run: building (cargo build --release --bins --features testkit)"
    cargo build --release --bins --features testkit
fi

# The run's --duration (the peers of some presets size their traffic to it).
RUN_DURATION=
prev=
for a in "$@"; do
    [ "$prev" = --duration ] && RUN_DURATION=$a
    case "$a" in --duration=*) RUN_DURATION=${a#--duration=} ;; esac
    prev=$a
done
export RUN_DURATION

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
        echo "run: PCI device $dev not found (put your addresses in a copy of $preset; scripts/numa.sh lists the NICs)" >&2
        exit 1
    fi
    drv=$(basename "$(readlink "$sys/driver" 2>/dev/null)" 2>/dev/null || true)
    if [ -n "$EXPECT_DRIVER" ] && [ "$drv" != "$EXPECT_DRIVER" ]; then
        echo "run: $dev is on driver '${drv:-none}', $name expects '$EXPECT_DRIVER' (scripts/bind.sh)" >&2
        exit 1
    fi
    node=$(cat "$sys/numa_node" 2>/dev/null || echo -1)
    echo "run: $dev driver $drv NUMA node $node (check the preset's -l with scripts/numa.sh)"
done

# the preset's EAL arguments first, then the memory options
cmd=("$TQFWD_BIN_DIR/tqfwd" --config "$preset" "${MEM_ARGS[@]}" -- "$@")
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
