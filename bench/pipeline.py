#!/usr/bin/env python3
"""Driver of bench/pipeline.sh: plans and runs the contenders, parses their
output, and hands the runs to the analysis and the report writers.

Called by bench/pipeline.sh (which builds, writes the pcap, picks the EAL
memory mode and the output directory); see that script's --help and
bench/README.md. Python 3.11 standard library only. The other files:

  pipeline_model.py     configurations (Cfg), constants, medians and ratios
  pipeline_analysis.py  summary per configuration, derived figures, targets
  report_md.py          the markdown report (stdout, .md) and perf text
  report_json.py        the results JSON (.json)
  report_svg.py         the chart (.svg), drawn by hand
  pipeline_sweep.py     the many-core sweep (pipeline.sh --lcores LIST)
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
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

from pipeline_analysis import (by_placement, configurations_ran, cores_for_line_rate, evaluate_targets, overload,
                               summarize)
from pipeline_model import CONTENDERS, LATENCY_SAMPLE, PLACES, TQFWD, Cfg, med, placement
from report_json import results_doc, write_json
from report_md import fmt, perf_text, report
from report_svg import render_file, svg_chart

PCAP_MBUFS = 32768
# Latency below saturation: offered loads as fractions of the capacity
# (min of tq's and ring's null default-point medians of the same run), and
# the --on-full mode of those runs (drop: any queue overflow shows as drops).
LOADS = (0.10, 0.25, 0.50)
LOADS_QUICK = (0.50,)
LOAD_ON_FULL = "drop"

# 2-lcore layouts: EAL lcore list and tqfwd role options.
LAYOUTS = {
    "default": ("0-1", [], "rx+tx | worker (default)"),
    "rx|worker+tx": ("0-1", ["--rx-lcores", "0", "--worker-lcores", "1", "--tx-lcores", "1"], "rx | worker+tx"),
    "rx+worker|tx": ("0-1", ["--rx-lcores", "0", "--worker-lcores", "0", "--tx-lcores", "1"], "rx+worker | tx"),
    "all|all": ("0-1", ["--rx-lcores", "0-1", "--worker-lcores", "0-1", "--tx-lcores", "0-1"],
                "rx+worker+tx on both (2 RX queues per port)"),
    "one-lcore": ("0", [], "all on one lcore (-l 0)"),
}

# RX queues per port a layout needs (one per RX lcore).
LAYOUT_RX_QUEUES = {"all|all": 2}


def round_plan(cfgs: list[Cfg], quick: bool) -> list[Cfg]:
    """One round's run order. Full mode runs the default point, its
    --on-full drop and no --latency twins (net_null; the default and no
    --latency points on net_pcap too) and the layout rows a second time at
    the end of the round, in reverse (A B C D ... D C B A): the headline
    figures, the cross-point ratios (drop ÷ wait, the --latency cost, where
    a run's host draw moves Mpps by 10-20 % and eight pairs read a 4 %
    cost as 2 % or 7 %), and the rows where tq and ring are within a few
    per cent of each other (the ring's runs there fall into two modes a
    few per cent apart, so six pairs leave the verdict to a few draws), get
    twice the samples, and a drift during the round cancels out of their
    ratios."""
    if quick:
        return list(cfgs)
    again = [c for c in cfgs
             if (c.traffic == "null" and c.point in ("default", "on-full drop", "no --latency"))
             or (c.traffic == "pcap" and c.point in ("default", "no --latency"))
             or c.point.startswith("layout ")]
    return list(cfgs) + list(reversed(again))


# --match-placement: the contenders whose host placements a group's runs
# must share (the pair the headline ratios compare); ring-copy rides along.
MATCHED = ("tq", "ring")
MATCH_PLACEMENT = 3  # default number of redraws per group
# The points whose runs other points' runs pair with (overload: on-full drop
# against default; the --latency cost: default against no --latency, both
# traffics): their groups are held to one placement, near (the likelier one
# for both runs: far is rarely drawn twice), so those cross-point pairs also
# compare runs of one placement.
LINKED = ("default", "on-full drop", "no --latency")
LINKED_PLACEMENT = "near"


def plan_groups(plan: list[Cfg]) -> list[list[Cfg]]:
    """A round's plan cut into groups: consecutive runs of one (traffic,
    point), i.e. one point's contenders run back to back (the second,
    reversed pass of the full mode forms groups of its own). A key already
    in the group starts a new one, so a group holds each key at most once."""
    groups: list[list[Cfg]] = []
    for c in plan:
        g = groups[-1] if groups else None
        if g and (g[0].traffic, g[0].point) == (c.traffic, c.point) and c not in g:
            g.append(c)
        else:
            groups.append([c])
    return groups


def group_placements(done: list[tuple[Cfg, dict]]) -> list[str]:
    """The host placements of a group's tq and ring runs that have one
    (testpmd and one-lcore runs have none: n/a; a run that failed before
    its --stats-json: no field)."""
    return [r["placement"] for c, r in done if c.contender in MATCHED and r.get("placement") not in (None, "n/a")]


def placement_matched(done: list[tuple[Cfg, dict]], want: str | None = None) -> bool:
    """True when the group's tq and ring runs all drew the same placement,
    near or far (mixed and ? never match); a group with fewer than two
    such runs has nothing to compare and is matched. With `want` ("near"
    or "far"), that placement must also be `want`: every such run drew it
    (a lone one too: its pairs with other points' runs need it; a group
    without any is matched)."""
    ps = group_placements(done)
    if want is not None:
        return all(p == want for p in ps)
    return len(ps) < 2 or (len(set(ps)) == 1 and ps[0] in PLACES)


def linked_want(group: list[Cfg]) -> str | None:
    """The placement a group of a round's plan is held to: LINKED_PLACEMENT
    for the points in LINKED, else none (its tq and ring match each other)."""
    return LINKED_PLACEMENT if group[0].point in LINKED and group[0].rx_rate is None else None


def build_configs(quick: bool, only=CONTENDERS) -> list[Cfg]:
    """Ordered so that the contenders of one point run back to back; only
    the contenders in `only` (--contenders)."""
    cfgs: list[Cfg] = []

    def point(traffic: str, label: str, who=CONTENDERS, **kw):
        for c in who:
            if c in only:
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
    for lay in ("rx|worker+tx", "rx+worker|tx", "one-lcore"):
        point("null", f"layout {lay}", who=tr, layout=lay)
    # Two workers, so the spread of flows over them decides the row: net_null
    # frames carry no flows (each keeps the MACs of the port it last left by,
    # so the spread settles at random, and both backends drew ~27 or ~37 Mpps
    # run by run); the pcap's 1024 flows spread alike every run.
    point("pcap", "layout all|all", who=tr, layout="all|all")
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
            # a stopped process (SIGSTOP: paused for a benchmark) takes no CPU
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                    continue
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

STATS_LINE = re.compile(r"^\[\s*([\d.]+)s\] rx\s+([\d.]+) Mpps\s+tx\s+([\d.]+) Mpps", re.M)


def run_tqfwd_once(cmd: list[str], jpath: str, timeout: float) -> tuple[dict, str, dict | None, list[tuple]]:
    """Runs one tqfwd command line that writes its --stats-json to `jpath`.
    Returns the run's record (cmd, rc, wall_s), its output, the JSON (None
    when it wrote none; the file is removed once read) and its stats lines
    as (seconds, rx Mpps, tx Mpps)."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=timeout)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), -9
    r = {"cmd": " ".join(cmd), "rc": rc, "wall_s": round(time.time() - t0, 2)}
    lines = [(float(m[1]), float(m[2]), float(m[3])) for m in STATS_LINE.finditer(out)]
    rep = None
    try:
        with open(jpath) as f:
            rep = json.load(f)
        os.unlink(jpath)
    except (OSError, ValueError):
        pass
    return r, out, rep, lines


