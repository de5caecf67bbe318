# scripts/run.sh's part of the pcap preset (pcap.toml holds tqfwd's options
# and EAL arguments): writes the replayed file once.
PRESET_KIND=software
NO_HUGE_MB=512
PCAP_FILE=target/run/udp64.pcap   # the path in pcap.toml's vdevs

# Called by run.sh before tqfwd starts.
preset_setup() {
    if [ ! -s "$PCAP_FILE" ]; then
        mkdir -p "$(dirname "$PCAP_FILE")"
        "$TQFWD_BIN_DIR/tqfwd-gen" --out "$PCAP_FILE" --flows 1024 --packets 8192 --size 64
    fi
}
