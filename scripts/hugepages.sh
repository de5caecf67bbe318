#!/usr/bin/env bash
# Reserve (or release) 2 MiB huge pages for DPDK and mount hugetlbfs.
#   scripts/hugepages.sh setup [PAGES]   (default 512 = 1 GiB)
#   scripts/hugepages.sh undo
#   scripts/hugepages.sh status
# Needs root. Where the machine refuses (containers, no privileges) it says
# so and exits 0: tqfwd then runs with EAL's `--no-huge -m 512` fallback.
set -u
cmd="${1:-status}"
pages="${2:-512}"
mnt=/dev/hugepages

status() {
    grep -E '^(HugePages_Total|HugePages_Free|Hugepagesize)' /proc/meminfo
    if grep -q hugetlbfs /proc/mounts; then grep hugetlbfs /proc/mounts | sed 's/^/mounted: /'; else echo "hugetlbfs: not mounted"; fi
}

case "$cmd" in
setup)
    if ! echo "$pages" > /proc/sys/vm/nr_hugepages 2>/dev/null; then
        echo "hugepages: cannot reserve huge pages here (not root or not allowed); use --no-huge -m 512"
        exit 0
    fi
    got=$(awk '/^HugePages_Total/ {print $2}' /proc/meminfo)
    if ! grep -q hugetlbfs /proc/mounts; then
        mkdir -p "$mnt" && mount -t hugetlbfs nodev "$mnt" 2>/dev/null \
            || { echo "hugepages: cannot mount hugetlbfs at $mnt; use --no-huge -m 512"; exit 0; }
    fi
    echo "hugepages: $got x 2 MiB reserved, hugetlbfs mounted"
    ;;
undo)
    echo 0 > /proc/sys/vm/nr_hugepages 2>/dev/null || true
    if grep -q " $mnt hugetlbfs" /proc/mounts; then umount "$mnt" 2>/dev/null || true; fi
    status
    ;;
status)
    status
    ;;
*)
    echo "usage: $0 setup [PAGES] | undo | status" >&2
    exit 2
    ;;
esac