def wait_for_others(foreign: list[str], max_wait: float = 30) -> tuple[list[str], float]:
    """Gives someone else's build, test or bench (`foreign`: the processes
    foreign_processes() found) up to `max_wait` s to end. Returns those
    still running and the seconds waited."""
    t0 = time.time()
    while foreign and time.time() - t0 < max_wait:
        time.sleep(2)
        foreign = foreign_processes()
    return foreign, time.time() - t0


class Runner:
    def __init__(self, args):
        self.a = args
        self.mem = args.mem.split()
        self.seq = 0
        self.tmp = os.path.dirname(args.tqfwd)

    def vdevs(self, traffic: str, rx_queues: int = 1) -> list[str]:
        if traffic == "null":
            return ["--vdev=net_null0,size=64", "--vdev=net_null1,size=64"]
        # net_pcap: one RX queue per rx_pcap argument, each replaying the file.
        rx = ",".join([f"rx_pcap={self.a.pcap}"] * rx_queues)
        return [f"--vdev=net_pcap0,{rx},infinite_rx=1", f"--vdev=net_pcap1,{rx},infinite_rx=1"]

    def eal(self, lcores: str, traffic: str, rx_queues: int = 1) -> list[str]:
        self.seq += 1
        return ["-l", lcores, "--no-pci", *self.mem, "--file-prefix", f"tqpb{os.getpid()}-{self.seq}",
                *self.vdevs(traffic, rx_queues)]

    def tqfwd_cmd(self, c: Cfg, seconds: float, json_path: str, stats_interval: float = 1) -> list[str]:
        lcores, role_args, _ = LAYOUTS[c.layout]
        backend, handoff = {"ring-copy": ("ring", "copy"), "ring": ("ring", "zero-copy")}.get(
            c.contender, (c.contender, "round-trip"))
        app = ["--backend", backend, "--handoff", handoff, "--topology", c.topology, "--burst", str(c.burst),
               "--depth", str(c.depth), "--on-full", c.on_full, "--worker-cycles", str(c.worker_cycles),
               "--duration", str(seconds), "--stats-interval", str(stats_interval),
               "--stats-json", json_path, *role_args]
        if c.latency:
            app += ["--latency", "--latency-sample", str(LATENCY_SAMPLE)]
        if c.rx_rate is not None:
            app += ["--rx-rate", f"{c.rx_rate:.3f}"]
        rx_queues = LAYOUT_RX_QUEUES.get(c.layout, 1)
        if c.traffic == "pcap":
            # net_pcap's infinite_rx keeps the file's 8192 frames per port
            # and RX queue in mbufs of the port's pool: the default pool
            # (sized for descriptors + queues) is too small for that.
            app += ["--mbufs", str(PCAP_MBUFS * rx_queues)]
        return [self.a.tqfwd, *self.eal(lcores, c.traffic, rx_queues), "--", *app]

    def testpmd_cmd(self, c: Cfg) -> list[str]:
        mode = c.contender.split("-")[1]
        return ["stdbuf", "-oL", "-eL", "dpdk-testpmd", *self.eal("0-1", c.traffic), "--",
                f"--forward-mode={mode}", "--auto-start", "--stats-period", "1", f"--burst={c.burst}",
                "--rxd=1024", "--txd=1024", "--record-core-cycles"]

    # -- tqfwd
    def run_tqfwd(self, c: Cfg) -> dict:
        S = self.a.seconds
        jpath = os.path.join(self.tmp, f"run-{self.seq + 1}.json")
        r, out, rep, lines = run_tqfwd_once(self.tqfwd_cmd(c, S + 1, jpath), jpath, S + 60)
        if rep is None:
            r["error"] = "no --stats-json output; last lines: " + " | ".join(out.strip().splitlines()[-3:])
            return r
        # Host placement of the first two lcores (near / far / mixed / ?);
        # a one-lcore run has no trip to measure: n/a.
        r["lcore_trip_ns"] = rep.get("lcore_trip_ns")
        r["placement"] = placement(r["lcore_trip_ns"]) if len(rep.get("lcores", [])) >= 2 else "n/a"
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
        if r["rc"] != 0:
            r["error"] = f"tqfwd exited {r['rc']}"
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



