#!/usr/bin/env bash
# NUMA layout for placing tqfwd: the node of each PCI Ethernet device, the
# node/socket/core of each CPU, and for an EAL lcore list which socket each
# lcore runs on (and whether that matches the NICs').
#
#   scripts/numa.sh                 # NICs and CPUs
#   scripts/numa.sh -l 2-7          # plus the lcore -> socket map for -l 2-7
#
# tqfwd's rule: the lcores serving a port, the port's mbuf pool and its
# hand-off queues should sit on the port's node (tqfwd warns otherwise).
set -euo pipefail

lcores=
while [ $# -gt 0 ]; do
    case "$1" in
        -l) lcores=${2:?-l needs a list}; shift ;;
        -l*) lcores=${1#-l} ;;
        --lcores=*) lcores=${1#--lcores=} ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "numa: unknown argument $1 (usage: $0 [-l LIST])" >&2; exit 2 ;;
    esac
    shift
done

cpu_node() {   # CPU -> NUMA node (sysfs), -1 when unknown
    local n
    n=$(ls -d "/sys/devices/system/cpu/cpu$1"/node* 2>/dev/null | head -1)
    [ -n "$n" ] && echo "${n##*node}" || echo -1
}
cpu_socket() {
    cat "/sys/devices/system/cpu/cpu$1/topology/physical_package_id" 2>/dev/null || echo -1
}
cpu_core() {
    cat "/sys/devices/system/cpu/cpu$1/topology/core_id" 2>/dev/null || echo -1
}

echo "PCI Ethernet devices:"
printf '  %-14s %-11s %-12s %-5s %s\n' PCI vendor:dev driver node interfaces
nic_nodes=()
found=0
for d in /sys/bus/pci/devices/*; do
    class=$(cat "$d/class" 2>/dev/null || echo)
    [[ "$class" == 0x0200* ]] || continue   # Ethernet controller
    found=1
    dev=$(basename "$d")
    ven=$(sed 's/^0x//' "$d/vendor"):$(sed 's/^0x//' "$d/device")
    drv=$(basename "$(readlink "$d/driver" 2>/dev/null)" 2>/dev/null || echo none)
    node=$(cat "$d/numa_node" 2>/dev/null || echo -1)
    ifs=$(find "$d/" -mindepth 2 -maxdepth 3 -path '*/net/*' -printf '%f ' 2>/dev/null || true)
    printf '  %-14s %-11s %-12s %-5s %s\n' "$dev" "$ven" "$drv" "$node" "${ifs:--}"
    nic_nodes+=("$node")
done
[ "$found" = 1 ] || echo "  (none)"
if [ "$found" = 1 ] && [[ " ${nic_nodes[*]} " =~ " -1 " ]]; then
    echo "  node -1: the platform reports no NUMA affinity (single node, VM or container)"
fi

echo
nodes=$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)
echo "CPUs ($(nproc --all) online, $nodes NUMA node(s)):"
if command -v lscpu >/dev/null; then
    lscpu -p=CPU,CORE,SOCKET,NODE 2>/dev/null | grep -v '^#' | awk -F, '
        { cpus[$4] = (cpus[$4] == "" ? $1 : cpus[$4] "," $1); sock[$4] = $3; core[$1] = $2 }
        END { for (n in cpus) printf "  node %s (socket %s): CPUs %s\n", (n == "" ? "?" : n), sock[n], cpus[n] }' | sort
    echo "  CPU  core socket node"
    lscpu -p=CPU,CORE,SOCKET,NODE 2>/dev/null | grep -v '^#' | awk -F, '{ printf "  %-4s %-4s %-6s %s\n", $1, $2, $3, ($4 == "" ? "-" : $4) }'
else
    echo "  CPU  core socket node"
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        n=${c##*cpu}
        printf '  %-4s %-4s %-6s %s\n' "$n" "$(cpu_core "$n")" "$(cpu_socket "$n")" "$(cpu_node "$n")"
    done | sort -n
fi
sib=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo "?")
echo "  hyper-thread siblings of CPU 0: $sib (keep busy-polling lcores off each other's siblings)"

[ -n "$lcores" ] || exit 0

# Expand a DPDK corelist: 1,3-4,7
expand() {
    local part a b
    IFS=, read -ra parts <<< "$1"
    for part in "${parts[@]}"; do
        if [[ "$part" =~ ^([0-9]+)-([0-9]+)$ ]]; then
            a=${BASH_REMATCH[1]}; b=${BASH_REMATCH[2]}
            [ "$a" -le "$b" ] || { echo "numa: bad range $part" >&2; exit 2; }
            seq "$a" "$b"
        elif [[ "$part" =~ ^[0-9]+$ ]]; then
            echo "$part"
        else
            echo "numa: bad lcore list element '$part' (expected N or N-M)" >&2
            exit 2
        fi
    done
}

echo
echo "lcores -l $lcores:"
echo "  lcore socket node"
declare -A used_nodes=()
missing=0
for l in $(expand "$lcores"); do
    if [ ! -d "/sys/devices/system/cpu/cpu$l" ]; then
        echo "  $l     -      -    (no such CPU here)"
        missing=1
        continue
    fi
    n=$(cpu_node "$l")
    printf '  %-5s %-6s %s\n' "$l" "$(cpu_socket "$l")" "$n"
    used_nodes[$n]=1
done
[ "$missing" = 0 ] || echo "  warning: some lcores do not exist on this machine"
if [ ${#used_nodes[@]} -gt 1 ]; then
    echo "  warning: the lcores span nodes ${!used_nodes[*]}: a port's lcores, pool and queues should share one node"
fi
for nn in $(printf '%s\n' "${nic_nodes[@]}" | sort -u); do
    [ "$nn" = -1 ] && continue
    if [ -z "${used_nodes[$nn]:-}" ]; then
        echo "  note: NICs on node $nn have none of these lcores on their node"
    fi
done
