#!/usr/bin/env bash
# Mixed-operations soak: tqfwd forwards for a while with every operator
# action going on at once, then its end checks, its Prometheus series and
# its memory are judged. docs/soak.md has the method and figures.
#
#   scripts/soak.sh --minutes 60            # the hour-long run
#   scripts/soak.sh --seconds 60            # the CI version (scripts/test.sh)
#   scripts/soak.sh --minutes 10 -- --backend ring   # options for tqfwd
#
# Phase 1, net_null (two ports, lcores 0-1): all at once
#   * Prometheus scrapes (curl) every SOAK_SCRAPE_SECS (0.2 s);
#   * /tqfwd/port_stop,N then /tqfwd/port_start,N every ~3 s (N = 0, 1
#     in turn), /tqfwd/clear every third round (dpdk-telemetry.py);
#   * SIGUSR1 every 5 s;
#   * dpdk-dumpcap attaching for 1 s and detaching, every ~6 s, and once,
#     half-way, SIGKILLed while attached (needs huge pages: a secondary
#     maps the primary's; skipped with a line saying so otherwise);
#   * --capture 0 (the first 200000 frames).
# Phase 2, memif (when dpdk-testpmd is installed; a third of the time):
#   testpmd txonly -> memif -> tqfwd -> memif -> testpmd rxonly, one of the
#   two testpmds stopped (SIGINT) and started again every ~10 s, with the
#   scrapes, /tqfwd/clear and SIGUSR1 as above.
# Each phase ends with SIGINT and checks: exit 0; conservation_ok and
# mbufs_in_use 0 in the JSON; every scrape answered (HTTP 200); no counter
# (every *_total series) lower than in the scrape before, except the PMD
# counters of memif ports (tqfwd_port_{ipackets,...}_total: net_memif's
# own counters restart with each connection); every telemetry command
# answered; RSS growth below SOAK_RSS_TOL_KB (1024 KiB): the peak after
# minute 1 (a third of the phase when shorter than 3 min) over the peak
# up to then. The RSS curve is printed.
#
# Output: target/soak/<time>/<phase>/{rss.tsv,tqfwd.log,stats.json,...}.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
memif=auto
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) seconds=$(awk -v m="$2" 'BEGIN { printf "%d", m * 60 }'); shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --no-memif) memif=no; shift ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
        *) echo "soak: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
scrape_secs="${SOAK_SCRAPE_SECS:-0.2}"
tol_kb="${SOAK_RSS_TOL_KB:-1024}"

scripts/install-deps.sh >/dev/null
scripts/hugepages.sh setup 512 >/dev/null || true
# The same build as scripts/test.sh's (a plain `cargo build` would resolve
# features differently and rebuild).
cargo test --release --features testkit --no-run 2>&1 | grep -v '^ *Executable' || true
bin=./target/release/tqfwd
huge=no
if awk '/^HugePages_Free/ {exit !($2 >= 300)}' /proc/meminfo && grep -q hugetlbfs /proc/mounts; then
    huge=yes
fi
if [ "$memif" = auto ]; then
    command -v dpdk-testpmd >/dev/null && memif=yes || memif=no
fi
if [ "$memif" = yes ]; then
    memif_secs=$((seconds / 3))
    null_secs=$((seconds - memif_secs))
else
    memif_secs=0
    null_secs=$seconds
fi
root="$PWD/target/soak/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$root"
echo "soak: ${seconds} s (net_null ${null_secs} s, memif ${memif_secs} s), huge pages: $huge, output in $root"