# ---------------------------------------------------------------- perf


def run_perf(runner: Runner, log) -> dict:
    res = {}
    if not shutil.which("perf"):
        return {"error": {"top": ["perf not found"]}}
    for cn in ("tq", "ring", "testpmd-io"):
        c = Cfg(cn, "null", "default")
        data = os.path.join(runner.tmp, f"perf-{cn}.data")
        if cn in TQFWD:
            cmd = runner.tqfwd_cmd(c, 3, os.path.join(runner.tmp, "perf.json"), stats_interval=0)
        else:
            # testpmd forwards until stopped: SIGINT after 4 s (perf passes
            # it on), so both tools are sampled over the same span
            cmd = ["timeout", "-s", "INT", "4", *runner.testpmd_cmd(c)[3:]]
        rec = ["perf", "record", "-F", "4999", "-g", "-o", data, "--", *cmd]
        log(f"perf: {' '.join(rec)}")
        p = subprocess.run(rec, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        ent = {"record_cmd": " ".join(rec), "rc": p.returncode}
        if cn not in TQFWD:
            m = re.search(r"CPU cycles/packet=([\d.]+)", p.stdout)
            ent["summary"] = [f"testpmd io: CPU cycles/packet={m[1]}" if m else "testpmd io: no cycles line"]
        if os.path.exists(data) and (p.returncode == 0 or cn not in TQFWD):
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort",
                                  "comm,dso,symbol", "--percent-limit", "1", "-g", "none"],
                                 capture_output=True, text=True, timeout=120)
            top = [l.rstrip(" -") for l in rep.stdout.splitlines() if l.strip() and not l.startswith("#")][:25]
            ent["top"] = top
            # share of samples per thread (main = lcore 0, rte-worker-1 = lcore 1)
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "comm",
                                  "-g", "none"], capture_output=True, text=True, timeout=120)
            ent["threads"] = [l.strip() for l in rep.stdout.splitlines() if l.strip() and not l.startswith("#")]
            # per thread, by library: the PMD's and the TLS lookups' share
            # beside the application's own (testpmd io pays the same PMD)
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "comm,dso",
                                  "--percent-limit", "0.5", "-g", "none"], capture_output=True, text=True, timeout=120)
            ent["thread_dso"] = [l.strip() for l in rep.stdout.splitlines() if l.strip() and not l.startswith("#")]
            # the stages are inlined into the lcore loop: source lines say where
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort",
                                  "comm,symbol,srcline", "--percent-limit", "1", "-g", "none"],
                                 capture_output=True, text=True, timeout=300)
            ent["top_srcline"] = [l.rstrip(" -") for l in rep.stdout.splitlines()
                                  if l.strip() and not l.startswith("#")][:25]
        else:
            ent["top"] = ["perf record failed: " + (p.stderr.strip().splitlines() or [""])[-1]]
        if cn not in TQFWD:
            res[cn] = ent
            for f in (data, data + ".old"):
                if os.path.exists(f):
                    os.unlink(f)
            continue
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


