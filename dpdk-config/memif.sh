# scripts/run.sh's part of the memif preset (memif.toml holds tqfwd's
# options and EAL arguments): two dpdk-testpmd memif clients as peers,
# started once tqfwd has created the sockets, stopped after it exited.

PRESET_KIND=software
MEMIF_DIR=/tmp/tqfwd-memif   # the socket directory in memif.toml's vdevs
NO_HUGE_MB=512

preset_setup() {
    mkdir -p "$MEMIF_DIR" target/run
    rm -f "$MEMIF_DIR/gen.sock" "$MEMIF_DIR/sink.sock"
}

# testpmd as memif client: own --file-prefix, 8192 mbufs (its default pool
# is sized for 32+ ports), one forwarding lcore; --stats-period keeps the
# non-interactive testpmd running (and logging its counters every second)
# until it gets SIGINT.
_memif_testpmd() {   # NAME MAIN_LCORE SOCKET MODE...
    local name=$1 main=$2 sock=$3
    shift 3
    setsid dpdk-testpmd -l 0-1 --main-lcore "$main" --no-pci --file-prefix "tqfwd-$name-$$" \
        "${PEER_MEM_ARGS[@]}" --vdev="net_memif0,role=client,socket=$sock,socket-abstract=no,id=0" \
        -- "$@" --auto-start --stats-period 1 --total-num-mbufs=8192 --no-mlockall \
        > "target/run/memif-$name.log" 2>&1 < /dev/null &
    PEER_PIDS+=($!)
}

# Called by run.sh once tqfwd runs in the background.
preset_start_peers() {
    local i
    for i in $(seq 100); do
        [ -S "$MEMIF_DIR/gen.sock" ] && [ -S "$MEMIF_DIR/sink.sock" ] && break
        sleep 0.1
    done
    _memif_testpmd sink 1 "$MEMIF_DIR/sink.sock" --forward-mode=rxonly
    sleep 1
    _memif_testpmd gen 0 "$MEMIF_DIR/gen.sock" --forward-mode=txonly --txpkts=64
    echo "run: memif peers started (pids ${PEER_PIDS[*]}), logs in target/run/memif-*.log"
}

# Called by run.sh after tqfwd exited (also on Ctrl-C / errors).
preset_teardown() {
    local p
    for p in "${PEER_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    sleep 1
    for p in "${PEER_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    # memif counters restart when the link drops, so the largest count the
    # peers printed (once a second, while connected) is what they saw.
    local gen_tx sink_rx
    gen_tx=$(grep -oE 'TX-packets: +[0-9]+' target/run/memif-gen.log 2>/dev/null | awk '{print $2}' | sort -n | tail -1)
    sink_rx=$(grep -oE 'RX-packets: +[0-9]+' target/run/memif-sink.log 2>/dev/null | awk '{print $2}' | sort -n | tail -1)
    echo "run: generator testpmd sent ${gen_tx:-?}, sink testpmd received ${sink_rx:-?} (largest counts printed, once a second while connected: up to 1 s behind tqfwd's totals)"
    rm -f "$MEMIF_DIR/gen.sock" "$MEMIF_DIR/sink.sock"
}
