#!/usr/bin/env python3
"""Driver of bench/pipeline.sh: runs the contenders, parses, reports.

Called by bench/pipeline.sh (which builds, writes the pcap and picks the
EAL memory mode); see that script's --help and bench/README.md. Python 3.11
standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

CONTENDERS = ["tq", "ring", "testpmd-mac", "testpmd-io"]
TQFWD = {"tq", "ring"}
LATENCY_SAMPLE = 16
PCAP_MBUFS = 32768
# Latency below saturation: offered loads as fractions of the capacity
# (min of tq's and ring's null default-point medians of the same run), and
# the --on-full mode of those runs (drop: any queue overflow shows as drops).
LOADS = (0.25, 0.50, 0.75)
LOADS_QUICK = (0.50,)
LOAD_ON_FULL = "drop"
# Cores for line rate: 64-byte line rates of 10/25/40/100 GbE, Mpps.
LINE_RATES = ((14.88, "10 GbE"), (37.2, "25 GbE"), (59.52, "40 GbE"), (148.8, "100 GbE"))
WORKER_COSTS = (0, 100, 500)  # --worker-cycles of the rows that give the worker's cost

# 2-lcore layouts: EAL lcore list and tqfwd role options.
LAYOUTS = {
    "default": ("0-1", [], "rx+tx | worker (default)"),
    "rx|worker+tx": ("0-1", ["--rx-lcores", "0", "--worker-lcores", "1", "--tx-lcores", "1"], "rx | worker+tx"),
    "rx+worker|tx": ("0-1", ["--rx-lcores", "0", "--worker-lcores", "0", "--tx-lcores", "1"], "rx+worker | tx"),
    "all|all": ("0-1", ["--rx-lcores", "0-1", "--worker-lcores", "0-1", "--tx-lcores", "0-1"],
                "rx+worker+tx on both (2 RX queues per port)"),
    "one-lcore": ("0", [], "all on one lcore (-l 0)"),
}


@dataclass(frozen=True)
class Cfg:
    contender: str
    traffic: str  # null | pcap
    point: str  # row label: "default", "burst 8", ...
    burst: int = 32
    depth: int = 2048
    topology: str = "sharded"
    on_full: str = "wait"
    worker_cycles: int = 0
    layout: str = "default"
    latency: bool = True  # tqfwd only
    rx_rate: float | None = None  # --rx-rate MPPS (latency below saturation)

    @property
    def key(self) -> str:
        return f"{self.traffic}/{self.point}/{self.contender}"


def round_plan(cfgs: list[Cfg], quick: bool) -> list[Cfg]:
    """One round's run order. Full mode runs the net_null default point, its
    --on-full drop and no --latency twins a second time at the end of the
    round, in reverse (A B C D ... D C B A): the headline figures get twice
    the samples and a drift during the round cancels out of their ratios."""
    if quick:
        return list(cfgs)
    again = [c for c in cfgs if c.traffic == "null" and c.point in ("default", "on-full drop", "no --latency")]
    return list(cfgs) + list(reversed(again))


def build_configs(quick: bool) -> list[Cfg]:
    """Ordered so that the contenders of one point run back to back."""
    cfgs: list[Cfg] = []

    def point(traffic: str, label: str, who=CONTENDERS, **kw):
        for c in who:
            cfgs.append(Cfg(c, traffic, label, **kw))

    tr = ["tq", "ring"]
    point("null", "default")
    point("null", "on-full drop", who=tr, on_full="drop")
    if quick:
        point("null", "no --latency", who=["tq"], latency=False)
        return cfgs
    point("pcap", "default")
    point("null", "no --latency", who=["tq", "ring"], latency=False)
    point("pcap", "no --latency", who=["tq", "ring"], latency=False)
    for b in (8, 64):
        point("null", f"burst {b}", burst=b)
    for d in (1024, 4096, 16384):
        point("null", f"depth {d}", who=tr, depth=d)
    point("null", "topology shared", who=tr, topology="shared")
    for w in (100, 500):
        point("null", f"worker-cycles {w}", who=tr, worker_cycles=w)
    for lay in ("rx|worker+tx", "rx+worker|tx", "all|all", "one-lcore"):
        point("null", f"layout {lay}", who=tr, layout=lay)
    return cfgs


# ---------------------------------------------------------------- machine


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_busy(seconds: float) -> float:
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return v

    a = snap()
    time.sleep(seconds)
    b = snap()
    d = [y - x for x, y in zip(a, b)]
    total = sum(d)
    idle = d[3] + d[4]
    return 100.0 * (total - idle) / total if total else 0.0


FOREIGN = re.compile(r"^(cargo|cargo-fuzz|rustc|tqfwd.*|dpdk-testpmd|dpdk-test|perf)$")


def foreign_processes() -> list[str]:
    """Compilers and DPDK programs running that are not ours."""
    me = os.getpid()
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            # compilers, DPDK programs, and libFuzzer targets (cargo fuzz)
            if not (FOREIGN.match(comm) or "fuzz/target/" in cmd.split(" ")[0]):
                continue
        except OSError:
            continue
        out.append(f"{pid} {cmd[:120]}")
    return out


def wait_quiet(max_wait: float, log) -> dict:
    """Waits until no compiler/DPDK program runs and CPUs are < 15 % busy."""
    t0 = time.time()
    while True:
        procs = foreign_processes()
        busy = cpu_busy(2.0)
        quiet = not procs and busy < 15.0
        waited = time.time() - t0
        if quiet or waited >= max_wait:
            return {"quiet": quiet, "cpu_busy_pct": round(busy, 1), "loadavg": loadavg(),
                    "foreign": procs, "waited_s": round(waited, 1)}
        log(f"machine busy ({busy:.0f}% CPU; {len(procs)} compiler/DPDK processes"
            f"{': ' + procs[0] if procs else ''}); waiting ({waited:.0f}/{max_wait:.0f} s)")
        time.sleep(10)


# ---------------------------------------------------------------- running


class Runner:
    def __init__(self, args):
        self.a = args
        self.mem = args.mem.split()
        self.seq = 0
        self.tmp = os.path.dirname(args.tqfwd)

    def vdevs(self, traffic: str) -> list[str]:
        if traffic == "null":
            return ["--vdev=net_null0,size=64", "--vdev=net_null1,size=64"]
        p = self.a.pcap
        return [f"--vdev=net_pcap0,rx_pcap={p},infinite_rx=1", f"--vdev=net_pcap1,rx_pcap={p},infinite_rx=1"]

    def eal(self, lcores: str, traffic: str) -> list[str]:
        self.seq += 1
        return ["-l", lcores, "--no-pci", *self.mem, "--file-prefix", f"tqpb{os.getpid()}-{self.seq}",
                *self.vdevs(traffic)]

    def tqfwd_cmd(self, c: Cfg, seconds: float, json_path: str, stats_interval: float = 1) -> list[str]:
        lcores, role_args, _ = LAYOUTS[c.layout]
        app = ["--backend", c.contender, "--topology", c.topology, "--burst", str(c.burst),
               "--depth", str(c.depth), "--on-full", c.on_full, "--worker-cycles", str(c.worker_cycles),
               "--duration", str(seconds), "--stats-interval", str(stats_interval),
               "--stats-json", json_path, *role_args]
        if c.latency:
            app += ["--latency", "--latency-sample", str(LATENCY_SAMPLE)]
        if c.rx_rate is not None:
            app += ["--rx-rate", f"{c.rx_rate:.3f}"]
        if c.traffic == "pcap":
            # net_pcap's infinite_rx keeps the file's 8192 frames per port in
            # mbufs of the port's pool: the default pool (sized for
            # descriptors + queues) is too small for that.
            app += ["--mbufs", str(PCAP_MBUFS)]
        return [self.a.tqfwd, *self.eal(lcores, c.traffic), "--", *app]

    def testpmd_cmd(self, c: Cfg) -> list[str]:
        mode = c.contender.split("-")[1]
        return ["stdbuf", "-oL", "-eL", "dpdk-testpmd", *self.eal("0-1", c.traffic), "--",
                f"--forward-mode={mode}", "--auto-start", "--stats-period", "1", f"--burst={c.burst}",
                "--rxd=1024", "--txd=1024", "--record-core-cycles"]

    # -- tqfwd
    def run_tqfwd(self, c: Cfg) -> dict:
        S = self.a.seconds
        jpath = os.path.join(self.tmp, f"run-{self.seq + 1}.json")
        cmd = self.tqfwd_cmd(c, S + 1, jpath)
        t0 = time.time()
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=S + 60)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), -9
        r = {"cmd": " ".join(cmd), "rc": rc, "wall_s": round(time.time() - t0, 2)}
        lines = [(float(m[1]), float(m[2]), float(m[3])) for m in
                 re.finditer(r"^\[\s*([\d.]+)s\] rx\s+([\d.]+) Mpps\s+tx\s+([\d.]+) Mpps", out, re.M)]
        rep = None
        try:
            with open(jpath) as f:
                rep = json.load(f)
            os.unlink(jpath)
        except (OSError, ValueError):
            pass
        if rep is None:
            r["error"] = "no --stats-json output; last lines: " + " | ".join(out.strip().splitlines()[-3:])
            return r
        steady = lines[1:]
        if steady:
            r["rx_mpps"] = statistics.fmean(x[1] for x in steady)
            r["tx_mpps"] = statistics.fmean(x[2] for x in steady)
            r["mpps_from"] = f"{len(steady)} stats lines after the first second"
        else:
            r["rx_mpps"], r["tx_mpps"] = rep["rx_mpps"], rep["tx_mpps"]
            r["mpps_from"] = "whole run (no steady stats lines)"
        r["rx_mpps_whole_run"], r["tx_mpps_whole_run"] = rep["rx_mpps"], rep["tx_mpps"]
        m = re.search(r"TSC (\d+) Hz", out)  # tqfwd's start-up log line (rte_get_tsc_hz)
        if m:
            r["tsc_hz"] = int(m[1])
        r["drops"] = rep["drops"]
        r["drops_total"] = rep["drops_total"]
        r["mbufs_in_use"] = rep["mbufs_in_use"]
        r["conservation_ok"] = rep["conservation_ok"]
        r["rx_packets"], r["tx_packets"] = rep["rx_packets"], rep["tx_packets"]
        if rep.get("latency_ns"):
            r["latency_ns"] = rep["latency_ns"]
        lc = []
        total_busy = 0.0
        for l in rep["lcores"]:
            handled = l["rx_packets"] + l["worker_packets"] + l["tx_packets"]
            busy = l["busy_cycles_per_packet"] * handled
            total_busy += busy
            lc.append({"lcore": l["lcore"], "roles": "+".join(l["roles"]),
                       "busy_cycles_per_packet": l["busy_cycles_per_packet"],
                       "busy_ratio": l["busy_ratio"], "idle_polls": l["idle_polls"],
                       "avg_burst": l.get("avg_burst"),
                       "busy_cycles_per_rx_packet": busy / rep["rx_packets"] if rep["rx_packets"] else 0.0})
        r["lcores"] = lc
        r["busy_cycles_per_rx_packet"] = total_busy / rep["rx_packets"] if rep["rx_packets"] else 0.0
        if rc != 0:
            r["error"] = f"tqfwd exited {rc}"
        return r

    # -- testpmd
    def run_testpmd(self, c: Cfg) -> dict:
        S = self.a.seconds
        cmd = self.testpmd_cmd(c)
        t0 = time.time()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        displays: list[list[str]] = []
        tail: list[str] = []
        cur = None
        sent = False
        # watchdog: SIGINT after S + 60 s, SIGKILL 20 s later (a silent hang)
        wd1 = threading.Timer(S + 60, lambda: p.poll() is None and p.send_signal(signal.SIGINT))
        wd2 = threading.Timer(S + 80, lambda: p.poll() is None and p.kill())
        wd1.start()
        wd2.start()
        for line in p.stdout:
            tail.append(line)
            if "Port statistics" in line:
                if cur is not None:
                    displays.append(cur)
                cur = []
                # display 0 is printed at start (0 pps), display 1 covers the
                # first second (warm-up); stop after S steady ones.
                if len(displays) >= S + 2 and not sent:
                    p.send_signal(signal.SIGINT)
                    sent = True
            elif cur is not None and not sent:
                cur.append(line)
        rc = p.wait()
        wd1.cancel()
        wd2.cancel()
        out = "".join(tail)
        r = {"cmd": " ".join(cmd), "rc": rc, "wall_s": round(time.time() - t0, 2)}
        steady = displays[2:S + 2]
        rates = []
        for d in steady:
            txt = "".join(d)
            rx = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", txt)]
            tx = [int(x) for x in re.findall(r"Tx-pps:\s+(\d+)", txt)]
            if len(rx) == 2 and len(tx) == 2:
                rates.append((sum(rx) / 1e6, sum(tx) / 1e6))
        if not rates:
            r["error"] = f"no steady testpmd stats ({len(displays)} displays); last lines: " + \
                " | ".join(out.strip().splitlines()[-3:])
            return r
        r["rx_mpps"] = statistics.fmean(x[0] for x in rates)
        r["tx_mpps"] = statistics.fmean(x[1] for x in rates)
        r["mpps_from"] = f"{len(rates)} stats displays after the first second (Rx-pps/Tx-pps summed over ports)"
        acc = out.split("Accumulated forward statistics")
        if len(acc) > 1:
            m = re.search(r"RX-packets:\s+(\d+)\s+RX-dropped:\s+(\d+).*?TX-packets:\s+(\d+)\s+TX-dropped:\s+(\d+)",
                          acc[-1], re.S)
            if m:
                r["rx_packets"], r["tx_packets"] = int(m[1]), int(m[3])
                r["drops"] = {"rx_dropped": int(m[2]), "tx_dropped": int(m[4])}
                r["drops_total"] = int(m[2]) + int(m[4])
        m = re.search(r"CPU cycles/packet=([\d.]+)", out)
        if m:
            r["busy_cycles_per_rx_packet"] = float(m[1])
        if rc != 0:
            r["error"] = f"testpmd exited {rc}"
        return r

    def run(self, c: Cfg) -> dict:
        return self.run_tqfwd(c) if c.contender in TQFWD else self.run_testpmd(c)


# ---------------------------------------------------------------- summary


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(cfgs: list[Cfg], runs: dict[str, list[dict]]) -> dict[str, dict]:
    out = {}
    for c in cfgs:
        rs = [r for r in runs[c.key] if "error" not in r]
        s = {"config": dataclasses.asdict(c), "rounds_ok": len(rs), "rounds": len(runs[c.key])}
        if rs:
            s["rx_mpps"] = med([r["rx_mpps"] for r in rs])
            s["tx_mpps"] = med([r["tx_mpps"] for r in rs])
            s["tx_mpps_min"] = min(r["tx_mpps"] for r in rs)
            s["tx_mpps_max"] = max(r["tx_mpps"] for r in rs)
            drops: dict[str, int] = {}
            for r in rs:
                for k, v in r.get("drops", {}).items():
                    drops[k] = drops.get(k, 0) + v
            s["drops_all_rounds"] = drops
            s["drops_total_all_rounds"] = sum(drops.values())
            s["busy_cycles_per_rx_packet"] = med([r.get("busy_cycles_per_rx_packet") for r in rs])
            if c.contender in TQFWD:
                s["mbufs_in_use_max"] = max(r["mbufs_in_use"] for r in rs)
                s["conservation_ok_all"] = all(r["conservation_ok"] for r in rs)
                if all("latency_ns" in r for r in rs):
                    s["latency_ns"] = {k: med([r["latency_ns"][k] for r in rs])
                                       for k in ("p50", "p90", "p99", "p999", "max", "samples")}
                n = len(rs[0]["lcores"])
                s["lcores"] = [{
                    "lcore": rs[0]["lcores"][i]["lcore"], "roles": rs[0]["lcores"][i]["roles"],
                    **{k: med([r["lcores"][i][k] for r in rs if len(r["lcores"]) == n])
                       for k in ("busy_cycles_per_packet", "busy_ratio", "idle_polls", "avg_burst",
                                 "busy_cycles_per_rx_packet")}} for i in range(n)]
        out[c.key] = s
    return out


def pair_ratios(runs, ka, kb, metric="tx_mpps"):
    """A/B of every pair of runs from the same round (the n-th run of A with
    the n-th of B)."""
    ra, rb = runs.get(ka, []), runs.get(kb, [])
    xs = []
    for a, b in zip(ra, rb):
        if "error" in a or "error" in b or not b.get(metric):
            continue
        xs.append(a[metric] / b[metric])
    return xs


def paired_ratio(runs, ka, kb, metric="tx_mpps"):
    """Median over rounds of A/B from the same round (adjacent runs)."""
    xs = pair_ratios(runs, ka, kb, metric)
    return statistics.median(xs) if xs else None


def fmt(x, d=2, none="–"):
    return none if x is None else f"{x:.{d}f}"


def md_cell(text):
    """A table cell: the layout labels contain '|'."""
    return str(text).replace("|", "\\|")


def us(ns):
    return None if ns is None else ns / 1000.0


def throughput_points(cfgs):
    """The points of the throughput table: every one but the --rx-rate loads."""
    return points_in_order([c for c in cfgs if c.rx_rate is None])


def overload(runs, summ) -> dict:
    """--on-full drop against wait at the null default point, per backend."""
    out = {}
    for cn in ("tq", "ring"):
        kw, kd = f"null/default/{cn}", f"null/on-full drop/{cn}"
        w, d = summ.get(kw, {}).get("tx_mpps"), summ.get(kd, {}).get("tx_mpps")
        if w is None or d is None:
            continue
        pairs = pair_ratios(runs, kd, kw)
        frac = [r["drops_total"] / r["rx_packets"] for r in runs[kd] if "error" not in r and r.get("rx_packets")]
        out[cn] = {"wait_mpps": w, "drop_mpps": d, "ratio_of_medians": d / w if w else None,
                   "paired_ratios": pairs, "paired_ratio": statistics.median(pairs) if pairs else None,
                   "drops_fraction_of_rx_per_run": frac, "drops_fraction_of_rx_median": med(frac)}
    return out


def role_costs(summ, cn) -> dict:
    """Busy TSC cycles per packet of each role, from the rows whose layout
    puts that role alone on an lcore: RX from rx | worker+tx, TX from
    rx+worker | tx, the worker from the default layout at each
    --worker-cycles."""
    src = {"rx": (f"null/layout rx|worker+tx/{cn}", "rx"), "tx": (f"null/layout rx+worker|tx/{cn}", "tx")}
    for w in WORKER_COSTS:
        src[f"worker {w}"] = (f"null/default/{cn}" if w == 0 else f"null/worker-cycles {w}/{cn}", "worker")
    out = {}
    for role, (key, roles) in src.items():
        lc = next((l for l in summ.get(key, {}).get("lcores", []) if l["roles"] == roles), None)
        out[role] = {"cycles_per_packet": lc["busy_cycles_per_packet"] if lc else None,
                     "from": f"{key}, lcore {lc['lcore']}" if lc else f"{key} (not measured)"}
    return out


def cores_for_line_rate(summ, tsc_hz) -> dict:
    """lcores per role = ceil(rate × cycles per packet / TSC Hz), per backend,
    line rate and worker cost."""
    if not tsc_hz:
        return {"error": "no TSC frequency"}
    res = {"tsc_hz": tsc_hz, "backends": {}}
    for cn in ("tq", "ring"):
        costs = role_costs(summ, cn)

        def need(role, rate):
            c = costs[role]["cycles_per_packet"]
            return None if c is None else math.ceil(rate * 1e6 * c / tsc_hz)
        rows = []
        for rate, name in LINE_RATES:
            row = {"mpps": rate, "line": name, "rx": need("rx", rate), "tx": need("tx", rate),
                   "worker": {str(w): need(f"worker {w}", rate) for w in WORKER_COSTS}}
            row["total"] = {str(w): None if None in (row["rx"], row["tx"], row["worker"][str(w)])
                            else row["rx"] + row["tx"] + row["worker"][str(w)] for w in WORKER_COSTS}
            rows.append(row)
        res["backends"][cn] = {"cycles_per_packet": costs, "rows": rows}
    return res


def points_in_order(cfgs):
    seen, out = set(), []
    for c in cfgs:
        k = (c.traffic, c.point)
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


def report(meta, cfgs, runs, summ, targets, an) -> str:
    L = []
    L.append(f"# tqfwd forwarding pipeline — {meta['stamp']}\n")
    L.append(f"Command: `{meta['command']}`  ")
    L.append(f"Machine: {meta['machine']['cpu']}, {meta['machine']['nproc']} CPUs; "
             f"EAL memory: {meta['mem_note']}  ")
    L.append(f"Load before: {meta['quiet_check']['loadavg']} (load avg 1/5/15 min), CPUs "
             f"{meta['quiet_check']['cpu_busy_pct']}% busy over 2 s, quiet={meta['quiet_check']['quiet']}; "
             f"load after: {meta['load_after']}; runs that overlapped a compiler/DPDK process of someone else: "
             f"{meta['runs_with_foreign_processes']} of {sum(len(v) for v in runs.values())}  ")
    L.append(f"tqfwd {meta['tqfwd_version']} (git {meta['git']}); {meta['rounds']} rounds × {meta['seconds']} s "
             f"measured (+1 s warm-up) per run, contenders alternated"
             + ("" if meta["quick"] else ", the net_null default, on-full drop and no --latency rows twice per "
                "round (ABBA)")
             + "; medians over runs; "
             f"tqfwd with `--latency --latency-sample {LATENCY_SAMPLE}` unless the row says no --latency.\n")

    L.append("## Throughput (forwarded Mpps, both ports) and ratios\n")
    L.append("| traffic | point | tq | ring | testpmd mac | testpmd io | tq/ring | tq/mac | tq/io "
             "| tq p99 µs | ring p99 µs | drops tq / ring |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for traffic, pt in throughput_points(cfgs):
        def g(cn, k="tx_mpps"):
            return summ.get(f"{traffic}/{pt}/{cn}", {}).get(k)

        def lat(cn):
            l = summ.get(f"{traffic}/{pt}/{cn}", {}).get("latency_ns")
            return us(l["p99"]) if l else None

        def rr(cn):
            return paired_ratio(runs, f"{traffic}/{pt}/tq", f"{traffic}/{pt}/{cn}")

        def dr(cn):
            v = g(cn, "drops_total_all_rounds")
            return "–" if v is None else str(v)
        L.append(f"| {traffic} | {md_cell(pt)} | {fmt(g('tq'))} | {fmt(g('ring'))} | {fmt(g('testpmd-mac'))} | "
                 f"{fmt(g('testpmd-io'))} | {fmt(rr('ring'), 3)} | {fmt(rr('testpmd-mac'), 3)} | "
                 f"{fmt(rr('testpmd-io'), 3)} | {fmt(lat('tq'), 1)} | {fmt(lat('ring'), 1)} | "
                 f"{dr('tq')} / {dr('ring')} |")
    L.append("")
    L.append("Ratios are medians of per-run-pair ratios (tq and the other contender of the same point, "
             "run back to back). "
             "Drops are summed over all runs.\n")
    L += report_overload(an["overload"])
    L += report_loads(meta, cfgs, summ)
    L += report_cores(meta, an["cores_for_line_rate"])

    L.append("## Every configuration\n")
    L.append("| contender | traffic | point | rx Mpps | tx Mpps (min–max) | drops by reason (all rounds) "
             "| p50 / p90 / p99 / p99.9 / max µs | busy cyc/pkt per lcore | busy ratio | idle polls (M) "
             "| busy cyc per rx pkt | mbufs in use | ok runs |")
    L.append("|---|---|---|---:|---:|---|---|---|---|---|---:|---:|---:|")
    for c in cfgs:
        s = summ[c.key]
        if "tx_mpps" not in s:
            L.append(f"| {c.contender} | {c.traffic} | {md_cell(c.point)} | FAILED |||||||||"
                     f"{s['rounds_ok']}/{s['rounds']} |")
            continue
        drops = ", ".join(f"{k}={v}" for k, v in s.get("drops_all_rounds", {}).items() if v) or "0"
        l = s.get("latency_ns")
        lat = " / ".join(fmt(us(l[k]), 1) for k in ("p50", "p90", "p99", "p999", "max")) if l else "–"
        lcs = s.get("lcores", [])
        cyc = " / ".join(f"{x['lcore']}:{x['roles']} {x['busy_cycles_per_packet']:.0f}" for x in lcs) or "–"
        br = " / ".join(f"{x['busy_ratio'] * 100:.0f}%" for x in lcs) or "–"
        ip = " / ".join(f"{x['idle_polls'] / 1e6:.1f}" for x in lcs) or "–"
        L.append(f"| {c.contender} | {c.traffic} | {md_cell(c.point)} | {fmt(s['rx_mpps'])} | {fmt(s['tx_mpps'])} "
                 f"({fmt(s['tx_mpps_min'])}–{fmt(s['tx_mpps_max'])}) | {drops} | {lat} | {cyc} | {br} | {ip} | "
                 f"{fmt(s.get('busy_cycles_per_rx_packet'), 0)} | {s.get('mbufs_in_use_max', '–')} | "
                 f"{s['rounds_ok']}/{s['rounds']} |")
    L.append("")
    L.append("busy cyc/pkt per lcore: tqfwd's `busy_cycles_per_packet` (busy-poll cycles / packets the lcore "
             "handled, counting each role it holds). busy cyc per rx pkt: all lcores' busy cycles / packets "
             "received; for testpmd its `--record-core-cycles` \"CPU cycles/packet\" (same definition: "
             "cycles of polls that received packets / packets received).\n")

    L.append("## Targets\n")
    for t in targets:
        L.append(f"- **{t['name']}**: {t['verdict']} — {t['detail']}")
    L.append("")
    if meta.get("perf"):
        L.append("## perf (tq and ring, net_null, default point)\n")
        for name, pf in meta["perf"].items():
            L.append(f"### {name}\n")
            L.append(f"`{pf['record_cmd']}`\n")
            if pf.get("threads"):
                L.append("Samples per thread (tqfwd = main lcore 0, rte-worker-1 = lcore 1): "
                         + "; ".join(" ".join(t.split()) for t in pf["threads"]) + "\n")
            L.append("```")
            L.extend(pf.get("top", ["(no output)"]))
            L.append("```")
            if pf.get("top_srcline"):
                L.append("By source line (the stages are inlined into the lcore loop):\n")
                L.append("```")
                L.extend(pf["top_srcline"])
                L.append("```")
            if pf.get("stat"):
                L.append("```")
                L.extend(pf["stat"])
                L.append("```")
        L.append("")
    fails = [f"{k} round {i + 1}: {r['error']}" for k, rs in runs.items() for i, r in enumerate(rs) if "error" in r]
    if fails:
        L.append("## Failed runs\n")
        L.extend(f"- {f}" for f in fails)
        L.append("")
    return "\n".join(L) + "\n"


def report_overload(ov) -> list[str]:
    L = ["## Overload: --on-full drop vs wait (null, default point)\n"]
    if not ov:
        return L + ["No figures (the on-full drop or default row failed).\n"]
    L.append("| backend | wait Mpps | drop Mpps | drop ÷ wait, ratio of medians | drop ÷ wait, median of paired "
             "ratios | drops after RX, % of rx packets, per run (median) |")
    L.append("|---|---:|---:|---:|---:|---|")
    for cn, o in ov.items():
        per = ", ".join(f"{x * 100:.1f}" for x in o["drops_fraction_of_rx_per_run"]) or "–"
        mf = o["drops_fraction_of_rx_median"]
        L.append(f"| {cn} | {fmt(o['wait_mpps'])} | {fmt(o['drop_mpps'])} | {fmt(o['ratio_of_medians'], 3)} | "
                 f"{fmt(o['paired_ratio'], 3)} | {per} ({fmt(None if mf is None else mf * 100, 1)}) |")
    L.append("")
    L.append("Both rows are the benchmark's default point (burst 32, depth 2048, sharded, no simulated work) "
             "but for `--on-full`, on infinite net_null sources, so both run at saturation: `wait` back-pressures (a full queue stops "
             "the stage upstream, the packets stay in the port), `drop` (tqfwd's default) holds back the same way "
             "and frees and counts only what a consumer stalled for `--drop-after` refuses. Paired ratios: the n-th drop run of a round with the n-th wait run of the "
             "same round. Drops after RX: `drops_total` ÷ `rx_packets` of each run's `--stats-json` (whole "
             "run).\n")
    return L


def report_loads(meta, cfgs, summ) -> list[str]:
    ld = meta.get("loads", {})
    L = ["## Latency below saturation (null, --rx-rate)\n"]
    if ld.get("skipped"):
        L.append(f"Skipped: {ld['skipped']}.\n")
    else:
        cap = ld["capacity_by_backend_mpps"]
        L.append(f"Capacity: min(tq {fmt(cap['tq'])}, ring {fmt(cap['ring'])}) = **{fmt(ld['capacity_mpps'])} "
                 f"Mpps** (null default-point medians of this run); tq and ring offered "
                 + ", ".join(f"{f * 100:.0f} %" for f in ld["fractions"])
                 + f" of it with `--rx-rate`, `--on-full {ld['on_full']}`, `--latency --latency-sample "
                 f"{LATENCY_SAMPLE}`, otherwise the default point; {ld['rounds']} "
                 f"round{'s' if ld['rounds'] != 1 else ''}, the two alternated "
                 "(the first of the pair swapped every round).\n")
        L.append("| load | offered Mpps | backend | rx / tx Mpps | p50 µs | p99 µs | p99.9 µs | max µs "
                 "| drops (all runs) | ok runs |")
        L.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for c in cfgs:
            if c.rx_rate is None:
                continue
            s = summ[c.key]
            l = s.get("latency_ns") or {}
            L.append(f"| {c.point.split()[1]} % | {c.rx_rate:.3f} | {c.contender} | {fmt(s.get('rx_mpps'))} / "
                     f"{fmt(s.get('tx_mpps'))} | {fmt(us(l.get('p50')), 1)} | {fmt(us(l.get('p99')), 1)} | "
                     f"{fmt(us(l.get('p999')), 1)} | {fmt(us(l.get('max')), 1)} | "
                     f"{s.get('drops_total_all_rounds', '–')} | {s['rounds_ok']}/{s['rounds']} |")
        L.append("")
        L.append("Percentiles: tqfwd `latency_ns` (RX TSC stamp → just before `rte_eth_tx_burst`, 1 packet in "
                 f"{LATENCY_SAMPLE}), median of each over runs.\n")
    pp = meta.get("pingpong") or {}
    if "one_way_ns" in pp:
        runs_ns = ", ".join(f"{x:.1f}" for x in pp["runs_one_way_ns"])
        L.append(f"**Physical floor:** one cache line, CPU {pp['cpus'][0]} ↔ CPU {pp['cpus'][1]} (the lcores "
                 f"of these runs), one way: **{pp['one_way_ns']:.1f} ns** = {pp['one_way_ns'] / 1000:.3f} µs "
                 f"(median of {pp['runs']} runs of {pp['round_trips']} round trips: {runs_ns} ns; "
                 "`bench/pingpong.c`, measured after the loads). A forwarded packet crosses between the "
                 "lcores twice (RX → worker → TX); each crossing moves the queue's control line(s) and "
                 "the lines of the burst's slots, so 2 × this figure is a floor under any RX→TX latency.\n")
    else:
        L.append(f"**Physical floor:** not measured ({pp.get('error', 'no pingpong')}).\n")
    return L


def report_cores(meta, cl) -> list[str]:
    L = ["## Cores for line rate, on paper\n"]
    if "error" in cl:
        return L + [f"Not computed: {cl['error']}.\n"]
    L.append(f"TSC {cl['tsc_hz'] / 1e9:.3f} GHz ({meta.get('tsc_hz_from', '?')}). Busy TSC cycles per packet "
             "of each role, medians of this run, from the lcore that holds only that role:\n")
    L.append("| backend | RX (layout rx \\| worker+tx, lcore 0) | worker, --worker-cycles "
             + " / ".join(str(w) for w in WORKER_COSTS) + " (default layout, lcore 1) "
             "| TX (layout rx+worker \\| tx, lcore 1) |")
    L.append("|---|---:|---:|---:|")
    for cn, b in cl["backends"].items():
        c = b["cycles_per_packet"]
        L.append(f"| {cn} | {fmt(c['rx']['cycles_per_packet'], 0)} | "
                 + " / ".join(fmt(c[f'worker {w}']['cycles_per_packet'], 0) for w in WORKER_COSTS)
                 + f" | {fmt(c['tx']['cycles_per_packet'], 0)} |")
    L.append("")
    ws = " / ".join(str(w) for w in WORKER_COSTS)
    if all(b["rows"][0]["rx"] is None or b["rows"][0]["tx"] is None for b in cl["backends"].values()):
        return L + ["No lcore counts: the layout rows that isolate RX and TX are not in this run (--quick has "
                    "no layout or worker-cycles rows).\n"]
    L.append(f"lcores per role = ⌈rate × cycles per packet ÷ TSC Hz⌉; worker columns at --worker-cycles {ws}:\n")
    L.append(f"| line rate, 64 B | Mpps | backend | RX lcores | worker lcores ({ws}) | TX lcores | total ({ws}) |")
    L.append("|---|---:|---|---:|---:|---:|---:|")
    for i, (rate, name) in enumerate(LINE_RATES):
        for cn, b in cl["backends"].items():
            r = b["rows"][i]
            L.append(f"| {name} | {rate} | {cn} | {r['rx'] if r['rx'] is not None else '–'} | "
                     + " / ".join("–" if r["worker"][str(w)] is None else str(r["worker"][str(w)])
                                  for w in WORKER_COSTS)
                     + f" | {r['tx'] if r['tx'] is not None else '–'} | "
                     + " / ".join("–" if r["total"][str(w)] is None else str(r["total"][str(w)])
                                  for w in WORKER_COSTS) + " |")
    L.append("")
    L.append("Assumptions: (1) cycles per packet stay flat as lcores are added — no shared line, lock or "
             "memory-bandwidth limit grows with the lcore count; (2) the hand-off is per lcore pair, sharded "
             "(one single-producer queue per producer→consumer pair, as `--topology sharded`), so adding lcores "
             "adds queues, not contention, and RSS spreads the flows evenly over the RX lcores' queues; "
             "(3) the RX and TX costs were measured on a 2-vCPU VM with net_null ports (no descriptors, no DMA, "
             "no PCIe): a real NIC's PMD costs differ, and the RX and TX figures include the hand-offs and the "
             "mbuf traffic between the two lcores' mempool caches of those layouts; (4) a busy cycle is a cycle "
             "of a loop pass that moved packets, so an lcore below 100 % busy is counted at its measured cost "
             "with its actual (smaller) bursts; (5) the main lcore's own work (stats) is not counted; "
             "(6) the worker cost includes the simulated `--worker-cycles` busy loop. "
             "`–`: the row that isolates that role is not in this run (--quick has no layout or "
             "worker-cycles rows).\n")
    return L


def evaluate_targets(cfgs, runs, summ, meta, an) -> list[dict]:
    T = []
    pts = throughput_points(cfgs)
    # 1. tq >= ring throughput, every row
    miss, n = [], 0
    for traffic, pt in pts:
        r = paired_ratio(runs, f"{traffic}/{pt}/tq", f"{traffic}/{pt}/ring")
        if r is None:
            continue
        n += 1
        if r < 1.0:
            miss.append(f"{traffic}/{pt} {r:.3f} ({(1 - r) * 100:.1f}% below)")
    T.append({"name": "tq throughput >= ring in every row", "rows": n, "misses": miss,
              "verdict": "MET" if n and not miss else ("MISSED" if miss else "n/a"),
              "detail": (f"{n - len(miss)}/{n} rows; below: " + "; ".join(miss)) if miss else f"{n}/{n} rows"})
    # 2. tq p99 <= ring p99, every row
    miss, n = [], 0
    for traffic, pt in pts:
        a = summ.get(f"{traffic}/{pt}/tq", {}).get("latency_ns")
        b = summ.get(f"{traffic}/{pt}/ring", {}).get("latency_ns")
        if not a or not b:
            continue
        n += 1
        if a["p99"] > b["p99"]:
            miss.append(f"{traffic}/{pt} {a['p99'] / 1000:.1f} vs {b['p99'] / 1000:.1f} µs (×{a['p99'] / b['p99']:.2f})")
    T.append({"name": "tq p99 <= ring p99 in every row", "rows": n, "misses": miss,
              "verdict": "MET" if n and not miss else ("MISSED" if miss else "n/a"),
              "detail": (f"{n - len(miss)}/{n} rows; above: " + "; ".join(miss)) if miss else f"{n}/{n} rows"})
    # 3. tq (2 lcores) >= testpmd mac (1 fwd lcore), net_null, huge pages
    huge = "--in-memory" in meta["mem"]
    r_lat = paired_ratio(runs, "null/default/tq", "null/default/testpmd-mac")
    tq_nolat = summ.get("null/no --latency/tq", {}).get("tx_mpps")
    mac = summ.get("null/default/testpmd-mac", {}).get("tx_mpps")
    r_nolat = tq_nolat / mac if tq_nolat and mac else None
    if r_lat is None:
        v, d = "n/a", "no figures"
    else:
        v = "MET" if max(r_lat, r_nolat or 0) >= 1.0 else "MISSED"
        d = (f"tq/testpmd-mac = {r_lat:.3f} with --latency"
             + (f", {r_nolat:.3f} without (ratio of medians)" if r_nolat else "")
             + ("" if huge else "; measured WITHOUT huge pages, the target asks for huge pages"))
    T.append({"name": "tqfwd (2 lcores) >= 1.0x testpmd mac (1 forwarding lcore), net_null, huge pages",
              "ratio_with_latency": r_lat, "ratio_without_latency": r_nolat, "huge_pages": huge,
              "verdict": v, "detail": d})
    # 4. zero drops with --on-full wait
    bad = [f"{k} {s['drops_all_rounds']}" for k, s in summ.items()
           if s["config"]["on_full"] == "wait" and s.get("drops_total_all_rounds")]
    n = sum(1 for s in summ.values() if s["config"]["on_full"] == "wait" and "tx_mpps" in s)
    T.append({"name": "zero drops with --on-full wait", "misses": bad,
              "verdict": "MET" if not bad else "MISSED",
              "detail": f"{n} configurations, {'no drops' if not bad else 'drops in: ' + '; '.join(bad)}"})
    # 5. latency cost < 5 %
    parts, worst = [], 0.0
    for traffic in ("null", "pcap"):
        for cn in ("tq", "ring"):
            r = paired_ratio(runs, f"{traffic}/default/{cn}", f"{traffic}/no --latency/{cn}")
            if r is None:
                continue
            cost = (1 - r) * 100
            worst = max(worst, cost)
            parts.append(f"{cn} {traffic}: with/without = {r:.3f} (cost {cost:+.1f}%)")
    T.append({"name": "--latency --latency-sample 16 costs < 5 % throughput", "worst_cost_pct": worst,
              "verdict": ("MET" if worst < 5 else "MISSED") if parts else "n/a", "detail": "; ".join(parts)})
    # 6. end checks
    bad = [k for k, s in summ.items() if s["config"]["contender"] in TQFWD and
           (s.get("mbufs_in_use_max", 0) != 0 or not s.get("conservation_ok_all", True))]
    T.append({"name": "tqfwd end checks (conservation, 0 mbufs in use at exit)",
              "verdict": "MET" if not bad else "MISSED", "detail": "all runs" if not bad else ", ".join(bad)})
    # 7. overload: --on-full drop >= 0.95 x wait, per backend
    for cn in ("tq", "ring"):
        o = an["overload"].get(cn)
        name = f"{cn}: --on-full drop >= 0.95 x --on-full wait forwarded Mpps (null, default point)"
        if not o or o["paired_ratio"] is None:
            T.append({"name": name, "verdict": "n/a", "detail": "no figures"})
            continue
        both = [o["ratio_of_medians"], o["paired_ratio"]]
        mf = o["drops_fraction_of_rx_median"]
        T.append({"name": name, "ratio_of_medians": o["ratio_of_medians"], "paired_ratio": o["paired_ratio"],
                  "verdict": "MET" if min(both) >= 0.95 else "MISSED",
                  "detail": f"drop {o['drop_mpps']:.2f} vs wait {o['wait_mpps']:.2f} Mpps: ratio of medians "
                            f"{o['ratio_of_medians']:.3f}, median of {len(o['paired_ratios'])} paired ratios "
                            f"{o['paired_ratio']:.3f} (MET needs both >= 0.95); drops after RX "
                            f"{'–' if mf is None else f'{mf * 100:.1f}'} % of rx packets (median run)"})
    # 8-11. latency below saturation
    lrows = [c for c in cfgs if c.rx_rate is not None]
    loads = points_in_order(lrows)
    skipped = meta.get("loads", {}).get("skipped")

    def lat(traffic, pt, cn, k):
        l = summ.get(f"{traffic}/{pt}/{cn}", {}).get("latency_ns")
        return l[k] if l else None

    def verdict(parts, miss):
        if not parts:
            return "n/a"
        return "MISSED" if miss else "MET"
    na = f"no load rows ({skipped})" if skipped else "no load rows"
    bad = [f"{c.point} {c.contender} {summ[c.key]['drops_all_rounds']}" for c in lrows
           if summ[c.key].get("drops_total_all_rounds")]
    n = sum(1 for c in lrows if "tx_mpps" in summ[c.key])
    T.append({"name": "no drops at " + "/".join(p.split()[1] for _, p in loads) + " % load" if loads
              else "no drops below saturation", "misses": bad,
              "verdict": "n/a" if not n else ("MET" if not bad else "MISSED"),
              "detail": na if not n else f"{n} rows, {'no drops' if not bad else 'drops in: ' + '; '.join(bad)}"})
    parts, miss = [], []
    for traffic, pt in loads:
        for cn in ("tq", "ring"):
            v = lat(traffic, pt, cn, "p99")
            if v is None:
                continue
            parts.append(f"{pt} {cn} {v / 1000:.1f}")
            if v >= 100_000:
                miss.append(f"{pt} {cn}")
    T.append({"name": "p99 < 100 µs below saturation", "misses": miss, "verdict": verdict(parts, miss),
              "detail": ("; ".join(parts) + " µs" + (f" (missed: {', '.join(miss)})" if miss else ""))
              if parts else na})
    for k, factor, label in (("p50", 1.0, "tq p50 <= ring p50"), ("p99", 0.8, "tq p99 <= 0.8 x ring p99")):
        parts, miss = [], []
        for traffic, pt in loads:
            a, b = lat(traffic, pt, "tq", k), lat(traffic, pt, "ring", k)
            if a is None or b is None or not b:
                continue
            parts.append(f"{pt} {a / 1000:.1f} vs {b / 1000:.1f} µs (×{a / b:.2f})")
            if a > factor * b:
                miss.append(pt)
        T.append({"name": f"{label} below saturation", "misses": miss, "verdict": verdict(parts, miss),
                  "detail": ("; ".join(parts) + (f" (missed at {', '.join(miss)})" if miss else "")) if parts else na})
    return T


# ---------------------------------------------------------------- SVG

COLORS = {"tq": "#1f77b4", "ring": "#ff7f0e", "testpmd-mac": "#2ca02c", "testpmd-io": "#7f7f7f"}


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def bar_panel(x0, y0, w, h, title, groups, series, values, ylabel, log=False, unit_fmt="{:.1f}"):
    """groups: x labels; series: names; values[g][s] -> float|None."""
    o = [f'<text x="{x0 + w / 2}" y="{y0 - 12}" text-anchor="middle" font-size="14" font-weight="bold">{esc(title)}</text>']
    allv = [v for g in values for v in g if v]
    if not allv:
        return o + [f'<text x="{x0 + w / 2}" y="{y0 + h / 2}" text-anchor="middle">no data</text>']
    if log:
        lo = 10 ** math.floor(math.log10(min(allv)))
        hi = 10 ** math.ceil(math.log10(max(allv)))
        if hi <= lo:
            hi = lo * 10

        def Y(v):
            return y0 + h - h * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        ticks = [10 ** e for e in range(int(math.log10(lo)), int(math.log10(hi)) + 1)]
    else:
        top = max(allv) * 1.12
        step = 10 ** math.floor(math.log10(top / 5))
        for m in (1, 2, 5, 10):
            if top / (step * m) <= 7:
                step *= m
                break
        lo, hi = 0.0, math.ceil(top / step) * step

        def Y(v):
            return y0 + h - h * (v - lo) / (hi - lo)
        ticks = [i * step for i in range(int(hi / step) + 1)]
    for t in ticks:
        y = Y(t)
        o.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#ddd"/>')
        lab = f"{t:g}"
        o.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{lab}</text>')
    o.append(f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0 + h}" stroke="#333"/>')
    o.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + h}" stroke="#333"/>')
    o.append(f'<text transform="translate({x0 - 42},{y0 + h / 2}) rotate(-90)" text-anchor="middle" '
             f'font-size="12">{esc(ylabel)}</text>')
    gw = w / len(groups)
    bw = gw * 0.8 / len(series)
    base = y0 + h
    for gi, gname in enumerate(groups):
        gx = x0 + gi * gw + gw * 0.1
        for si, sname in enumerate(series):
            v = values[gi][si]
            if not v:
                continue
            y = Y(v)
            x = gx + si * bw
            o.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw - 2:.1f}" height="{base - y:.1f}" '
                     f'fill="{COLORS.get(sname, "#999")}"><title>{esc(sname)} {esc(gname)}: '
                     f'{unit_fmt.format(v)}</title></rect>')
            o.append(f'<text x="{x + (bw - 2) / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                     f'font-size="9">{unit_fmt.format(v)}</text>')
        for li, part in enumerate(gname.split("\n")):
            o.append(f'<text x="{x0 + gi * gw + gw / 2:.1f}" y="{base + 16 + 13 * li}" text-anchor="middle" '
                     f'font-size="11">{esc(part)}</text>')
    return o


def svg_chart(meta, cfgs, summ) -> str:
    W, H = 1100, 480
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         f'font-family="sans-serif">', f'<rect width="{W}" height="{H}" fill="white"/>']
    # panel 1: throughput by contender and burst
    groups, vals = [], []
    for traffic, pt in [("null", "burst 8"), ("null", "default"), ("null", "burst 64"), ("pcap", "default")]:
        if not any(f"{traffic}/{pt}/{c}" in summ for c in CONTENDERS):
            continue
        b = pt.split()[-1] if pt.startswith("burst") else "32"
        groups.append(f"{traffic}\nburst {b}")
        vals.append([summ.get(f"{traffic}/{pt}/{c}", {}).get("tx_mpps") for c in CONTENDERS])
    o += bar_panel(70, 60, 500, 320, "Forwarded Mpps (median), by contender and burst", groups, CONTENDERS,
                   vals, "Mpps (both ports)")
    # panel 2: latency percentiles by backend, default point
    pcts = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9")]
    groups2, vals2, series2 = [], [], ["tq", "ring"]
    for traffic in ("null", "pcap"):
        for k, lab in pcts:
            v = [summ.get(f"{traffic}/default/{c}", {}).get("latency_ns", {}).get(k) for c in series2]
            if any(v):
                groups2.append(f"{lab}\n{traffic}")
                vals2.append([us(x) if x else None for x in v])
    o += bar_panel(660, 60, 420, 320, "tqfwd RX→TX latency µs, default point (log scale)", groups2, series2, vals2,
                   "µs", log=True, unit_fmt="{:.0f}")
    # legend
    lx = 70
    for c in CONTENDERS:
        o.append(f'<rect x="{lx}" y="{H - 48}" width="12" height="12" fill="{COLORS[c]}"/>')
        o.append(f'<text x="{lx + 16}" y="{H - 38}" font-size="12">{c}</text>')
        lx += 120
    o.append(f'<text x="70" y="{H - 14}" font-size="11" fill="#555">{esc(meta["stamp"])}: {meta["rounds"]} rounds × '
             f'{meta["seconds"]} s, {esc(meta["mem_note"])}; load avg before {esc(meta["quiet_check"]["loadavg"])}; '
             f'tqfwd with --latency --latency-sample {LATENCY_SAMPLE}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


# ---------------------------------------------------------------- perf


def run_perf(runner: Runner, log) -> dict:
    res = {}
    if not shutil.which("perf"):
        return {"error": {"top": ["perf not found"]}}
    for cn in ("tq", "ring"):
        c = Cfg(cn, "null", "default")
        data = os.path.join(runner.tmp, f"perf-{cn}.data")
        cmd = runner.tqfwd_cmd(c, 3, os.path.join(runner.tmp, "perf.json"), stats_interval=0)
        rec = ["perf", "record", "-F", "4999", "-g", "-o", data, "--", *cmd]
        log(f"perf: {' '.join(rec)}")
        p = subprocess.run(rec, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        ent = {"record_cmd": " ".join(rec), "rc": p.returncode}
        if p.returncode == 0 and os.path.exists(data):
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort",
                                  "comm,dso,symbol", "--percent-limit", "1", "-g", "none"],
                                 capture_output=True, text=True, timeout=120)
            top = [l.rstrip(" -") for l in rep.stdout.splitlines() if l.strip() and not l.startswith("#")][:25]
            ent["top"] = top
            # share of samples per thread (main = lcore 0, rte-worker-1 = lcore 1)
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "comm",
                                  "-g", "none"], capture_output=True, text=True, timeout=120)
            ent["threads"] = [l.strip() for l in rep.stdout.splitlines() if l.strip() and not l.startswith("#")]
            # the stages are inlined into the lcore loop: source lines say where
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort",
                                  "comm,symbol,srcline", "--percent-limit", "1", "-g", "none"],
                                 capture_output=True, text=True, timeout=300)
            ent["top_srcline"] = [l.rstrip(" -") for l in rep.stdout.splitlines()
                                  if l.strip() and not l.startswith("#")][:25]
        else:
            ent["top"] = ["perf record failed: " + (p.stderr.strip().splitlines() or [""])[-1]]
        st = ["perf", "stat", "-e", "task-clock,context-switches,cpu-migrations,cycles,instructions", "--",
              *runner.tqfwd_cmd(c, 3, os.path.join(runner.tmp, "perf.json"), stats_interval=0)]
        p = subprocess.run(st, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        lines = p.stderr.splitlines()
        i = next((j for j, l in enumerate(lines) if "Performance counter stats" in l), None)
        ent["stat_cmd"] = " ".join(st)
        ent["stat"] = [l for l in lines[i:] if l.strip()] if i is not None else lines[-8:]
        summ = [l.strip() for l in p.stdout.splitlines() if "forwarded for" in l or "cycles/packet" in l]
        ent["summary"] = summ
        res[cn] = ent
        for f in (data, data + ".old"):
            if os.path.exists(f):
                os.unlink(f)
    return res


# ---------------------------------------------------------------- floor


def run_pingpong(path: str, log) -> dict:
    """bench/pingpong.c on CPUs 0 and 1: one cache line's one-way trip."""
    cmd = [path, "2000000", "5", "0", "1"]
    log(f"physical floor: {' '.join(cmd)}")
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return {"cmd": " ".join(cmd), "error": "timed out after 180 s"}
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"cmd": " ".join(cmd), "error": f"exit {p.returncode}: {p.stderr.strip()[-200:]}"}
    res["cmd"] = " ".join(cmd)
    log(f"  one way {res['one_way_ns']:.1f} ns (runs {res['runs_one_way_ns']})")
    return res