def add_common_args(ap: argparse.ArgumentParser):
    """The options bench/pipeline.sh gives both drivers (this one and
    pipeline_sweep.py): binaries, pcap, EAL memory, rounds, outputs."""
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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    add_common_args(ap)
    ap.add_argument("--perf", action="store_true")
    ap.add_argument("--perf-only", action="store_true")
    ap.add_argument("--contenders", default=",".join(CONTENDERS),
                    help="comma-separated subset of " + ", ".join(CONTENDERS) + " (default: all)")
    ap.add_argument("--match-placement", type=int, default=MATCH_PLACEMENT, metavar="N",
                    help="re-run a group's tqfwd runs up to N times while its tq and ring runs drew different "
                         "host placements (at the default, on-full drop and no --latency points: while they are "
                         f"not both {LINKED_PLACEMENT}) (default {MATCH_PLACEMENT}; 0: never)")
    ap.add_argument("--pingpong", help="the compiled bench/pingpong.c (the physical floor); none: not measured")
    ap.add_argument("--render-svg", metavar="JSON",
                    help="only redraw the SVG of a results JSON (next to it); same as bench/report_svg.py JSON")
    a = ap.parse_args()
    if a.match_placement < 0:
        ap.error("--match-placement must be >= 0")
    a.contenders = [c.strip() for c in a.contenders.split(",") if c.strip()]
    unknown = [c for c in a.contenders if c not in CONTENDERS]
    if unknown:
        ap.error(f"unknown contender(s) {', '.join(unknown)}: use {', '.join(CONTENDERS)}")
    return a


