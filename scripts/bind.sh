#!/usr/bin/env bash
# Checks IOMMU / vfio and binds NIC ports to a DPDK-usable driver with
# dpdk-devbind.py. Dry run unless --apply.
#
#   scripts/bind.sh                                  # status: IOMMU, vfio-pci, NICs
#   scripts/bind.sh 0000:3b:00.0 0000:3b:00.1        # what it would do (dry run)
#   scripts/bind.sh --apply 0000:3b:00.0 0000:3b:00.1
#   scripts/bind.sh --apply --driver ice 0000:3b:00.0   # give a port back to the kernel
#
# Refuses: NVIDIA/Mellanox mlx5 ports (bifurcated: DPDK drives them through
# the kernel's mlx5_core + rdma-core; unbinding them breaks that), and
# ports the kernel is using (interface up with addresses/routes, which
# dpdk-devbind marks *Active*: that may be this machine's own connection).
set -euo pipefail

apply=0
driver=vfio-pci
devs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --apply) apply=1 ;;
        --dry-run) apply=0 ;;
        --driver) driver=${2:?--driver needs a name}; shift ;;
        --driver=*) driver=${1#--driver=} ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        -*) echo "bind: unknown option $1" >&2; exit 2 ;;
        *) devs+=("$1") ;;
    esac
    shift
done

devbind=$(command -v dpdk-devbind.py || true)
if [ -z "$devbind" ]; then
    echo "bind: dpdk-devbind.py not found (Debian package 'dpdk'; scripts/install-deps.sh)" >&2
    exit 1
fi

# --- IOMMU / vfio ---
groups=$(find /sys/kernel/iommu_groups -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
if [ "$groups" -gt 0 ]; then
    echo "IOMMU: on ($groups groups in /sys/kernel/iommu_groups)"
    iommu_ok=1
else
    echo "IOMMU: off or not visible (no /sys/kernel/iommu_groups entries)."
    echo "       vfio-pci needs it: boot with intel_iommu=on iommu=pt (AMD: amd_iommu=on iommu=pt),"
    echo "       enable VT-d/AMD-Vi in the firmware. (vfio's enable_unsafe_noiommu_mode exists but gives"
    echo "       DMA to all memory: not done here.)"
    iommu_ok=0
fi
if [ -d /sys/module/vfio_pci ]; then
    echo "vfio-pci: module loaded"
elif modinfo vfio-pci >/dev/null 2>&1; then
    echo "vfio-pci: available, not loaded (modprobe vfio-pci)"
else
    echo "vfio-pci: module not available in this kernel (or no modinfo here)"
fi
if [ -r /sys/module/vfio/parameters/enable_unsafe_noiommu_mode ]; then
    echo "vfio: enable_unsafe_noiommu_mode=$(cat /sys/module/vfio/parameters/enable_unsafe_noiommu_mode)"
fi

echo
echo "NICs (dpdk-devbind.py --status-dev net):"
"$devbind" --status-dev net 2>/dev/null | sed 's/^/  /'

[ ${#devs[@]} -gt 0 ] || { echo; echo "bind: give PCI addresses to bind (dry run unless --apply)"; exit 0; }

echo
status=$("$devbind" --status-dev net 2>/dev/null || true)
cmds=()
refused=0
for dev in "${devs[@]}"; do
    [[ "$dev" == *:*:*.* ]] || dev="0000:$dev"
    sys=/sys/bus/pci/devices/$dev
    if [ ! -e "$sys" ]; then
        echo "bind: $dev: no such PCI device" >&2
        refused=1
        continue
    fi
    vendor=$(cat "$sys/vendor")
    cur=$(basename "$(readlink "$sys/driver" 2>/dev/null)" 2>/dev/null || echo none)
    class=$(cat "$sys/class")
    if [[ "$class" != 0x02* ]]; then
        echo "bind: $dev: not an Ethernet/network controller (class $class): refusing" >&2
        refused=1
        continue
    fi
    if [ "$vendor" = 0x15b3 ] || [ "$cur" = mlx5_core ]; then
        echo "bind: $dev: NVIDIA/Mellanox (mlx5) port: refusing. mlx5 is bifurcated: DPDK's mlx5 PMD works" >&2
        echo "      on top of the kernel driver mlx5_core through rdma-core (ibverbs-providers). Leave it on" >&2
        echo "      mlx5_core and pass it with -a $dev (dpdk-config/cx6dx.toml)." >&2
        refused=1
        continue
    fi
    if grep -F "$dev" <<< "$status" | grep -q '\*Active\*'; then
        ifs=$(find "$sys/" -mindepth 2 -maxdepth 3 -path '*/net/*' -printf '%f ' 2>/dev/null || true)
        echo "bind: $dev ($ifs) is in use by the kernel (*Active*: up with addresses/routes): refusing." >&2
        echo "      If it really is spare: ip addr flush dev <if>; ip link set <if> down; then run again." >&2
        refused=1
        continue
    fi
    if [ "$cur" = "$driver" ]; then
        echo "bind: $dev is already on $driver"
        continue
    fi
    echo "bind: $dev: $cur -> $driver"
    cmds+=("$dev")
done

[ ${#cmds[@]} -gt 0 ] || exit "$refused"

plan=()
if [ "$driver" = vfio-pci ]; then
    [ -d /sys/module/vfio_pci ] || plan+=("modprobe vfio-pci")
fi
plan+=("$devbind -b $driver ${cmds[*]}")

if [ "$apply" = 0 ]; then
    echo
    echo "dry run; with --apply it would run:"
    printf '  %s\n' "${plan[@]}"
    exit "$refused"
fi
if [ "$driver" = vfio-pci ] && [ "$iommu_ok" = 0 ]; then
    echo "bind: refusing to bind to vfio-pci without an IOMMU (see above)" >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "bind: --apply needs root" >&2
    exit 1
fi
for c in "${plan[@]}"; do
    echo "+ $c"
    $c
done
echo
"$devbind" --status-dev net 2>/dev/null | sed 's/^/  /'
exit "$refused"
