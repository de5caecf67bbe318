#!/usr/bin/env bash
# Forwards generated 64-byte UDP through the full pipeline on virtual ports
# and shows live stats. Installs what is missing (Debian 12, root), builds,
# writes the traffic with tqfwd-gen, reserves huge pages if allowed.
#
#   scripts/demo.sh [SECONDS] [tqfwd options...]
#   scripts/demo.sh 10 --backend ring
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-10}"
shift || true
scripts/install-deps.sh
scripts/hugepages.sh setup 512 || true
cargo build --release --bins --features testkit
mkdir -p target/demo
pcap=target/demo/udp64.pcap
./target/release/tqfwd-gen --out "$pcap" --flows 1024 --packets 8192 --size 64
if awk '/^HugePages_Free/ {exit !($2 >= 300)}' /proc/meminfo && grep -q hugetlbfs /proc/mounts; then
    mem=(--in-memory)
else
    echo "demo: no free huge pages: running with --no-huge -m 512 (slower)"
    mem=(--no-huge -m 512 --file-prefix tqfwd-demo)
fi
# Two net_pcap ports replay the file forever (infinite_rx) and discard what
# they transmit; ports 0 and 1 forward to each other. infinite_rx copies
# the whole file into mbufs per port, hence the larger pool (--mbufs).
exec ./target/release/tqfwd -l 0-1 --no-pci "${mem[@]}" \
    --vdev "net_pcap0,rx_pcap=$pcap,infinite_rx=1" \
    --vdev "net_pcap1,rx_pcap=$pcap,infinite_rx=1" \
    -- --duration "$secs" --on-full wait --mbufs 32768 "$@"
