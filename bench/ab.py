#!/usr/bin/env python3
"""Alternated A/B of tqfwd builds or options on two net_null ports.

    bench/ab.py [--pairs N] [--seconds S] [--lcores 0-1] [--pcap FILE [--pcap-queues N]]
                NAME=BINARY[:OPTIONS] NAME=BINARY[:OPTIONS] ...

Each round runs every contender once, back to back, rotating which goes
first; a run forwards S + 1 s (the first second is warm-up, the rest is
read from the stats lines) with `--stats-json`. Printed per contender:
median forwarded Mpps, the whole pipeline's busy TSC cycles per forwarded
packet (summed over lcores, from the JSON) and each lcore's share, and the
median of per-round ratios against the first contender; with `--latency`
in the contenders' options, also the median RX->TX p50 and p90 (and the
p50's median paired ratio). Then the same per host placement of the two
lcores (near or far, from the cache-line trip tqfwd measures at the start
and end of each run): the pipeline's cost follows it, and the host picks
it anew for each run. Every run must end with conservation and 0
mbufs in use, or the script says so and exits 1.

Example (what a queue change's commit message quotes):

    bench/ab.py --pairs 9 base=/tmp/base/tqfwd new=target/release/tqfwd
    bench/ab.py tq=target/release/tqfwd:"--backend tq" ring=target/release/tqfwd:"--backend ring"
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys

# The host placement of a run's two lcores, from its lcore_trip_ns (shared
# with bench/pipeline.sh; this directory is on the path when run as a script).
from pipeline_model import NEAR_NS, placement
import tempfile


def eal_memory():
    try:
        with open("/proc/meminfo") as f:
            mi = f.read()
        free = int(re.search(r"HugePages_Free:\s+(\d+)", mi)[1])
        size_kb = int(re.search(r"Hugepagesize:\s+(\d+)", mi)[1])
        if free * size_kb >= 512 * 1024:
            return ["--in-memory"]
    except (OSError, TypeError):
        pass
    return ["--no-huge", "-m", "1024", "--in-memory"]


def run(binary, opts, a, seq, tmp):
    j = os.path.join(tmp, f"r{seq}.json")
    rx = ",".join([f"rx_pcap={a.pcap}"] * a.pcap_queues)
    ports = ([f"--vdev=net_pcap0,{rx},infinite_rx=1",
              f"--vdev=net_pcap1,{rx},infinite_rx=1"] if a.pcap else
             ["--vdev=net_null0,size=64", "--vdev=net_null1,size=64"])
    extra = ["--mbufs", str(32768 * a.pcap_queues)] if a.pcap else []
    cmd = [binary, "-l", a.lcores, "--no-pci", *eal_memory(), "--file-prefix", f"ab{os.getpid()}-{seq}",
           *ports, "--", "--duration", str(a.seconds + 1), "--stats-interval", "1",
           "--stats-json", j, *extra, *opts]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=a.seconds + 60)
    lines = [float(m[1]) for m in
             re.finditer(r"^\[\s*[\d.]+s\] rx\s+[\d.]+ Mpps\s+tx\s+([\d.]+) Mpps", p.stdout, re.M)]
    try:
        with open(j) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        sys.exit(f"ab: no stats JSON from: {' '.join(cmd)}\n{p.stdout[-2000:]}")
    ok = p.returncode == 0 and rep["conservation_ok"] and rep["mbufs_in_use"] == 0
    per = []
    for l in rep["lcores"]:
        handled = l["rx_packets"] + l["worker_packets"] + l["tx_packets"]
        per.append(l["busy_cycles_per_packet"] * handled / max(rep["tx_packets"], 1))
    mpps = statistics.fmean(lines[1:]) if len(lines) > 1 else rep["tx_mpps"]
    lat = rep.get("latency_ns") or {}
    trip = rep.get("lcore_trip_ns") or {}
    return {"mpps": mpps, "cyc": sum(per), "per": per, "ok": ok, "cmd": " ".join(cmd),
            "drops": rep["drops_total"], "p50": lat.get("p50"), "p90": lat.get("p90"),
            "trip": (trip.get("start"), trip.get("end")), "place": placement(trip)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("--seconds", type=int, default=2, help="measured seconds per run (default 2)")
    ap.add_argument("--lcores", default="0-1")
    ap.add_argument("--pcap", help="replay this pcap on both ports (net_pcap, infinite_rx) instead of net_null")
    ap.add_argument("--pcap-queues", type=int, default=1,
                    help="RX queues per net_pcap port, each replaying the pcap (one per RX lcore)")
    ap.add_argument("contenders", nargs="+", help="NAME=BINARY[:OPTIONS]")
    a = ap.parse_args()
    if a.pcap_queues < 1:
        sys.exit("ab: --pcap-queues must be 1 or more (RX queues per net_pcap port)")
    cs = []
    for c in a.contenders:
        name, _, rest = c.partition("=")
        binary, _, opts = rest.partition(":")
        if not name or not os.access(binary, os.X_OK):
            sys.exit(f"ab: bad contender '{c}': NAME=BINARY[:OPTIONS] with an executable BINARY")
        cs.append((name, binary, shlex.split(opts)))
    res = {n: [] for n, _, _ in cs}
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        seq = 0
        for r in range(a.pairs):
            order = cs[r % len(cs):] + cs[:r % len(cs)]
            for name, binary, opts in order:
                seq += 1
                x = run(binary, opts, a, seq, tmp)
                res[name].append(x)
                bad += not x["ok"]
                lat = "" if x["p50"] is None else f"  p50/p90 {x['p50']:.0f}/{x['p90']:.0f} ns"
                trip = "/".join("-" if t is None else f"{t:.0f}" for t in x["trip"])
                print(f"round {r} {name:10s} {x['mpps']:7.2f} Mpps  {x['cyc']:6.1f} cyc/pkt "
                      f"({' + '.join(f'{v:.1f}' for v in x['per'])})  drops {x['drops']}{lat}"
                      f"  trip {trip} ns {x['place']}"
                      f"{'' if x['ok'] else '  END CHECK FAILED'}", flush=True)
    base = cs[0][0]
    print(f"\n{'contender':10s} {'Mpps':>7s} {'cyc/pkt':>8s}  per lcore          ratio Mpps vs {base} (paired)  cyc ratio")
    for name, _, opts in cs:
        xs = res[name]
        med = statistics.median(x["mpps"] for x in xs)
        cyc = statistics.median(x["cyc"] for x in xs)
        per = [statistics.median(x["per"][i] for x in xs) for i in range(len(xs[0]["per"]))]
        ratio = statistics.median(x["mpps"] / b["mpps"] for x, b in zip(xs, res[base]))
        cr = statistics.median(x["cyc"] / b["cyc"] for x, b in zip(xs, res[base]))
        lat = ""
        if all(x["p50"] is not None for x in xs + res[base]):
            p50, p90 = (statistics.median(x[k] for x in xs) for k in ("p50", "p90"))
            r50 = statistics.median(x["p50"] / b["p50"] for x, b in zip(xs, res[base]))
            lat = f"   p50 {p50:.0f} ns (paired x{r50:.3f})  p90 {p90:.0f} ns"
        print(f"{name:10s} {med:7.2f} {cyc:8.1f}  {' + '.join(f'{v:.1f}' for v in per):18s} {ratio:.3f}"
              f"{'':24s}{cr:.3f}{lat}")
    # The same, per host placement: each contender's runs of one placement,
    # and the paired ratios of the rounds where both runs had it.
    for place in ("near", "far"):
        print(f"\nplacement {place} (cache line one way {'<' if place == 'near' else '>='} "
              f"{NEAR_NS:.0f} ns at the start and the end of the run)")
        for name, _, _ in cs:
            xs = [x for x in res[name] if x["place"] == place]
            pairs = [(x, b) for x, b in zip(res[name], res[base])
                     if x["place"] == place and b["place"] == place]
            if not xs:
                print(f"{name:10s} no run")
                continue
            med = statistics.median(x["mpps"] for x in xs)
            cyc = statistics.median(x["cyc"] for x in xs)
            per = [statistics.median(x["per"][i] for x in xs) for i in range(len(xs[0]["per"]))]
            ratio = (f"{statistics.median(x['mpps'] / b['mpps'] for x, b in pairs):.3f}"
                     if pairs else "-")
            cr = (f"{statistics.median(x['cyc'] / b['cyc'] for x, b in pairs):.3f}"
                  if pairs else "-")
            print(f"{name:10s} {med:7.2f} {cyc:8.1f}  {' + '.join(f'{v:.1f}' for v in per):18s} "
                  f"{ratio:>5s} ({len(pairs)} pairs){'':13s}{cr}   runs {len(xs)}")
    print(f"\nexact runs: {res[cs[0][0]][0]['cmd']}")
    if bad:
        print(f"ab: {bad} run(s) failed the end checks", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