def log(msg):
    print(f"pipeline: {msg}", file=sys.stderr, flush=True)


def perf_only(a, runner: Runner) -> int:
    """--perf-only: the perf record / perf stat runs and their text file."""
    q = wait_quiet(a.wait_quiet, log) if a.wait_quiet > 0 else {"loadavg": loadavg(), "quiet": None}
    pf = run_perf(runner, log)
    os.makedirs(a.results, exist_ok=True)
    path = os.path.join(a.results, f"pipeline-{a.stamp}-perf.txt")
    with open(path, "w") as f:
        f.write(perf_text(pf, f"# {a.command}; load avg before {q['loadavg']}, quiet={q['quiet']}; "
                              f"EAL memory: {a.mem_note}\n"))
    sys.stdout.write(open(path).read())
    log(f"wrote {path}")
    return 0


def machine_info(a) -> dict:
    """tqfwd version and hash, git revision, CPU model."""
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
    return {"tqfwd_version": ver, "git": git, "tqfwd_sha256_16": sha,
            "machine": {"cpu": cpu, "nproc": os.cpu_count(), "kernel": platform.release()}}


def check_quiet(a) -> dict:
    quiet = wait_quiet(a.wait_quiet, log) if a.wait_quiet > 0 else \
        {"quiet": None, "cpu_busy_pct": round(cpu_busy(2.0), 1), "loadavg": loadavg(),
         "foreign": foreign_processes(), "waited_s": 0}
    if quiet["quiet"] is False or quiet["foreign"] or quiet["cpu_busy_pct"] >= 15:
        log(f"WARNING: machine not quiet (CPUs {quiet['cpu_busy_pct']}% busy, load {quiet['loadavg']}, "
            f"{len(quiet['foreign'])} compiler/DPDK processes): figures will be noisy")
    else:
        log(f"machine quiet: CPUs {quiet['cpu_busy_pct']}% busy, load avg {quiet['loadavg']}")
    return quiet


