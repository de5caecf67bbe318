#!/usr/bin/env bash
# Builds target/debian/tqfwd_<version>-<revision>_amd64.deb from the release
# build with Debian's own tools: the files are staged in
# target/debian/stage, `Depends` is computed by dpkg-shlibdeps from the
# libraries the binaries link, and dpkg-deb builds the archive.
#
# Why dpkg-deb and not cargo-deb: cargo-deb is not packaged by Debian, so
# every fresh machine (CI) would compile it with `cargo install` first
# (minutes on two vCPUs), and it would build tqfwd again with its own
# cargo invocation. dpkg-deb and dpkg-shlibdeps come with dpkg-dev, and
# the binaries are the ones scripts/test.sh built and tested.
#
# Usage: scripts/package.sh            (TQFWD_DEB_REVISION=N sets the
# Debian revision, 1 by default). Prints the path of the .deb.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
revision=${TQFWD_DEB_REVISION:-1}
arch=$(dpkg --print-architecture)
deb=target/debian/tqfwd_${version}-${revision}_${arch}.deb
maintainer="tqfwd maintainers <tqfwd@example.org>"

# The same command and features as scripts/test.sh: after the test build
# it compiles nothing (about a second); on a fresh tree it builds.
cargo test --release --features testkit --no-run
for bin in tqfwd tqfwd-udp-peer; do
    [ -x "target/release/$bin" ] || { echo "package: target/release/$bin was not built" >&2; exit 1; }
done

stage=target/debian/stage
rm -rf "$stage" target/debian/shlibs
mkdir -p "$stage/DEBIAN"
put() { # put MODE SRC DEST: install SRC at DEST inside the package
    install -D -m "$1" "$2" "$stage$3"
}
gz() { # gz DEST < text: gzip -9n (reproducible) at DEST inside the package
    mkdir -p "$(dirname "$stage$1")"
    gzip -9n > "$stage$1"
}

# tqfwd-udp-peer's man page: its --help texts (clap) in a roff page.
peer_man() {
    local bin=$1 roff='s/\\/\\e/g; s/^[.'"'"']/\\\&&/'
    printf '.TH TQFWD-UDP-PEER 1 "" "tqfwd %s" "User Commands"\n' "$version"
    printf '.SH NAME\ntqfwd-udp-peer \\- kernel UDP sender and receiver for testing tqfwd\n'
    printf '.SH SYNOPSIS\n.B tqfwd-udp-peer send\n\\-\\-dst IP:PORT [options]\n.br\n'
    printf '.B tqfwd-udp-peer recv\n\\-\\-bind IP:PORT \\-\\-expect N [options]\n'
    for sub in "" send recv; do
        printf '.SH %s\n.nf\n' "$([ -z "$sub" ] && echo DESCRIPTION || echo "${sub^^}")"
        # shellcheck disable=SC2086 # $sub is one word or none
        "$bin" $sub --help | sed "$roff"
        printf '.fi\n'
    done
    printf '.SH SEE ALSO\n.BR tqfwd (8)\n'
}

# /usr/share/doc/tqfwd/copyright (machine-readable format): tqfwd's licence
# and the Rust crates the binaries link statically, each used under MIT
# (every one of them offers it).
copyright() {
    printf 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n'
    printf 'Upstream-Name: tqfwd\n'
    printf 'Comment: /usr/bin/tqfwd and /usr/bin/tqfwd-udp-peer link these Rust crates\n'
    printf ' statically (name, version, licence as their Cargo.toml states it):\n'
    cargo tree -e normal,no-proc-macro --prefix none -f '{p}|{l}' --target x86_64-unknown-linux-gnu |
        sed 's/ (\*)$//; s/ (\/.*)|/|/' | grep -v '^tqfwd v' | sort -u |
        sed 's/^\(.*\) v\([^|]*\)|\(.*\)$/ \1 \2: \3/'
    printf '\nFiles: *\nCopyright: 2026 the tqfwd authors\nLicense: BSD-3-Clause\n'
    sed '1,/^Copyright/d' LICENSE | sed '/./,$!d; s/^$/./; s/^/ /'
    printf '\nLicense: MIT\n'
    printf ' Permission is hereby granted, free of charge, to any person obtaining a copy\n'
    printf ' of this software and associated documentation files (the "Software"), to deal\n'
    printf ' in the Software without restriction, including without limitation the rights\n'
    printf ' to use, copy, modify, merge, publish, distribute, sublicense, and/or sell\n'
    printf ' copies of the Software, and to permit persons to whom the Software is\n'
    printf ' furnished to do so, subject to the following conditions:\n .\n'
    printf ' The above copyright notice and this permission notice shall be included in\n'
    printf ' all copies or substantial portions of the Software.\n .\n'
    printf ' THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR\n'
    printf ' IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,\n'
    printf ' FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE\n'
    printf ' AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER\n'
    printf ' LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,\n'
    printf ' OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN\n'
    printf ' THE SOFTWARE.\n'
}

# Binaries, stripped as dh_strip does (the dynamic symbol table, with the
# rte_mp_reply export the pdump gate needs, stays).
for bin in tqfwd tqfwd-udp-peer; do
    put 755 "target/release/$bin" "/usr/bin/$bin"
    strip --remove-section=.comment --remove-section=.note --strip-unneeded "$stage/usr/bin/$bin"