fail=0
check() { # check OK|FAIL message
    if [ "$1" = OK ]; then echo "  ok    $2"; else echo "  FAIL  $2"; fail=1; fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Background loops stop when $out/stop exists or tqfwd ($pid) is gone.
running() { [ ! -e "$out/stop" ] && kill -0 "$pid" 2>/dev/null; }
pause() { sleep "$1" & wait $! || true; }

# Prometheus: each scrape's *_total series against the previous scrape's.
scraper() {
    local n=0 t code
    : >"$out/prev.txt"
    while running; do
        t=$(date +%s.%N)
        code=$(curl -s -m 2 -o "$out/scrape.txt" -w '%{http_code}' "http://$maddr/metrics" || true)
        if [ "$code" = 200 ]; then
            n=$((n + 1))
            awk -v t="$t" -v n="$n" -v skip="$skip_re" -v viol="$out/decreases.txt" -v next_state="$out/next.txt" '
                FILENAME == ARGV[1] { prev[$1] = $2; next }
                /^#/ || NF < 2 { next }
                $1 ~ /_total(\{|$)/ {
                    print $1, $2 > next_state
                    if (skip != "" && $1 ~ skip) next
                    if (($1 in prev) && $2 + 0 < prev[$1] + 0)
                        print "scrape " n " at " t ": " $1 " " prev[$1] " -> " $2 >> viol
                }' "$out/prev.txt" "$out/scrape.txt"
            # A body cut short (curl's -m deadline after the status line)
            # holds no series: a failed scrape, not the end of the scraper.
            if [ -s "$out/next.txt" ]; then
                mv "$out/next.txt" "$out/prev.txt"
                echo ok >>"$out/scrapes.txt"
            else
                echo "FAIL $t code 200 with no *_total series" >>"$out/scrapes.txt"
            fi
        elif running; then
            echo "FAIL $t code $code" >>"$out/scrapes.txt"
        fi
        pause "$scrape_secs"
    done
    awk '$1 ~ /_total(\{|$)/' "$out/prev.txt" | wc -l >"$out/series.txt"
}

tel() { # tel COMMAND: one telemetry command, its answer judged
    local a
    a=$(echo "$1" | timeout 10 dpdk-telemetry.py -f "$prefix" 2>&1 | grep '^{"/tqfwd' || true)
    if grep -q '"ok"\|"cleared"' <<<"$a"; then
        echo "ok $1" >>"$out/telemetry.txt"
    else
        echo "FAIL $1: ${a:-no answer}" >>"$out/telemetry.txt"
    fi
}

port_cycler() {
    local i=0 p
    while running; do
        p=$((i % 2))
        tel "/tqfwd/port_stop,$p"
        pause 1.5
        tel "/tqfwd/port_start,$p"
        [ $((i % 3)) -eq 0 ] && tel /tqfwd/clear
        pause 1.5
        i=$((i + 1))
    done
}

clearer() {
    while running; do
        tel /tqfwd/clear
        pause 4
    done
}

usr1() {
    while running; do
        pause 5
        kill -USR1 "$pid" 2>/dev/null && echo sent >>"$out/usr1.txt"
    done
}

dumpcapper() {
    local k=0 killed=no half
    half=$(awk -v s="$phase_secs" 'BEGIN { print int(s / 2) }')
    while running; do
        pause 5
        running || break
        k=$((k + 1))
        if [ "$killed" = no ] && [ "$(($(date +%s) - t0))" -ge "$half" ]; then
            killed=yes
            dpdk-dumpcap --file-prefix "$prefix" -i net_null1 -a filesize:20000 -w "$out/dumpcap-killed.pcapng" \
                >"$out/dumpcap-killed.log" 2>&1 &
            local dc=$!
            # Attached once it says what it captures.
            for _ in $(seq 50); do
                grep -q "Capturing on" "$out/dumpcap-killed.log" && break
                pause 0.1
            done
            pause 1
            kill -KILL "$dc" 2>/dev/null || true
            # Bounded: one clean-clone CI run saw this wait take 100 s (the
            # secondary in its exit path), holding the phase's end; tqfwd
            # must end with its checks whether or not it is gone by then.
            local gone=no
            for _ in $(seq 100); do
                kill -0 "$dc" 2>/dev/null || { gone=yes; break; }
                pause 0.1
            done
            [ "$gone" = yes ] && wait "$dc" 2>/dev/null || true
            echo "SIGKILLed while attached ($(grep -c 'Capturing on' "$out/dumpcap-killed.log") attach line; gone within 10 s: $gone)" >>"$out/dumpcap.txt"
            continue
        fi
        local iface=net_null$((k % 2)) log
        # 1 s or 20 MB, whichever comes first (net_null fills 400 MB a second).
        log=$(timeout 20 dpdk-dumpcap --file-prefix "$prefix" -i "$iface" -a duration:1 -a filesize:20000 \
            -w "$out/dumpcap.pcapng" 2>&1) && rc=0 || rc=$?
        echo "rc $rc: $(grep -o "received/dropped on interface.*" <<<"$log" | head -n 1)$( [ "$rc" -ne 0 ] && tail -n 2 <<<"$log" | tr '\n' ' ')" >>"$out/dumpcap.txt"
    done
}

sampler() {
    printf 't_s\tvmrss_kb\n' >"$out/rss.tsv"
    while kill -0 "$pid" 2>/dev/null && [ ! -e "$out/stop" ]; do
        local rss
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
        [ -n "$rss" ] && printf '%s\t%s\n' "$(($(date +%s) - t0))" "$rss" >>"$out/rss.tsv"
        pause 5
    done
}

# wait_helpers N: returns once every helper ($helpers) is gone, or after
# N tenths of a second.
wait_helpers() {
    local i h alive
    for ((i = 0; i < $1; i++)); do
        alive=no
        for h in "${helpers[@]}"; do kill -0 "$h" 2>/dev/null && alive=yes; done
        [ "$alive" = no ] && return 0
        pause 0.1
    done
}

# end_helpers: after the stop file, the helpers ($helpers) end, or are
# made to. They see the stop file within a few seconds. One whose child
# the kernel is slow to reap (a `timeout` of dpdk-dumpcap can sit in
# wait4, in shrink_dcache_parent, for minutes) must not hold the phase:
# after 30 s it is killed, said in helpers.txt, and tqfwd is stopped and
# judged as usual. A process SIGKILLed in the kernel's exit path can
# itself take minutes to go: it gets 10 s more at most, then it is left
# behind, said in helpers.txt. It holds no pipe of the caller (helpers
# print to helpers.log), so nothing downstream waits for it.
end_helpers() {
    local h
    wait_helpers 300
    for h in "${helpers[@]}"; do
        if kill -0 "$h" 2>/dev/null; then
            echo "helper $h still running 30 s after the stop: killed (with its children)" >>"$out/helpers.txt"
            pkill -KILL -P "$h" 2>/dev/null || true
            kill -KILL "$h" 2>/dev/null || true
        fi
    done
    wait_helpers 100
    for h in "${helpers[@]}"; do
        if kill -0 "$h" 2>/dev/null; then
            echo "helper $h not gone 10 s after its SIGKILL: left behind (state $(awk '{print $3}' "/proc/$h/stat" 2>/dev/null || echo '?'))" >>"$out/helpers.txt"
        else
            wait "$h" 2>/dev/null || true
        fi
    done
}

# Waits for the first answered scrape (tqfwd forwarding).
wait_metrics() {
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || return 1
        curl -s -m 1 -o /dev/null "http://$maddr/metrics" && return 0
        pause 0.1
    done
    return 1
}

judge() { # judge PHASE: the checks of one phase
    local rc=$1
    echo "soak $phase: results"
    [ "$rc" -eq 0 ] && check OK "exit 0" || check FAIL "exit $rc (see $out/tqfwd.log)"
    if [ -s "$out/stats.json" ]; then
        grep -q '"conservation_ok": true' "$out/stats.json" && check OK "conservation_ok true" || check FAIL "conservation_ok not true"
        grep -q '"mbufs_in_use": 0,' "$out/stats.json" && check OK "mbufs_in_use 0" || check FAIL "mbufs_in_use not 0"
        grep -E '^  "(rx_packets|tx_packets|drops_total|capture_dropped)":' "$out/stats.json" | tr -d ' ,' | tr '\n' ' ' | sed 's/^/        /'
        echo
    else
        check FAIL "no stats JSON"
    fi
    local ok bad
    ok=$(grep -c '^ok' "$out/scrapes.txt" || true)
    bad=$(grep -c '^FAIL' "$out/scrapes.txt" || true)
    [ "$ok" -gt 0 ] && [ "$bad" -eq 0 ] && check OK "$ok scrapes, all answered" || check FAIL "$ok scrapes answered, $bad not (see $out/scrapes.txt)"
    if [ -s "$out/decreases.txt" ]; then
        check FAIL "$(wc -l <"$out/decreases.txt") counter decreases, first: $(head -n 1 "$out/decreases.txt")"
    else
        check OK "no counter decreased between scrapes ($(cat "$out/series.txt" 2>/dev/null || echo '?') series${skip_re:+; PMD counters of memif ports not judged})"
    fi
    ok=$(grep -c '^ok' "$out/telemetry.txt" || true)
    bad=$(grep -c '^FAIL' "$out/telemetry.txt" || true)
    [ "$ok" -gt 0 ] && [ "$bad" -eq 0 ] && check OK "$ok telemetry commands answered ok ($(grep -c port_stop "$out/telemetry.txt") port_stop, $(grep -c clear "$out/telemetry.txt") clear)" \
        || check FAIL "$ok telemetry commands ok, $bad not: $(grep -m1 '^FAIL' "$out/telemetry.txt")"
    local sent logged
    sent=$(wc -l <"$out/usr1.txt" 2>/dev/null || echo 0)
    logged=$(grep -c 'SIGUSR1: totals' "$out/tqfwd.log" || true)
    [ "$sent" -gt 0 ] && [ "$logged" -ge "$sent" ] && check OK "SIGUSR1 $sent sent, $logged totals lines" || check FAIL "SIGUSR1 $sent sent, $logged totals lines"
    local base
    base=$(awk -v s="$phase_secs" 'BEGIN { b = (s >= 180) ? 60 : int(s / 3); print b }')
    local rss
    # Peaks, not single samples: a memif peer's reconnect unmaps and maps
    # its shared regions again (about 2 MiB up and down every ~10 s), so a
    # sample taken in a trough would read a refill as growth. A leak raises
    # the later peak above the early one.
    rss=$(awk -v base="$base" -v tol="$tol_kb" 'NR > 1 {
            if (bt == "") { if ($2 > b) b = $2; if ($1 >= base) bt = $1 }
            else if ($2 > later) { later = $2; lt = $1 }
            if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2
        }
        END {
            if (bt == "") { print "FAIL no RSS sample after " base " s"; exit }
            if (lt == "") { print "FAIL no RSS sample after the one at " bt " s"; exit }
            g = later - b
            printf "%s RSS peak %d KiB up to %d s, %d KiB after (at %d s): growth %d KiB (limit %d); min %d max %d\n", (g < tol ? "OK" : "FAIL"), b, bt, later, lt, g, tol, min, max
        }' "$out/rss.tsv")
    check "${rss%% *}" "${rss#* }"
    echo "        RSS curve (s: KiB):$(awk -v s="$phase_secs" 'NR > 1 { step = (s > 600) ? 60 : (s > 120 ? 20 : 5); if ($1 % step < 5 || $1 + 0 == 0) printf " %s:%s", $1, $2 }' "$out/rss.tsv")"
}

mem_args() { # mem_args MB [--in-memory]: EAL memory options for one process
    if [ "$huge" = yes ] && awk -v need="$(($1 / 2 + 16))" '/^HugePages_Free/ {exit !($2 >= need)}' /proc/meminfo; then
        echo "${2:-} -m $1"
    else
        echo "--no-huge -m $1"
    fi
}

# ---------------------------------------------------------------- net_null
phase=null
phase_secs=$null_secs
out="$root/null"
mkdir -p "$out"
prefix="tqfwdsoak$$"
maddr="127.0.0.1:$(free_port)"
skip_re=""
# shellcheck disable=SC2046
$bin -l 0-1 --no-pci --file-prefix "$prefix" $(mem_args 512) --log-level=lib.eal:warning \
    --vdev=net_null0,size=64 --vdev=net_null1,size=64 -- \
    --metrics "$maddr" --capture "0:$out/capture0.pcapng" --capture-count 200000 \
    --stats-interval 10 --stats-json "$out/stats.json" --duration $((phase_secs + 600)) "${extra[@]}" \
    >"$out/tqfwd.log" 2>&1 &
pid=$!
trap 'touch "$out/stop"; kill -INT $pid 2>/dev/null || true' INT TERM
wait_metrics || { echo "soak: tqfwd did not start:"; tail -n 20 "$out/tqfwd.log"; exit 1; }
t0=$(date +%s)
# The helpers write their own files; what else they print goes to
# helpers.log, so that none holds this script's stdout, a pipe of its
# caller (see end_helpers).
sampler >>"$out/helpers.log" 2>&1 &
helpers=($!)
scraper >>"$out/helpers.log" 2>&1 & helpers+=($!)
port_cycler >>"$out/helpers.log" 2>&1 & helpers+=($!)
usr1 >>"$out/helpers.log" 2>&1 & helpers+=($!)
if command -v dpdk-dumpcap >/dev/null && [ "$huge" = yes ]; then
    dumpcapper >>"$out/helpers.log" 2>&1 & helpers+=($!)
else
    echo "soak: dpdk-dumpcap skipped (not installed, or no huge pages for a secondary)" | tee "$out/dumpcap.txt"
fi
while [ $(($(date +%s) - t0)) -lt "$phase_secs" ] && kill -0 "$pid" 2>/dev/null; do pause 1; done
touch "$out/stop"
end_helpers
kill -INT "$pid" 2>/dev/null || true
set +e
wait "$pid"
rc=$?
set -e
trap - INT TERM
rm -f "$out"/dumpcap*.pcapng
# A SIGKILLed secondary may leave the primary's runtime files behind.
rm -rf "/var/run/dpdk/$prefix" /dev/hugepages/"${prefix}"map_* 2>/dev/null || true
judge "$rc"
if [ -s "$out/dumpcap.txt" ]; then
    runs=$(grep -c '^rc ' "$out/dumpcap.txt" || true)
    good=$(grep -c '^rc 0' "$out/dumpcap.txt" || true)
    killed=$(grep -c '^SIGKILLed' "$out/dumpcap.txt" || true)
    echo "        dpdk-dumpcap: $runs attach/detach runs, $good exit 0, $killed SIGKILLed while attached (details: $out/dumpcap.txt)"
    [ "$runs" -eq 0 ] || [ "$good" -gt 0 ] || check FAIL "no dpdk-dumpcap run succeeded"
fi
# Not a failure: the phase's own checks above judge tqfwd.
[ -s "$out/helpers.txt" ] && sed 's/^/        /' "$out/helpers.txt"
written=$(grep -o '"written": [0-9]*' "$out/stats.json" 2>/dev/null | head -n 1 | awk '{print $2}')
[ "${written:-0}" -gt 0 ] && check OK "--capture 0 wrote $written frames" || check FAIL "--capture 0 wrote nothing"

# ------------------------------------------------------------------ memif
if [ "$memif_secs" -gt 0 ]; then
    phase=memif
    phase_secs=$memif_secs
    out="$root/memif"
    mkdir -p "$out"
    prefix="tqfwdsoakm$$"
    maddr="127.0.0.1:$(free_port)"
    skip_re='^tqfwd_port_(ipackets|opackets|imissed|rx_nombuf|ierrors|oerrors)_total'
    gsock="$out/gen.sock"
    ssock="$out/sink.sock"
    # shellcheck disable=SC2046
    $bin -l 0-1 --no-pci --file-prefix "$prefix" $(mem_args 256 --in-memory) --log-level=lib.eal:warning \
        --vdev="net_memif0,role=server,socket=$gsock,socket-abstract=no,id=0" \
        --vdev="net_memif1,role=server,socket=$ssock,socket-abstract=no,id=0" -- \
        --metrics "$maddr" --stats-interval 10 --stats-json "$out/stats.json" \
        --duration $((phase_secs + 600)) "${extra[@]}" >"$out/tqfwd.log" 2>&1 &
    pid=$!
    trap 'touch "$out/stop"; kill -INT $pid 2>/dev/null || true' INT TERM
    testpmd() { # testpmd NAME SOCKET MAIN_LCORE MODE...
        local name=$1 sock=$2 main=$3
        shift 3
        # shellcheck disable=SC2046
        dpdk-testpmd -l 0-1 --main-lcore "$main" --no-pci --file-prefix "tqsoak$name$$" \
            $(mem_args 128 --in-memory) \
            --vdev="net_memif0,role=client,socket=$sock,socket-abstract=no,id=0" -- \
            "$@" --auto-start --stats-period 30 --total-num-mbufs=8192 --nb-cores=1 \
            --rxq=1 --txq=1 --no-mlockall >>"$out/$name.log" 2>&1 &
        echo $!
    }
    for _ in $(seq 200); do [ -S "$gsock" ] && [ -S "$ssock" ] && break; pause 0.1; done
    sink=$(testpmd sink "$ssock" 1 --forward-mode=rxonly)
    gen=$(testpmd gen "$gsock" 0 --forward-mode=txonly --txpkts=64)
    wait_metrics || { echo "soak: tqfwd (memif) did not start:"; tail -n 20 "$out/tqfwd.log"; exit 1; }
    t0=$(date +%s)
    sampler >>"$out/helpers.log" 2>&1 &
    helpers=($!)
    scraper >>"$out/helpers.log" 2>&1 & helpers+=($!)
    clearer >>"$out/helpers.log" 2>&1 & helpers+=($!)
    usr1 >>"$out/helpers.log" 2>&1 & helpers+=($!)
    restarts=0
    while [ $(($(date +%s) - t0)) -lt "$phase_secs" ] && kill -0 "$pid" 2>/dev/null; do
        pause 10
        [ $(($(date +%s) - t0)) -lt "$phase_secs" ] || break
        if [ $((restarts % 2)) -eq 0 ]; then victim=$gen; else victim=$sink; fi
        kill -INT "$victim" 2>/dev/null || true
        timeout 20 tail --pid="$victim" -f /dev/null || kill -KILL "$victim" 2>/dev/null || true
        wait "$victim" 2>/dev/null || true
        if [ $((restarts % 2)) -eq 0 ]; then
            gen=$(testpmd gen "$gsock" 0 --forward-mode=txonly --txpkts=64)
        else
            sink=$(testpmd sink "$ssock" 1 --forward-mode=rxonly)
        fi
        restarts=$((restarts + 1))
    done
    touch "$out/stop"
    end_helpers
    # The generator first, then tqfwd (drains), then the sink.
    kill -INT "$gen" 2>/dev/null || true
    wait "$gen" 2>/dev/null || true
    kill -INT "$pid" 2>/dev/null || true
    set +e
    wait "$pid"
    rc=$?
    set -e
    kill -INT "$sink" 2>/dev/null || true
    wait "$sink" 2>/dev/null || true
    trap - INT TERM
    judge "$rc"
    [ "$restarts" -gt 0 ] && check OK "$restarts testpmd peer restarts (SIGINT, start again)" || check FAIL "no testpmd peer restart"
    ups=$(grep -c 'link up' "$out/tqfwd.log" || true)
    echo "        tqfwd logged $ups link-up events"
    [ -s "$out/helpers.txt" ] && sed 's/^/        /' "$out/helpers.txt"
fi

if [ "$fail" -ne 0 ]; then
    echo "soak: FAILED (logs in $root)"
    exit 1
fi
echo "soak: passed (logs in $root)"
