#!/usr/bin/env bash
# Installs what tqfwd needs on Debian 12, only when it is missing:
# DPDK 22.11 (runtime, headers, testpmd/dpdk-test/dpdk-dumpcap), pkg-config, clang and
# libclang (bindgen), iproute2 and ethtool (kernel-peer tests), what the
# Debian package and its tests use (dpkg-dev, lintian, man-db,
# bash-completion, systemd, prometheus and promtool), a Rust toolchain
# check, and rustfmt
# and clippy (scripts/test.sh). Run as root.
set -euo pipefail
need=()
pkg-config --exists libdpdk 2>/dev/null || need+=(libdpdk-dev dpdk-dev)
command -v dpdk-testpmd >/dev/null 2>&1 || need+=(dpdk)
# tests/capture.rs attaches dpdk-dumpcap (package dpdk-dev) to tqfwd.
command -v dpdk-dumpcap >/dev/null 2>&1 || need+=(dpdk-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v clang >/dev/null 2>&1 || need+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
# procps: sysctl (the namespace tests) and kill; `kill` alone is a shell
# builtin and would always be found.
command -v sysctl >/dev/null 2>&1 || need+=(procps)
# stdbuf (the memif tests' testpmd peers) is coreutils, always present.
# tests/peers.rs (kernel peer in network namespaces): ip netns + veth, and
# ethtool to turn TX checksum offload off in the sending namespace.
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
# The Debian package and its test (scripts/package.sh, test-package.sh):
# dpkg-shlibdeps, lintian, man, bash-completion, systemd-analyze.
command -v dpkg-shlibdeps >/dev/null 2>&1 || need+=(dpkg-dev)
command -v lintian >/dev/null 2>&1 || need+=(lintian)
command -v man >/dev/null 2>&1 || need+=(man-db)
[ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
# tests/exposition.rs and tests/prometheus.rs: promtool, and the
# Prometheus server the latter starts on its own (Debian package
# prometheus holds both).
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: installing ${need[*]}"
    if [ "$(id -u)" != 0 ]; then
        echo "install-deps: need root to install ${need[*]} (apt-get install -y ${need[*]})" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    # The tests run promtool and their own prometheus: keep the package's
    # installation from starting its system service (a policy-rc.d that
    # refuses every start, for this install only, where the machine has
    # none).
    if [[ " ${need[*]} " == *" prometheus "* ]] && [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    apt-get update -q
    # A package named twice (dpdk-dev for the headers and for dumpcap) is
    # installed once.
    mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "install-deps: cargo not found: install Rust (rustup) first" >&2
    exit 1
fi
# scripts/test.sh checks formatting and lints.
for comp in rustfmt clippy; do
    sub=$([ $comp = rustfmt ] && echo fmt || echo clippy)
    if ! cargo $sub --version >/dev/null 2>&1; then
        if command -v rustup >/dev/null 2>&1; then
            echo "install-deps: adding the Rust component $comp"
            rustup component add $comp
        else
            echo "install-deps: cargo $sub missing and no rustup to add $comp" >&2
            exit 1
        fi
    fi
done
echo "install-deps: $(pkg-config --modversion libdpdk | sed 's/^/DPDK /'), $(cargo --version)"
