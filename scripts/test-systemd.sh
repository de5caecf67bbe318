#!/usr/bin/env bash
# Proves dist/tqfwd.service under a real systemd (docs/operations.md,
# "Proven under systemd"): boots Debian 12 in a container with
# `systemd-nspawn -b`, installs the .deb that scripts/package.sh builds
# with the DPDK runtime, writes /etc/tqfwd/tqfwd.toml for two net_null
# ports on one lcore, and inside the booted container starts the unit,
# reads `systemctl status` (the STATUS= line), the confinement the running
# process got (capabilities, seccomp, read-only mounts), a scrape of
# --metrics, changes the rate in the file and reloads (applied while the
# unit stays active), then changes the lcore list and reloads (refused,
# the run goes on), stops it and reads the summary in the journal. Fails
# (exit 1) when one of those is not as it should be.
#
# Not part of scripts/test.sh: the first run builds the Debian tree with
# debootstrap (a few minutes of downloads, ~250 MB, kept in
# $TQFWD_SYSTEMD_CACHE, /var/tmp/tqfwd-systemd by default); later runs
# copy it (about 30 s in all). Needs root; installs debootstrap and
# systemd-container when missing. Leaves no container, mount or process:
# the copy is removed at exit, also on failure.
#
# Usage: scripts/test-systemd.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "test-systemd: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, systemd-nspawn)"