done
nm -D "$stage/usr/bin/tqfwd" | grep -q ' T rte_mp_reply$' ||
    { echo "package: the stripped tqfwd lost its rte_mp_reply export" >&2; exit 1; }

put 644 dist/tqfwd.service /lib/systemd/system/tqfwd.service
put 755 dist/check-config /usr/libexec/tqfwd/check-config
put 644 dist/tqfwd.toml /etc/tqfwd/tqfwd.toml
echo /etc/tqfwd/tqfwd.toml > "$stage/DEBIAN/conffiles"
for preset in dpdk-config/*.toml; do
    put 644 "$preset" "/usr/share/tqfwd/presets/$(basename "$preset")"
done
put 644 dist/grafana/tqfwd.json /usr/share/tqfwd/grafana/tqfwd.json
# Prometheus alert rules and their promtool unit tests (the tests name the
# rules file beside them: `promtool test rules` runs where they lie).
for f in tqfwd-alerts.yml tqfwd-alerts.test.yml; do
    put 644 "dist/prometheus/$f" "/usr/share/tqfwd/prometheus/$f"
done

# Man pages and completions, generated by the binary being packaged.
tqfwd=target/release/tqfwd
"$tqfwd" --man | gz /usr/share/man/man8/tqfwd.8.gz
peer_man target/release/tqfwd-udp-peer | gz /usr/share/man/man1/tqfwd-udp-peer.1.gz
mkdir -p "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d"
"$tqfwd" --completions bash > "$stage/usr/share/bash-completion/completions/tqfwd"
"$tqfwd" --completions zsh > "$stage/usr/share/zsh/vendor-completions/_tqfwd"
"$tqfwd" --completions fish > "$stage/usr/share/fish/vendor_completions.d/tqfwd.fish"

# Documentation: README.md with docs/ beside it, so its links resolve.
doc=/usr/share/doc/tqfwd
put 644 README.md "$doc/README.md"
for f in docs/*; do
    [ -f "$f" ] && put 644 "$f" "$doc/$f"
done
copyright > "$stage$doc/copyright"
date=$(git log -1 --format=%cD 2>/dev/null || date -R)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
gz "$doc/changelog.Debian.gz" <<EOF
tqfwd (${version}-${revision}) unstable; urgency=medium

  * Built from commit ${commit} by scripts/package.sh.

 -- ${maintainer}  ${date}
EOF

# Maintainer scripts: what debhelper writes for a unit that is not enabled
# on installation (the configuration must name ports first).
cat > "$stage/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
EOF
cat > "$stage/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -z "${DPKG_ROOT:-}" ] && [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    deb-systemd-invoke stop 'tqfwd.service' >/dev/null || true
fi
EOF
cat > "$stage/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
    if command -v deb-systemd-helper >/dev/null 2>&1; then
        deb-systemd-helper purge 'tqfwd.service' >/dev/null || true
    fi
    # stats-json and captures of the example configuration (StateDirectory).
    rm -rf /var/lib/tqfwd
fi
EOF
chmod 755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"

# Depends: the shared libraries the binaries link (DPDK's librte-*, libc,
# ...), from their packages' shlibs/symbols files. dpkg-shlibdeps reads a
# debian/control, so it runs in a scratch source tree.
mkdir -p target/debian/shlibs/debian
printf 'Source: tqfwd\n\nPackage: tqfwd\nArchitecture: any\n' > target/debian/shlibs/debian/control
depends=$(cd target/debian/shlibs && dpkg-shlibdeps -O -e"$root/$stage/usr/bin/tqfwd" \
    -e"$root/$stage/usr/bin/tqfwd-udp-peer" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# EAL loads the mempool driver and the NIC drivers as plugins (dlopen),
# which dpkg-shlibdeps cannot see: the ring mempool driver backs every mbuf
# pool, so tqfwd cannot run without it; the PMDs tqfwd is used with are
# recommended. Their package names carry the ABI of the linked librte-eal.
abi=$(echo "$depends" | sed -n 's/.*librte-eal\([0-9][0-9]*\).*/\1/p')
[ -n "$abi" ] || { echo "package: no librte-eal in Depends ($depends)" >&2; exit 1; }
recommends="librte-net-ice${abi}, librte-net-mlx5-${abi}, librte-net-memif${abi}, librte-net-af-packet${abi}, librte-net-null${abi}, librte-net-pcap${abi}"

(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    > "$stage/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<EOF
Package: tqfwd
Version: ${version}-${revision}
Architecture: ${arch}
Maintainer: ${maintainer}
Installed-Size: ${size}
Depends: ${depends}, librte-mempool-ring${abi}
Recommends: ${recommends}
Section: net
Priority: optional
Description: DPDK userspace packet forwarder
 tqfwd forwards packets between DPDK ports: RX lcores hand bursts, by
 flow, through per-lcore TransferQueues (or rte_rings) to worker lcores,
 which classify each frame, rewrite its MACs and hand it to the TX lcore
 of its output port. Every packet is transmitted or freed exactly once
 and counted; at exit it checks rx = tx + drops and that no mbuf leaked.
 .
 This package holds the forwarder, a systemd unit (Type=notify) reading
 /etc/tqfwd/tqfwd.toml, NIC presets, the man page, shell completions, a
 Grafana dashboard and Prometheus alert rules for its metrics, and
 tqfwd-udp-peer, a kernel UDP sender and receiver for tests through
 network namespaces.
EOF

# Owned by root whoever builds; -Zxz: dpkg-deb's default compression.
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "$deb"