class Session:
    """The runs of one bench: every kept run in `runs` (by `Cfg.key`), the
    runs set aside by --match-placement in `redrawn` (by key), with the
    count of runs that overlapped someone else's compiler or DPDK program.

    The host draws the two vCPUs' placement (near / far) anew at every
    process start, and throughput follows it: a paired ratio of a tq run
    that drew near and a ring run that drew far measures the host. So the
    runs go by groups (one point's contenders, back to back) and a group
    whose tq and ring runs drew different placements has its tqfwd runs
    run again, up to --match-placement times; each key keeps one run per
    group, so the n-th runs of a round still pair. Some targets pair runs
    of different points (drop ÷ wait: on-full drop against default; the
    --latency cost: default against no --latency): the groups of those
    points (LINKED) are held to one placement, near, so those pairs
    compare runs of one placement too."""

    def __init__(self, a, runner: Runner, cfgs: list[Cfg]):
        self.a, self.runner = a, runner
        self.runs: dict[str, list[dict]] = {c.key: [] for c in cfgs}
        self.redrawn: dict[str, list[dict]] = {}
        self.contended_runs = 0
        self.waited_total = 0.0
        self.matching = {"groups": 0, "groups_redrawn": 0, "redraw_runs": 0,
                         "groups_unmatched": 0 if a.match_placement else None,
                         "linked_unmatched": 0 if a.match_placement else None}

    def run_one(self, c: Cfg, rnd: int) -> dict:
        foreign = foreign_processes()
        if foreign and self.a.wait_quiet > 0:
            # another engineer's build/test/benchmark: give it 30 s to end
            foreign, waited = wait_for_others(foreign)
            self.waited_total += waited
        r = self.runner.run(c)
        r["round"] = rnd + 1
        r["loadavg_after"] = loadavg()
        if foreign:
            r["foreign_processes"] = foreign
            self.contended_runs += 1
        self.runs.setdefault(c.key, []).append(r)
        lat = r.get("latency_ns")
        trip = r.get("lcore_trip_ns") or {}
        log(f"  {c.key:40s} rx {fmt(r.get('rx_mpps'), 3):>7} tx {fmt(r.get('tx_mpps'), 3):>7} Mpps"
            + (f"  p99 {lat['p99'] / 1000:.1f} µs" if lat else "")
            + (f"  trip {fmt(trip.get('start'), 0)}/{fmt(trip.get('end'), 0)} ns {r['placement']}"
               if r.get("placement") not in (None, "n/a") else "")
            + (f"  drops {r.get('drops_total')}" if r.get("drops_total") else "")
            + (f"  ERROR {r['error']}" if "error" in r else ""))
        return r

    def set_aside(self, c: Cfg, r: dict, rnd: int):
        """Moves run `r` of `c` (the last of its key) from `runs` to `redrawn`."""
        rs = self.runs[c.key]
        i = next(i for i in range(len(rs) - 1, -1, -1) if rs[i] is r)
        del rs[i]
        r["redraw_of_round"] = rnd + 1
        r.setdefault("attempt", 0)
        self.redrawn.setdefault(c.key, []).append(r)

    def restore(self, c: Cfg, r: dict):
        """Moves run `r` of `c` back from `redrawn` to the end of `runs`
        (the slot of its group: the group's runs are the last of their key)."""
        rs = self.redrawn[c.key]
        del rs[next(i for i, x in enumerate(rs) if x is r)]
        if not rs:
            del self.redrawn[c.key]
        del r["redraw_of_round"]
        if r.get("attempt") == 0:
            del r["attempt"]
        self.runs[c.key].append(r)

    def run_group(self, group: list[Cfg], rnd: int, want: str | None = None):
        """Runs one group, then, while its tq and ring runs drew different
        host placements (or, with `want`, not both `want`), sets its tqfwd
        runs aside and runs them again in the same order (testpmd has no
        placement: its run stays), at most --match-placement times. A group
        still unmatched keeps its last runs, marked `unmatched`; one held to
        `want` keeps its last attempt whose tq and ring shared a placement
        if its last runs do not (so its tq and ring match each other at
        least as often as without `want`)."""
        n = self.a.match_placement
        done = [(c, self.run_one(c, rnd)) for c in group]
        self.matching["groups"] += 1
        k = 0
        paired = None  # with `want`: the last attempt whose tq and ring shared a placement
        while n and not placement_matched(done, want):
            if want is not None and placement_matched(done):
                paired = list(done)
            seen = ", ".join(f"{c.contender} {r.get('placement', '?')}" for c, r in done if c.contender in TQFWD)
            where = f"{group[0].traffic}/{group[0].point} (round {rnd + 1})"
            if k == n:
                kept = "kept"
                if paired is not None and not placement_matched(done):
                    for c, r in done:
                        if c.contender in TQFWD:
                            self.set_aside(c, r, rnd)
                    for c, r in paired:
                        if c.contender in TQFWD:
                            self.restore(c, r)
                    j = next((r.get("attempt", 0) for c, r in paired if c.contender in TQFWD), 0)
                    kept = f"kept attempt {j} instead (its tq and ring shared a placement)"
                    done = paired
                for c, r in done:
                    if c.contender in TQFWD:
                        r["unmatched"] = True
                self.matching["groups_unmatched"] += 1
                if want is not None:
                    self.matching["linked_unmatched"] += 1
                    log(f"  {where}: not all {want} after {n} redraws ({seen}): {kept}, marked unmatched")
                else:
                    log(f"  {where}: placements still differ after {n} redraws ({seen}): kept, marked unmatched")
                break
            k += 1
            if k == 1:
                self.matching["groups_redrawn"] += 1
            log(f"  redraw {k}/{n} of {where}: placements {seen}" + (f" (held to {want})" if want else ""))
            for c, r in done:
                if c.contender in TQFWD:
                    self.set_aside(c, r, rnd)
            for i, (c, r) in enumerate(done):
                if c.contender in TQFWD:
                    done[i] = (c, self.run_one(c, rnd))
                    done[i][1]["attempt"] = k
                    self.matching["redraw_runs"] += 1

    def rounds(self, plan: list[Cfg]):
        a = self.a
        for rnd in range(a.rounds):
            if a.wait_quiet > 0 and rnd > 0:
                q = wait_quiet(min(a.wait_quiet, 120), log)
                self.waited_total += q["waited_s"]
            log(f"round {rnd + 1}/{a.rounds} (load avg {loadavg()})")
            for group in plan_groups(plan):
                self.run_group(group, rnd, linked_want(group))

    def loads(self, cfgs: list[Cfg], fracs, load_rounds: int) -> dict:
        """Latency below saturation: tq and ring at fractions of the capacity
        measured above, alternated, the first of each pair swapped every
        round. Appends the load configurations to `cfgs`."""
        a, runs = self.a, self.runs
        cap = {cn: med([r["tx_mpps"] for r in runs.get(f"null/default/{cn}", []) if "error" not in r])
               for cn in ("tq", "ring")}
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
                    self.run_group(pair if rnd % 2 == 0 else pair[::-1], rnd)
        if loads["skipped"]:
            log(f"latency below saturation skipped: {loads['skipped']}")
        return loads