need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
if [ ${#need[@]} -gt 0 ]; then
    echo "test-systemd: installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

cache=${TQFWD_SYSTEMD_CACHE:-/var/tmp/tqfwd-systemd}
base=$cache/bookworm
mkdir -p "$cache/apt-archives"
if [ ! -x "$base/lib/systemd/systemd" ]; then
    echo "test-systemd: building a Debian 12 tree in $base (debootstrap, once)"
    rm -rf "$base.tmp"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,procps \
        bookworm "$base.tmp" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
        fail "debootstrap (log: $cache/debootstrap.log)"
    mv "$base.tmp" "$base"
fi

deb=$(scripts/package.sh | tail -n 1)
[ -f "$deb" ] || fail "scripts/package.sh made no .deb"
abi=$(dpkg-deb -f "$deb" Depends | sed -n 's/.*librte-eal\([0-9][0-9]*\).*/\1/p')
[ -n "$abi" ] || fail "no librte-eal in the .deb's Depends"

work=$(mktemp -d "$cache/run.XXXXXX")
nspawn_pid=""
cleanup() {
    if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
        kill -TERM "$nspawn_pid" 2>/dev/null || true   # nspawn: power the container off
        for _ in $(seq 50); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$nspawn_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
root=$work/root
cp -a "$base" "$root"

# The package and its runtime (the net_null PMD is only recommended; capsh
# names the capabilities below), installed as an operator would, with apt
# in the (not yet booted) tree.
cp "$deb" "$root/root/tqfwd.deb"   # not /tmp: nspawn mounts a tmpfs there
systemd-nspawn -q -D "$root" --register=no --keep-unit --machine="tqfwd-apt-$$" \
    --bind="$cache/apt-archives:/var/cache/apt/archives" \
    --setenv=DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends \
        /root/tqfwd.deb librte-net-null$abi libcap2-bin >/dev/null" ||
    fail "apt-get install of the .deb in the container"

# Memory: the host's huge pages when enough are free (bound into the
# container; --huge-unlink leaves no file behind even on a crash), else
# --no-huge.
mem='"--no-huge", "-m", "512"'
binds=()
free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
if grep -q ' /dev/hugepages hugetlbfs ' /proc/mounts && [ "${free:-0}" -ge 300 ]; then
    mem='"--huge-unlink", "-m", "512"'
    binds+=(--bind=/dev/hugepages)
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$root/etc/tqfwd/tqfwd.toml" <<EOF
# Written by scripts/test-systemd.sh: two net_null ports on one lcore,
# at a steady 1 Mpps.
eal = ["-l", "0", "--no-pci", "--vdev=net_null0,size=64", "--vdev=net_null1,size=64",
       "--file-prefix", "tqfwd", $mem]
rx-rate = 1
metrics = "127.0.0.1:$port"
stats-json = "/var/lib/tqfwd/last-run.json"
stats-interval = 0
EOF

# What runs once the container has booted: the operator's steps, their
# output in /root/proof.log, then power off (which ends systemd-nspawn).
cat >"$root/usr/local/sbin/tqfwd-proof" <<'EOF'
#!/bin/bash
exec >/root/proof.log 2>&1
step() { echo; echo "# $*"; }
step systemctl start tqfwd
systemctl start tqfwd; echo "exit $?"
sleep 3
step systemctl status tqfwd
SYSTEMD_COLORS=0 systemctl status tqfwd --no-pager -l -n 0
pid=$(systemctl show -P MainPID tqfwd)
step "confinement of the running tqfwd (pid $pid)"
grep -E '^(CapBnd|CapEff|NoNewPrivs|Seccomp):' "/proc/$pid/status"
echo "capabilities: $(capsh --decode="$(awk '/^CapBnd:/ {print $2}' "/proc/$pid/status")" |
    cut -d= -f2 | tr , '\n' | sort | paste -sd ,)"
awk '$5 ~ "^/(usr|etc|var/lib/tqfwd|run/dpdk|dev/hugepages|home|tmp)$" || $5 == "/" {
        split($6, o, ","); print $5, o[1] }' "/proc/$pid/mountinfo" | sort -u
echo "/run/dpdk: $(cd /run/dpdk && ls -d -- * */* | paste -sd ' ')"
step "systemd-analyze security tqfwd"
systemd-analyze security tqfwd --no-pager | tail -n 1
step "scrape of --metrics"
exec 3<>"/dev/tcp/127.0.0.1/@PORT@"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep -E '^tqfwd_(up|forwarding|rx_packets_total|tx_packets_total) ' <&3
exec 3<&-
step "systemctl reload tqfwd (rx-rate = 2 in the file)"
sed -i 's/^rx-rate = 1$/rx-rate = 2/' /etc/tqfwd/tqfwd.toml
systemctl reload tqfwd; echo "exit $?"
sleep 2.5
echo "active: $(systemctl is-active tqfwd)"
SYSTEMD_COLORS=0 systemctl status tqfwd --no-pager -l -n 0 | grep -E 'Status:'
step "systemctl reload tqfwd (a changed lcore list)"
sed -i 's/"-l", "0"/"-l", "0-1"/' /etc/tqfwd/tqfwd.toml
systemctl reload tqfwd; echo "exit $?"
sleep 0.5
echo "active: $(systemctl is-active tqfwd)"
step systemctl kill -s SIGUSR1 tqfwd
systemctl kill -s SIGUSR1 tqfwd; sleep 0.5
step systemctl stop tqfwd
systemctl stop tqfwd; echo "exit $?"
systemctl show -p Result -p ExecMainCode -p ExecMainStatus tqfwd
step "journalctl -u tqfwd"
journalctl -u tqfwd --no-pager -o cat
step /var/lib/tqfwd/last-run.json
ls -l /var/lib/tqfwd/last-run.json
grep -oE '"(conservation_ok|mbufs_in_use|signal)": *[^,]*' /var/lib/tqfwd/last-run.json
echo
echo "# done"
systemctl poweroff --no-block
EOF
sed -i "s/@PORT@/$port/" "$root/usr/local/sbin/tqfwd-proof"
chmod 755 "$root/usr/local/sbin/tqfwd-proof"
cat >"$root/etc/systemd/system/tqfwd-proof.service" <<'EOF'
[Unit]
Description=scripts/test-systemd.sh: drive tqfwd.service
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/tqfwd-proof

[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/tqfwd-proof.service "$root/etc/systemd/system/multi-user.target.wants/tqfwd-proof.service"
# Quiet boot: no getty on the container's console.
ln -sf /dev/null "$root/etc/systemd/system/console-getty.service"

echo "test-systemd: booting the container (systemd-nspawn -b)"
# The capabilities the unit keeps that nspawn leaves out of a container's
# bounding set by default, so that the unit's own set is what shows.
systemd-nspawn -q -b -D "$root" --register=no --keep-unit "${binds[@]}" \
    --capability=CAP_IPC_LOCK,CAP_SYS_RAWIO,CAP_NET_ADMIN \
    --machine="tqfwd-proof-$$" >"$work/console.log" 2>&1 &
nspawn_pid=$!
for _ in $(seq 600); do
    kill -0 "$nspawn_pid" 2>/dev/null || break
    sleep 0.2
done
if kill -0 "$nspawn_pid" 2>/dev/null; then
    cat "$work/console.log" "$root/root/proof.log" 2>/dev/null
    fail "the container did not power off within 120 s"
fi
nspawn_pid=""
[ -f "$root/root/proof.log" ] || { cat "$work/console.log"; fail "the container booted no proof (console above)"; }
proof=$(cat "$root/root/proof.log")
echo "$proof"

check() { grep -qE -- "$1" <<<"$proof" || fail "$2"; }
check '^# systemctl start tqfwd$' "no start"
[ "$(sed -n '/^# systemctl start tqfwd$/{n;p}' <<<"$proof")" = "exit 0" ] || fail "systemctl start tqfwd failed"
check 'Active: active \(running\)' "the unit is not running after start"
check 'Status: "rx [0-9.]+ Mpps tx [0-9.]+ Mpps drops [0-9]+"' "no STATUS= line in systemctl status"
check '^NoNewPrivs:[[:space:]]+1$' "NoNewPrivileges= not applied"
check '^Seccomp:[[:space:]]+2$' "no seccomp filter on the process"
check '^capabilities: cap_ipc_lock,cap_net_admin,cap_net_bind_service,cap_net_raw,cap_sys_admin,cap_sys_rawio$' \
    "the running tqfwd's capability bounding set is not the unit's"
check '^/ ro$' "the file system is not read-only for tqfwd"
check '^/var/lib/tqfwd rw$' "/var/lib/tqfwd is not writable for tqfwd"
check '^/run/dpdk: .*dpdk_telemetry.v2' "EAL's runtime directory is not /run/dpdk/tqfwd"
check 'Overall exposure level for tqfwd.service: [0-4]\.[0-9]|Overall exposure level for tqfwd.service: 5\.0' \
    "systemd-analyze security rates the running unit above 5.0"
check '^tqfwd_up 1$' "no scrape of --metrics through IPAddressAllow=localhost"
[ "$(sed -n '/^# systemctl reload tqfwd (rx-rate = 2 in the file)$/{n;p}' <<<"$proof")" = "exit 0" ] ||
    fail "systemctl reload tqfwd failed"
check 'reload /etc/tqfwd/tqfwd.toml: applied rx-rate' "the reload did not apply the new rate"
check 'Status: "rx (1\.9[5-9]|2\.0[0-4])[0-9]* Mpps' "the reloaded rate (2 Mpps) does not show in the STATUS= line"
check "reload /etc/tqfwd/tqfwd.toml refused, nothing changed: 'eal' cannot change" \
    "the reload of a changed lcore list was not refused"
[ "$(grep -c '^active: active$' <<<"$proof")" = 2 ] || fail "a reload stopped the unit"
check 'SIGUSR1: totals at' "SIGUSR1 did not log the totals"
check '^Result=success$' "the unit did not stop cleanly"
check '^ExecMainStatus=0$' "tqfwd did not exit 0"
check 'conservation.*OK' "no summary with conservation OK in the journal"
check '"conservation_ok": *true' "stats-json says conservation failed"
check '^# done$' "the proof did not finish"
echo "test-systemd: the unit started, reported its status, applied a reload and refused one, stopped cleanly under systemd $(systemd-nspawn --version | head -n 1 | cut -d' ' -f2)"