# ---------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tqfwd", required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--mem", required=True)
    ap.add_argument("--mem-note", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--wait-quiet", type=float, default=0)
    ap.add_argument("--results", default="bench/results")
    ap.add_argument("--stamp", default=datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S"))
    ap.add_argument("--command", default="bench/pipeline.sh")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--perf", action="store_true")
    ap.add_argument("--perf-only", action="store_true")
    ap.add_argument("--pingpong", help="the compiled bench/pingpong.c (the physical floor); none: not measured")
    ap.add_argument("--render-svg", metavar="JSON", help="only redraw the SVG of a results JSON (next to it)")
    if "--render-svg" in sys.argv:
        i = sys.argv.index("--render-svg")
        path = sys.argv[i + 1]
        with open(path) as f:
            doc = json.load(f)
        cfgs = [Cfg(**s["config"]) for s in doc["summary"].values()]
        out = path[:-len(".json")] + ".svg"
        with open(out, "w") as f:
            f.write(svg_chart(doc["meta"], cfgs, doc["summary"]))
        print(f"wrote {out}")
        return 0
    a = ap.parse_args()

    def log(msg):
        print(f"pipeline: {msg}", file=sys.stderr, flush=True)

    cfgs = build_configs(a.quick)
    runner = Runner(a)
    if a.perf_only:
        q = wait_quiet(a.wait_quiet, log) if a.wait_quiet > 0 else {"loadavg": loadavg(), "quiet": None}
        pf = run_perf(runner, log)
        os.makedirs(a.results, exist_ok=True)
        path = os.path.join(a.results, f"pipeline-{a.stamp}-perf.txt")
        with open(path, "w") as f:
            f.write(f"# {a.command}; load avg before {q['loadavg']}, quiet={q['quiet']}; EAL memory: {a.mem_note}\n")
            for name, ent in pf.items():
                f.write(f"== {name}: {ent.get('record_cmd', '')}\n")
                f.write("samples per thread: " + "; ".join(ent.get("threads", [])) + "\n")
                f.write("\n".join(ent.get("top", [])) + "\n")
                f.write(f"== {name}: by source line\n" + "\n".join(ent.get("top_srcline", [])) + "\n")
                f.write(f"== {name}: {ent.get('stat_cmd', '')}\n")
                f.write("\n".join(ent.get("summary", []) + ent.get("stat", [])) + "\n\n")
        sys.stdout.write(open(path).read())
        log(f"wrote {path}")
        return 0
    plan = round_plan(cfgs, a.quick)
    fracs = LOADS_QUICK if a.quick else LOADS
    load_rounds = 1 if a.quick else a.rounds
    est = a.rounds * sum((a.seconds + 1.2) if c.contender in TQFWD else (a.seconds + 3.5) for c in plan)
    est += load_rounds * len(fracs) * 2 * (a.seconds + 1.2)
    log(f"{len(cfgs)} configurations, {len(plan)} runs per round × {a.rounds} rounds, then "
        f"{len(fracs)} loads × tq, ring × {load_rounds} rounds; about {est / 60:.1f} min of runs")

    quiet = wait_quiet(a.wait_quiet, log) if a.wait_quiet > 0 else \
        {"quiet": None, "cpu_busy_pct": round(cpu_busy(2.0), 1), "loadavg": loadavg(),
         "foreign": foreign_processes(), "waited_s": 0}
    if quiet["quiet"] is False or quiet["foreign"] or quiet["cpu_busy_pct"] >= 15:
        log(f"WARNING: machine not quiet (CPUs {quiet['cpu_busy_pct']}% busy, load {quiet['loadavg']}, "
            f"{len(quiet['foreign'])} compiler/DPDK processes): figures will be noisy")
    else:
        log(f"machine quiet: CPUs {quiet['cpu_busy_pct']}% busy, load avg {quiet['loadavg']}")

    ver = subprocess.run([a.tqfwd, "--version"], capture_output=True, text=True).stdout.strip()
    git = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    with open(a.tqfwd, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()[:16]
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass

    runs: dict[str, list[dict]] = {c.key: [] for c in cfgs}
    contended_runs = 0
    waited_total = 0.0

    def run_one(c: Cfg, rnd: int):
        nonlocal contended_runs, waited_total
        foreign = foreign_processes()
        if foreign and a.wait_quiet > 0:
            # another engineer's build/test/benchmark: give it 30 s to end
            t0 = time.time()
            while foreign and time.time() - t0 < 30:
                time.sleep(2)
                foreign = foreign_processes()
            waited_total += time.time() - t0
        r = runner.run(c)
        r["round"] = rnd + 1
        r["loadavg_after"] = loadavg()
        if foreign:
            r["foreign_processes"] = foreign
            contended_runs += 1
        runs[c.key].append(r)
        lat = r.get("latency_ns")
        log(f"  {c.key:40s} rx {fmt(r.get('rx_mpps'), 3):>7} tx {fmt(r.get('tx_mpps'), 3):>7} Mpps"
            + (f"  p99 {lat['p99'] / 1000:.1f} µs" if lat else "")
            + (f"  drops {r.get('drops_total')}" if r.get("drops_total") else "")
            + (f"  ERROR {r['error']}" if "error" in r else ""))

    t_start = time.time()
    for rnd in range(a.rounds):
        if a.wait_quiet > 0 and rnd > 0:
            q = wait_quiet(min(a.wait_quiet, 120), log)
            waited_total += q["waited_s"]
        log(f"round {rnd + 1}/{a.rounds} (load avg {loadavg()})")
        for c in plan:
            run_one(c, rnd)

    # Latency below saturation: tq and ring at fractions of the capacity
    # measured above, alternated, the first of each pair swapped every round.
    cap = {cn: med([r["tx_mpps"] for r in runs[f"null/default/{cn}"] if "error" not in r]) for cn in ("tq", "ring")}
    loads = {"fractions": list(fracs), "rounds": load_rounds, "on_full": LOAD_ON_FULL,
             "capacity_by_backend_mpps": cap, "capacity_mpps": None, "skipped": None}
    if "--rx-rate" not in subprocess.run([a.tqfwd, "--help"], capture_output=True, text=True).stdout:
        loads["skipped"] = "this tqfwd has no --rx-rate option"
    elif None in cap.values():
        loads["skipped"] = "no null default-point figure for tq or ring"
    else:
        capacity = loads["capacity_mpps"] = min(cap.values())
        lcfgs = [Cfg(cn, "null", f"load {f * 100:.0f} %", on_full=LOAD_ON_FULL, rx_rate=round(f * capacity, 3))
                 for f in fracs for cn in ("tq", "ring")]
        cfgs += lcfgs
        runs.update({c.key: [] for c in lcfgs})
        for rnd in range(load_rounds):
            log(f"loads, round {rnd + 1}/{load_rounds}: capacity {capacity:.2f} Mpps (load avg {loadavg()})")
            for i in range(0, len(lcfgs), 2):
                pair = lcfgs[i:i + 2]
                for c in (pair if rnd % 2 == 0 else pair[::-1]):
                    run_one(c, rnd)
    if loads["skipped"]:
        log(f"latency below saturation skipped: {loads['skipped']}")
    pingpong = run_pingpong(a.pingpong, log) if a.pingpong else {"error": "bench/pingpong.c not compiled"}
    elapsed = time.time() - t_start
    load_after = loadavg()

    meta = {
        "stamp": a.stamp, "command": a.command, "mem": a.mem, "mem_note": a.mem_note,
        "rounds": a.rounds, "seconds": a.seconds, "quick": a.quick, "elapsed_s": round(elapsed, 1),
        "quiet_check": quiet, "load_after": load_after, "runs_with_foreign_processes": contended_runs,
        "waited_for_quiet_during_run_s": round(waited_total, 1),
        "tqfwd_version": ver, "git": git, "tqfwd_sha256_16": sha,
        "machine": {"cpu": cpu, "nproc": os.cpu_count(), "kernel": platform.release()},
        "latency_sample": LATENCY_SAMPLE,
        "pcap": "tqfwd-gen --flows 1024 --packets 8192 --size 64 (UDP, 60 B captured)",
        "loads": loads, "pingpong": pingpong,
    }
    hz = med([r.get("tsc_hz") for rs in runs.values() for r in rs])
    if hz:
        meta["tsc_hz"], meta["tsc_hz_from"] = round(hz), "tqfwd's start-up log, rte_get_tsc_hz(), median over runs"
    elif pingpong.get("tsc_hz"):
        meta["tsc_hz"], meta["tsc_hz_from"] = pingpong["tsc_hz"], "bench/pingpong.c, rdtsc over a 100 ms sleep"
    else:
        meta["tsc_hz"], meta["tsc_hz_from"] = None, "not measured"
    if a.perf:
        log("perf record / perf stat: tq and ring, net_null, default point, 3 s each")
        meta["perf"] = run_perf(runner, log)
    summ = summarize(cfgs, runs)
    an = {"overload": overload(runs, summ), "cores_for_line_rate": cores_for_line_rate(summ, meta["tsc_hz"])}
    targets = evaluate_targets(cfgs, runs, summ, meta, an)
    md = report(meta, cfgs, runs, summ, targets, an)
    sys.stdout.write(md)

    os.makedirs(a.results, exist_ok=True)
    # --quick writes pipeline-<date>-quick.* and leaves pipeline-latest.* (the
    # last full run, linked from bench/README.md) alone.
    base = os.path.join(a.results, f"pipeline-{a.stamp}" + ("-quick" if a.quick else ""))
    latest = not a.quick
    doc = {"schema": "tqfwd-pipeline-bench/1", "meta": meta, "targets": targets,
           "summary": summ, "runs": runs, **an,
           "ratios": {f"{t}/{p}": {cn: paired_ratio(runs, f"{t}/{p}/tq", f"{t}/{p}/{cn}")
                                   for cn in CONTENDERS[1:]} for t, p in points_in_order(cfgs)}}
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    if latest:
        shutil.copyfile(base + ".json", os.path.join(a.results, "pipeline-latest.json"))
    with open(base + ".md", "w") as f:
        f.write(md)
    svg = svg_chart(meta, cfgs, summ)
    with open(base + ".svg", "w") as f:
        f.write(svg)
    if latest:
        shutil.copyfile(base + ".svg", os.path.join(a.results, "pipeline-latest.svg"))
    if meta.get("perf"):
        with open(base + "-perf.txt", "w") as f:
            for name, pf in meta["perf"].items():
                f.write(f"== {name}: {pf.get('record_cmd', '')}\n")
                f.write("samples per thread: " + "; ".join(pf.get("threads", [])) + "\n")
                f.write("\n".join(pf.get("top", [])) + "\n")
                f.write(f"== {name}: by source line\n" + "\n".join(pf.get("top_srcline", [])) + "\n")
                f.write(f"== {name}: {pf.get('stat_cmd', '')}\n")
                f.write("\n".join(pf.get("summary", []) + pf.get("stat", [])) + "\n\n")
    log(f"wrote {base}.json, {base}.md, {base}.svg"
        + (", pipeline-latest.json, pipeline-latest.svg" if latest else " (--quick: pipeline-latest.* untouched)")
        + " "
        f"({elapsed:.0f} s of runs)")
    failed = sum(1 for rs in runs.values() for r in rs if "error" in r)
    if failed:
        log(f"{failed} runs failed (see the report)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
