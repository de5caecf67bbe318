#!/usr/bin/env bash
# The Debian package's test (scripts/test.sh runs it after the cargo
# tests, as root): builds it with scripts/package.sh from the release
# build, runs lintian (no errors; the warnings kept are justified below),
# installs it on this machine with dpkg -i and checks what an operator
# relies on, then removes (the conffile stays) and purges it (nothing
# stays). Needs root; refuses to touch a tqfwd that was installed before.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "test-package: FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
    echo "test-package: SKIPPED: dpkg -i needs root" >&2
    exit 0
fi
if dpkg-query -W -f '${Status}' tqfwd 2>/dev/null | grep -q 'installed\|config-files'; then
    fail "a tqfwd package is already on this machine: dpkg -P tqfwd first (this test installs and purges its own)"
fi
started=$SECONDS

deb=$(scripts/package.sh | tail -n 1)
[ -f "$deb" ] || fail "scripts/package.sh made no .deb"
version=$(dpkg-deb -f "$deb" Version)
depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *librte-eal* && $depends == *libc6* ]] || fail "Depends lacks the linked libraries: $depends"

# lintian: no error and no warning but one, suppressed here:
# initial-upload-closes-no-bugs (the changelog of a package built from a
# commit closes no Debian bug report). It also says, at info level:
# hardening-no-fortify-functions (Rust code, and a C shim of DPDK's inline
# wrappers that calls no fortifiable libc function) and
# package-supports-alternative-init-but-no-init.d-script (tqfwd speaks
# systemd's notify protocol; there is no SysV script).
set +e
out=$(lintian --fail-on error,warning --suppress-tags initial-upload-closes-no-bugs "$deb" 2>&1); rc=$?
set -e
echo "$out" | grep -v '^running with root privileges' || true
[ $rc = 0 ] || fail "lintian reports errors or warnings"

trap 'dpkg -P tqfwd >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >/dev/null || fail "dpkg -i $deb"

files=(
    /usr/bin/tqfwd /usr/bin/tqfwd-udp-peer
    /lib/systemd/system/tqfwd.service /usr/libexec/tqfwd/check-config
    /etc/tqfwd/tqfwd.toml /usr/share/tqfwd/grafana/tqfwd.json
    /usr/share/tqfwd/prometheus/tqfwd-alerts.yml
    /usr/share/tqfwd/prometheus/tqfwd-alerts.test.yml
    /usr/share/man/man8/tqfwd.8.gz /usr/share/man/man1/tqfwd-udp-peer.1.gz
    /usr/share/bash-completion/completions/tqfwd
    /usr/share/zsh/vendor-completions/_tqfwd
    /usr/share/fish/vendor_completions.d/tqfwd.fish
    /usr/share/doc/tqfwd/README.md /usr/share/doc/tqfwd/copyright
    /usr/share/doc/tqfwd/changelog.Debian.gz
)
for p in dpdk-config/*.toml; do files+=("/usr/share/tqfwd/presets/${p#dpdk-config/}"); done
for p in docs/*.md; do files+=("/usr/share/doc/tqfwd/$p"); done
for f in "${files[@]}"; do
    [ -f "$f" ] || fail "$f is not installed"
done
[ ! -e /usr/bin/tqfwd-gen ] || fail "the testkit's tqfwd-gen is installed"

# The alert rules as installed: promtool's own check and their unit tests,
# which read the rules file beside them (promtool: package prometheus,
# scripts/install-deps.sh).
out=$(cd /usr/share/tqfwd/prometheus && promtool check rules tqfwd-alerts.yml 2>&1 &&
    promtool test rules tqfwd-alerts.test.yml 2>&1) || fail "the installed alert rules: $out"

# The unit as systemd reads it: ExecStart's binary, the man page of
# Documentation=, directives. Any output is a finding.
out=$(systemd-analyze verify /lib/systemd/system/tqfwd.service 2>&1) ||
    fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify: $out"
# Its confinement: systemd's exposure rating at most 5.0 (--threshold is
# ten times the printed figure).
out=$(systemd-analyze security --offline=true --threshold=50 /lib/systemd/system/tqfwd.service 2>&1) ||
    fail "systemd-analyze security rates the unit above 5.0: $(echo "$out" | tail -n 1)"
grep -qx 'ExecStart=/usr/bin/tqfwd --config /etc/tqfwd/tqfwd.toml' /lib/systemd/system/tqfwd.service ||
    fail "the unit does not run /usr/bin/tqfwd --config /etc/tqfwd/tqfwd.toml"

# The shipped configuration names no ports: the unit's ExecStartPre
# refuses it with one line; uncommented, it passes that check and is a
# configuration tqfwd reads (the bad --burst after it is what fails,
# before EAL starts).
set +e
out=$(/usr/libexec/tqfwd/check-config /etc/tqfwd/tqfwd.toml 2>&1); rc=$?
set -e
[ $rc = 2 ] && [ "$(echo "$out" | wc -l)" = 1 ] && [[ $out == *"names no ports"* ]] ||
    fail "check-config on the shipped file: exit $rc, $out"
example=$(mktemp --suffix=.toml)
sed -n '/^# eal = \[/,$ s/^# \{0,1\}//p' /etc/tqfwd/tqfwd.toml > "$example"
/usr/libexec/tqfwd/check-config "$example" || fail "check-config refuses the uncommented example"
set +e
out=$(tqfwd --config "$example" -- --burst 0 2>&1); rc=$?
set -e
rm -f "$example"
[ $rc = 2 ] && [[ $out == *"--burst"* && $out != *"config file"* && $out != *"EAL:"* ]] ||
    fail "tqfwd does not read the uncommented example: exit $rc, $out"

[ "$(tqfwd --version)" = "tqfwd ${version%-*}" ] || fail "tqfwd --version: $(tqfwd --version)"
[ "$(man -w tqfwd)" = /usr/share/man/man8/tqfwd.8.gz ] || fail "man -w tqfwd: $(man -w tqfwd 2>&1)"
man -w tqfwd-udp-peer >/dev/null || fail "man -w tqfwd-udp-peer"
# bash-completion's loader finds the script (it returns 124, "completion
# loaded, try again"), and it completes an option.
words=$(bash -c '. /usr/share/bash-completion/bash_completion && { _completion_loader tqfwd || true; } &&
    f=$(complete -p tqfwd | sed "s/.*-F \([^ ]*\) .*/\1/") &&
    COMP_WORDS=(tqfwd --back) COMP_CWORD=1 COMP_LINE="tqfwd --back" COMP_POINT=12 &&
    "$f" tqfwd --back tqfwd && echo "${COMPREPLY[*]}"') || fail "bash completion does not load"
[[ $words == *--backend* ]] || fail "bash completion of 'tqfwd --back': $words"

listed=$(dpkg -L tqfwd)
dpkg -r tqfwd >/dev/null || fail "dpkg -r tqfwd"
[ -f /etc/tqfwd/tqfwd.toml ] || fail "dpkg -r removed the conffile"
while IFS= read -r f; do
    [ -d "$f" ] || [ "$f" = /etc/tqfwd/tqfwd.toml ] || [ ! -e "$f" ] || fail "dpkg -r left $f"
done <<< "$listed"
dpkg -P tqfwd >/dev/null || fail "dpkg -P tqfwd"
[ ! -e /etc/tqfwd ] || fail "dpkg -P left /etc/tqfwd"
trap - EXIT
echo "test-package: $deb: lintian clean of errors, installed, checked, removed, purged ($((SECONDS - started)) s)"