def tsc_hz(runs, pingpong) -> tuple:
    """TSC Hz and where it came from."""
    hz = med([r.get("tsc_hz") for rs in runs.values() for r in rs])
    if hz:
        return round(hz), "tqfwd's start-up log, rte_get_tsc_hz(), median over runs"
    if pingpong.get("tsc_hz"):
        return pingpong["tsc_hz"], "bench/pingpong.c, rdtsc over a 100 ms sleep"
    return None, "not measured"


def write_outputs(a, meta, md, doc, svg) -> str:
    """pipeline-<date>.{json,md,svg} (and -perf.txt) in --results, --quick
    runs as pipeline-<date>-quick.* (under target/bench/, see pipeline.sh).
    Returns the base path."""
    os.makedirs(a.results, exist_ok=True)
    base = os.path.join(a.results, f"pipeline-{a.stamp}" + ("-quick" if a.quick else ""))
    write_json(base + ".json", doc)
    with open(base + ".md", "w") as f:
        f.write(md)
    with open(base + ".svg", "w") as f:
        f.write(svg)
    if meta.get("perf"):
        with open(base + "-perf.txt", "w") as f:
            f.write(perf_text(meta["perf"]))
    return base


def main() -> int:
    if "--render-svg" in sys.argv:
        i = sys.argv.index("--render-svg")
        print(f"wrote {render_file(sys.argv[i + 1])}")
        return 0
    a = parse_args()
    cfgs = build_configs(a.quick, a.contenders)
    if not cfgs:
        log(f"error: no configuration ran: --contenders '{','.join(a.contenders)}' selects none; "
            "no report, no verdict")
        return 1
    runner = Runner(a)
    if a.perf_only:
        return perf_only(a, runner)
    plan = round_plan(cfgs, a.quick)
    fracs = LOADS_QUICK if a.quick else LOADS
    load_rounds = 1 if a.quick else a.rounds
    est = a.rounds * sum((a.seconds + 1.2) if c.contender in TQFWD else (a.seconds + 3.5) for c in plan)
    est += load_rounds * len(fracs) * 2 * (a.seconds + 1.2)
    log(f"{len(cfgs)} configurations, {len(plan)} runs per round × {a.rounds} rounds, then "
        f"{len(fracs)} loads × tq, ring × {load_rounds} rounds; about {est / 60:.1f} min of runs"
        + (f", plus the redraws (--match-placement {a.match_placement}: a group whose tq and ring drew "
           f"different host placements, or at the default, on-full drop and no --latency points not both "
           f"{LINKED_PLACEMENT}, runs its tqfwd runs again, up to {a.match_placement} times)"
           if a.match_placement else ""))
    quiet = check_quiet(a)
    info = machine_info(a)

    ses = Session(a, runner, cfgs)
    t_start = time.time()
    ses.rounds(plan)
    loads = ses.loads(cfgs, fracs, load_rounds)
    pingpong = run_pingpong(a.pingpong, log) if a.pingpong else {"error": "bench/pingpong.c not compiled"}
    elapsed = time.time() - t_start
    runs = ses.runs
    m = ses.matching
    if a.match_placement:
        log(f"placement matching: {m['groups']} groups, {m['groups_redrawn']} redrawn, {m['redraw_runs']} redraw "
            f"runs, {m['groups_unmatched']} left unmatched ({m['linked_unmatched']} of them at the default, "
            f"on-full drop or no --latency points, not both {LINKED_PLACEMENT})")

    meta = {
        "stamp": a.stamp, "command": a.command, "mem": a.mem, "mem_note": a.mem_note,
        "rounds": a.rounds, "seconds": a.seconds, "quick": a.quick, "elapsed_s": round(elapsed, 1),
        "quiet_check": quiet, "load_after": loadavg(), "runs_with_foreign_processes": ses.contended_runs,
        "waited_for_quiet_during_run_s": round(ses.waited_total, 1),
        **info,
        "latency_sample": LATENCY_SAMPLE,
        "pcap": "tqfwd-gen --flows 1024 --packets 8192 --size 64 (UDP, 60 B captured)",
        "loads": loads, "pingpong": pingpong,
        "match_placement": a.match_placement, "placement_matching": ses.matching,
    }
    meta["tsc_hz"], meta["tsc_hz_from"] = tsc_hz(runs, pingpong)
    if a.perf:
        log("perf record / perf stat: tq and ring, net_null, default point, 3 s each")
        meta["perf"] = run_perf(runner, log)
    summ = summarize(cfgs, runs)
    an = {"overload": overload(runs, summ), "cores_for_line_rate": cores_for_line_rate(summ, meta["tsc_hz"]),
          "by_placement": by_placement(cfgs, runs, summ)}
    targets = evaluate_targets(cfgs, runs, summ, meta, an)
    md = report(meta, cfgs, runs, summ, targets, an, ses.redrawn)
    sys.stdout.write(md)
    base = write_outputs(a, meta, md, results_doc(meta, cfgs, runs, summ, targets, an, ses.redrawn),
                         svg_chart(meta, cfgs, summ))
    log(f"wrote {base}.json, {base}.md, {base}.svg"
        + (f" (list the run in {a.results}/README.md)" if not a.quick else "")
        + " "
        f"({elapsed:.0f} s of runs)")
    if not configurations_ran(summ):
        log(f"error: no configuration ran: none of the {len(cfgs)} configurations gave figures "
            f"({sum(len(rs) for rs in runs.values())} runs, all failed); every target is n/a")
        return 1
    # a failed run set aside by a redraw still fails the bench
    failed = sum(1 for rs in (*runs.values(), *ses.redrawn.values()) for r in rs if "error" in r)
    if failed:
        log(f"{failed} runs failed (see the report)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
