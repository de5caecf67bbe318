# scripts/run.sh's part of the af_packet preset (af_packet.toml holds
# tqfwd's options and EAL arguments): builds the two-namespace testbed
# whose veths tqfwd attaches to, starts the UDP peers, removes it all.

PRESET_KIND=software
NO_HUGE_MB=512
AFP_IFACE0=tqrun0           # the interfaces in af_packet.toml's vdevs
AFP_IFACE1=tqrun1
AFP_MAC_A=02:78:00:00:00:0a # af_packet.toml's peer-mac for port 0
AFP_MAC_B=02:78:00:00:00:0b # ... and port 1

preset_setup() {
    # leftovers of an interrupted run
    ip netns del tqrunA 2>/dev/null || true
    ip netns del tqrunB 2>/dev/null || true
    ip link del "$AFP_IFACE0" 2>/dev/null || true
    ip link del "$AFP_IFACE1" 2>/dev/null || true
    mkdir -p target/run
    rm -f target/run/af_packet-*.json target/run/af_packet-*.log
    local ns host mac ip
    for x in "tqrunA $AFP_IFACE0 $AFP_MAC_A 10.78.0.1/24" "tqrunB $AFP_IFACE1 $AFP_MAC_B 10.78.0.2/24"; do
        read -r ns host mac ip <<< "$x"
        ip netns add "$ns"
        ip link add "$host" type veth peer name "${host}p"
        ip link set "${host}p" netns "$ns"
        ip -n "$ns" link set "${host}p" name eth0
        ip -n "$ns" link set eth0 address "$mac"
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
        ip -n "$ns" addr add "$ip" dev eth0
        ip -n "$ns" link set lo up
        ip -n "$ns" link set eth0 up
        ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null
        sysctl -qw "net.ipv6.conf.$host.disable_ipv6=1" 2>/dev/null || true
        ip link set "$host" up
    done
    echo "run: testbed up: netns tqrunA (10.78.0.1, $AFP_IFACE0) and tqrunB (10.78.0.2, $AFP_IFACE1)"
}

preset_start_peers() {
    mkdir -p target/run
    # Size the run to --duration when given (send for duration - 3 s), else
    # send for an hour; 2000 datagrams/s over 16 flows.
    local secs=${RUN_DURATION:-3600} count
    secs=${secs%.*}
    count=$(( (secs > 4 ? secs - 3 : 1) * 2000 ))
    sleep 1   # tqfwd's links come up, forwarding starts
    # Real-time priority (nice -10 where refused) so the peers get a CPU
    # as soon as a datagram wakes them, beside the busy-polling lcores: the
    # receiver's default socket buffer holds only a few hundred datagrams.
    local prio=(chrt -f 10)
    chrt -f 10 true 2>/dev/null || prio=(nice -n -10)
    ip netns exec tqrunB "${prio[@]}" "$TQFWD_BIN_DIR/tqfwd-udp-peer" recv --bind 10.78.0.2:9000 --expect "$count" \
        --timeout $(( secs + 5 )) > target/run/af_packet-recv.json 2> target/run/af_packet-recv.log &
    PEER_PIDS+=($!)
    sleep 0.3
    # One warm-up datagram resolves ARP through tqfwd before the counted ones.
    ip netns exec tqrunA "${prio[@]}" "$TQFWD_BIN_DIR/tqfwd-udp-peer" send --dst 10.78.0.2:9000 --flows 16 \
        --count "$count" --pps 2000 --src-port-base 40000 --warmup-ms 500 > target/run/af_packet-send.json 2>&1 &
    PEER_PIDS+=($!)
    echo "run: UDP peers started: $count datagrams A -> B (results in target/run/af_packet-{send,recv}.json)"
}

preset_teardown() {
    local p
    for p in "${PEER_PIDS[@]}"; do
        # the receiver finishes by itself when everything arrived
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        kill "$p" 2>/dev/null || true
    done
    [ -s target/run/af_packet-recv.json ] && echo "run: receiver: $(cat target/run/af_packet-recv.json)"
    ip netns del tqrunA 2>/dev/null || true
    ip netns del tqrunB 2>/dev/null || true
    ip link del "$AFP_IFACE0" 2>/dev/null || true
    ip link del "$AFP_IFACE1" 2>/dev/null || true
}
