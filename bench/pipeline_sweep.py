#!/usr/bin/env python3
"""The many-core sweep of bench/pipeline.sh (`--lcores LIST`): pipeline
shapes on the lcores given, each for tq, ring and copy.

Called by bench/pipeline.sh, which builds, writes the pcap, picks the EAL
memory mode and the output directory; see its --help and bench/README.md,
"Many-core sweep". Python 3.11 standard library only.

Rows (every role on lcores of its own unless the row says otherwise; the
lcores are taken from LIST in order, the first being EAL's main lcore):

  k RX+TX → 1 W        k lcores receive and transmit, one worker: the
                       multi-producer case; for tq the round trip
  k RX → 1 W → 1 TX    the multi-producer case with TX on its own lcore
  k RX → m W → t TX    RX scatters over m workers, workers over t TX
  class                a `--class` on a worker lcore of its own, beside
                       the default workers (RX+W+TX | class W fits 2 lcores)

A row that needs more lcores than LIST holds is printed with the count it
needs and not run. Per row and contender: forwarded Mpps (median over
rounds, the contenders alternated, the first of a round rotating), busy
TSC cycles per forwarded packet per role (from --stats-json lcores[]), and
RX→TX latency p50/p90/p99 at 10 % and 50 % of the row's capacity (the
lowest of its contenders' medians) through --rx-rate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

from pipeline import (add_common_args, check_quiet, foreign_processes, loadavg, machine_info, run_tqfwd_once,
                      wait_for_others)
from pipeline_model import LATENCY_SAMPLE, med, placement
from report_md import fmt, md_cell

SCHEMA = "tqfwd-pipeline-sweep/1"
# tqfwd's options per contender: tq as it runs by default (round trip where
# the layout allows, else zero-copy), ring through DPDK's zero-copy ring
# API, copy: the ring through per-stage bursts (rte_ring_enqueue_burst /
# dequeue_burst, as most DPDK applications use a ring).
CONTENDERS = {
    "tq": ["--backend", "tq", "--handoff", "round-trip"],
    "ring": ["--backend", "ring", "--handoff", "zero-copy"],
    "copy": ["--backend", "ring", "--handoff", "copy"],
}
LOADS = (0.10, 0.50)
KS = (1, 2, 4, 8, 16)  # RX lcores of the multi-producer rows (more while the list allows)
SHAPES = ((1, 2, 1), (2, 2, 2), (2, 4, 2), (4, 4, 4), (4, 8, 4), (8, 16, 8))
CLASS_NAME = "kv"
# Class match of the pcap traffic: tqfwd-gen's flow i has source
# 10.0.(i >> 8).(i & 255), so of its 1024 flows the 256 of 10.0.0.0/24
# (a quarter of the packets) are the class's.
CLASS_MATCH = "udp,src=10.0.0.0/24"
# net_pcap with infinite_rx holds the file's 8192 frames per port and RX
# queue in mbufs: 2 ports x 8192 per queue, plus tqfwd's own needs.
PCAP_MBUFS_BASE = 32768
PCAP_MBUFS_PER_QUEUE = 16384


# ---------------------------------------------------------------- lcores

@dataclass(frozen=True)
class Lcore:
    id: int
    cpu: str | None = None  # EAL --lcores "ID@CPU": the CPU (set) it runs on

    def eal(self) -> str:
        return str(self.id) if self.cpu is None else f"{self.id}@{self.cpu}"


def parse_lcores(spec: str) -> list[Lcore]:
    """EAL lcore list, in order: `0-1`, `2-33`, `0,2,4-7`; also `ID@CPU`
    and `A-B@CPU` (EAL --lcores: lcores on given CPUs). Raises ValueError."""
    out: list[Lcore] = []
    pos = 0
    tok = re.compile(r"(\d+)(?:-(\d+))?(?:@(\d+|\([\d,\-]+\)))?(,|$)")
    while pos < len(spec):
        m = tok.match(spec, pos)
        if not m or m.end() == pos:
            raise ValueError(f"'{spec}' is not an lcore list (e.g. 0-1, 2-33, 0,2,4-7)")
        a, b = int(m[1]), int(m[2] or m[1])
        if b < a:
            raise ValueError(f"'{m[1]}-{m[2]}': range runs backwards")
        out += [Lcore(i, m[3]) for i in range(a, b + 1)]
        pos = m.end()
    if not out:
        raise ValueError("empty lcore list")
    ids = [l.id for l in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"'{spec}' names an lcore twice")
    return out


def cpus_of(l: Lcore) -> frozenset[int]:
    """The CPUs an lcore runs on (its own id without `@`)."""
    if l.cpu is None:
        return frozenset({l.id})
    s: set[int] = set()
    for part in l.cpu.strip("()").split(","):
        a, _, b = part.partition("-")
        s.update(range(int(a), int(b or a) + 1))
    return frozenset(s)


def shared_cpus(lcores: list[Lcore]) -> bool:
    """True when two lcores may run on one CPU (an oversubscribed list:
    a functional check, not a measurement)."""
    seen: set[int] = set()
    for l in lcores:
        c = cpus_of(l)
        if len(c) > 1 or c & seen:
            return True
        seen |= c
    return False


def corelist(ids: list[int]) -> str:
    """tqfwd's --rx-lcores etc.: a DPDK corelist."""
    return ",".join(str(i) for i in ids)


# ---------------------------------------------------------------- rows

@dataclass
class Row:
    """One pipeline shape. Role lists are indices into the lcore list;
    `need` is how many lcores it takes."""
    name: str
    family: str  # mp-rxtx | mp | shape | class
    rx: list[int]
    worker: list[int]
    tx: list[int]
    cls: list[int] = field(default_factory=list)  # the class's dedicated worker lcores

    @property
    def need(self) -> int:
        return 1 + max(self.rx + self.worker + self.tx + self.cls)

    @property
    def rx_queues(self) -> int:
        return len(self.rx)

    @property
    def tx_queues(self) -> int:
        return len(self.tx)

    def role_of(self) -> dict[int, str]:
        """Lcore index → role label (RX, W, TX joined by + where one lcore
        holds several; "class W" for the class's lcores)."""
        out = {}
        for i in range(self.need):
            if i in self.cls:
                out[i] = "class W"
                continue
            out[i] = "+".join(n for n, l in (("RX", self.rx), ("W", self.worker), ("TX", self.tx)) if i in l)
        return out


def build_rows(n_lcores: int, families: set[str]) -> list[Row]:
    """Every row, in order: the fixed set, plus larger k while the list
    allows."""
    rows: list[Row] = []
    ks = list(KS)
    while ks[-1] * 2 + 2 <= n_lcores:
        ks.append(ks[-1] * 2)
    if "mp" in families:
        for k in ks:
            rows.append(Row(f"{k} RX+TX → 1 W", "mp-rxtx", list(range(k)), [k], list(range(k))))
        for k in ks:
            rows.append(Row(f"{k} RX → 1 W → 1 TX", "mp", list(range(k)), [k], [k + 1]))
    if "shape" in families:
        for k, m, t in SHAPES:
            rows.append(Row(f"{k} RX → {m} W → {t} TX", "shape", list(range(k)), list(range(k, k + m)),
                            list(range(k + m, k + m + t))))
    if "class" in families:
        rows.append(Row("RX+W+TX | class W", "class", [0], [0], [0], [1]))
        rows.append(Row("1 RX → 1 W + class W → 1 TX", "class", [0], [1], [3], [2]))
        rows.append(Row("2 RX → 2 W + class W → 2 TX", "class", [0, 1], [2, 3], [5, 6], [4]))
    return rows


# ---------------------------------------------------------------- running

class Runner:
    def __init__(self, a, lcores: list[Lcore]):
        self.a = a
        self.lcores = lcores
        self.mem = a.mem.split()
        self.eal_extra = a.eal.split() if a.eal else []
        self.seq = 0
        self.waited = 0.0  # seconds spent waiting for others' processes to end
        self.tmp = os.path.dirname(os.path.abspath(a.tqfwd))

    def ports(self, row: Row) -> list[str]:
        if self.a.eal:
            return self.eal_extra  # the user's devices (-a PCI ...): real ports, RSS, rte_flow
        if self.a.traffic == "null":
            return ["--no-pci", "--vdev=net_null0,size=64", "--vdev=net_null1,size=64"]
        # net_pcap: one RX queue per rx_pcap argument (and as many dropping
        # TX queues): one per RX lcore, and at least one per TX lcore.
        q = max(row.rx_queues, row.tx_queues)
        rx = ",".join([f"rx_pcap={self.a.pcap}"] * q)
        return ["--no-pci", f"--vdev=net_pcap0,{rx},infinite_rx=1", f"--vdev=net_pcap1,{rx},infinite_rx=1"]

    def cmd(self, row: Row, contender: str, json_path: str, rx_rate: float | None) -> list[str]:
        self.seq += 1
        ls = self.lcores[:row.need]
        ids = [l.id for l in ls]
        eal = ["--lcores", ",".join(l.eal() for l in ls), *self.mem,
               "--file-prefix", f"tqsw{os.getpid()}-{self.seq}", *self.ports(row)]
        app = [*CONTENDERS[contender], "--duration", str(self.a.seconds + 1), "--stats-interval", "1",
               "--stats-json", json_path,
               "--rx-lcores", corelist([ids[i] for i in row.rx]),
               "--worker-lcores", corelist([ids[i] for i in row.worker]),
               "--tx-lcores", corelist([ids[i] for i in row.tx])]
        if row.cls:
            app += ["--class", f"{CLASS_NAME}:{self.a.class_match}:{corelist([ids[i] for i in row.cls])}"]
        if not self.a.eal and self.a.traffic == "pcap":
            q = max(row.rx_queues, row.tx_queues)
            app += ["--mbufs", str(PCAP_MBUFS_BASE + PCAP_MBUFS_PER_QUEUE * q)]
        if rx_rate is not None:
            app += ["--latency", "--latency-sample", str(LATENCY_SAMPLE), "--rx-rate", f"{rx_rate:.3f}"]
        return [self.a.tqfwd, *eal, "--", *app]

    def run(self, row: Row, contender: str, rx_rate: float | None = None, offered: float | None = None) -> dict:
        S = self.a.seconds
        jpath = os.path.join(self.tmp, f"sweep-{self.seq + 1}.json")
        cmd = self.cmd(row, contender, jpath, rx_rate)
        foreign = foreign_processes()
        if foreign and self.a.wait_quiet > 0:
            # someone else's build, test or bench: give it 30 s to end
            foreign, waited = wait_for_others(foreign)
            self.waited += waited
        r, out, rep, lines = run_tqfwd_once(cmd, jpath, S + 90)
        rc = r["rc"]
        if rx_rate is not None:
            r["rx_rate"], r["offered_mpps"] = rx_rate, offered if offered is not None else rx_rate
        # what ran beside it, at its start or at its end
        foreign = list(dict.fromkeys(foreign + foreign_processes()))
        if foreign:
            r["foreign_processes"] = foreign
        if rep is None:
            r["error"] = f"exit {rc}, no --stats-json output; last lines: " + \
                " | ".join(out.strip().splitlines()[-4:])
            return r
        # the stats lines after the first second (warm-up)
        r["tx_mpps"] = statistics.fmean(x[2] for x in lines[1:]) if len(lines) > 1 else rep["tx_mpps"]
        r["tx_mpps_whole_run"] = rep["tx_mpps"]
        r["rx_packets"], r["tx_packets"] = rep["rx_packets"], rep["tx_packets"]
        r["drops"], r["drops_total"] = rep["drops"], rep["drops_total"]
        r["conservation_ok"], r["mbufs_in_use"] = rep["conservation_ok"], rep["mbufs_in_use"]
        r["round_trip"] = rep.get("round_trip")
        r["lcore_trip_ns"] = rep.get("lcore_trip_ns")
        r["placement"] = placement(r["lcore_trip_ns"]) if len(rep.get("lcores", [])) >= 2 else "n/a"
        m = re.search(r"TSC (\d+) Hz", out)
        if m:
            r["tsc_hz"] = int(m[1])
        if rep.get("latency_ns"):
            r["latency_ns"] = rep["latency_ns"]
        r["imissed"] = sum(p.get("hw_imissed", 0) for p in rep.get("ports", []))
        # busy cycles per forwarded packet, per lcore and per role (as
        # bench/ab.py: an lcore's busy cycles per packet it handled × the
        # packets it handled, over the packets forwarded)
        roles = row.role_of()
        ids = [l.id for l in self.lcores[:row.need]]
        fwd = max(rep["tx_packets"], 1)
        per_role: dict[str, float] = {}
        lc = []
        for l in rep["lcores"]:
            handled = l["rx_packets"] + l["worker_packets"] + l["tx_packets"]
            busy = l["busy_cycles_per_packet"] * handled
            role = roles.get(ids.index(l["lcore"]), "?") if l["lcore"] in ids else "?"
            per_role[role] = per_role.get(role, 0.0) + busy / fwd
            lc.append({"lcore": l["lcore"], "role": role, "roles": l["roles"],
                       "busy_cycles_per_packet": l["busy_cycles_per_packet"],
                       "busy_cycles_per_forwarded_packet": busy / fwd, "busy_ratio": l["busy_ratio"],
                       "avg_burst": l.get("avg_burst"), "in_place": l.get("in_place")})
        r["lcores"] = lc
        r["cycles_per_role"] = per_role
        r["cycles_total"] = sum(per_role.values())
        c = next((c for c in rep.get("app_classes") or [] if c["name"] == CLASS_NAME), None)
        if c is not None:
            r["class_packets"] = c["packets"]
            r["class_share"] = c["packets"] / rep["rx_packets"] if rep["rx_packets"] else None
            r["class_drops"] = c["drops"]
            r["class_steering"] = c.get("steering")
        bad = []
        if rc != 0:
            bad.append(f"tqfwd exited {rc}")
        if not rep["conservation_ok"] or rep["mbufs_in_use"] != 0:
            bad.append(f"end check failed (conservation {rep['conservation_ok']}, "
                       f"{rep['mbufs_in_use']} mbufs in use)")
        if rep["tx_packets"] == 0:
            bad.append("nothing forwarded")
        if bad:
            r["error"] = "; ".join(bad) + "; last lines: " + " | ".join(out.strip().splitlines()[-3:])
        return r


# ---------------------------------------------------------------- sweep

def log(msg):
    print(f"pipeline sweep: {msg}", file=sys.stderr, flush=True)


def run_line(row: Row, cn: str, r: dict, what: str) -> str:
    lat = r.get("latency_ns")
    return (f"  {row.name:30s} {cn:5s} {what:10s} {fmt(r.get('tx_mpps'), 3):>8} Mpps"
            + (f"  {fmt(r.get('cycles_total'), 1)} cyc/pkt" if r.get("cycles_total") else "")
            + (f"  p50/p90/p99 {lat['p50'] / 1000:.2f}/{lat['p90'] / 1000:.2f}/{lat['p99'] / 1000:.1f} µs"
               if lat else "")
            + (f"  {r['placement']}" if r.get("placement") not in (None, "n/a") else "")
            + (f"  drops {r['drops_total']}" if r.get("drops_total") else "")
            + (f"  ERROR {r['error']}" if "error" in r else ""))


def sweep(a, runner: Runner, rows: list[Row], contenders: list[str]) -> dict:
    """Throughput rounds over every row, then the loads. Returns
    {row name: {"tput": {cn: [runs]}, "loads": {frac: {cn: [runs]}}, "capacity": x}}."""
    res = {row.name: {"tput": {cn: [] for cn in contenders}, "loads": {}, "capacity": None} for row in rows}
    for rnd in range(a.rounds):
        log(f"throughput, round {rnd + 1}/{a.rounds} (load avg {loadavg()})")
        for row in rows:
            order = contenders[rnd % len(contenders):] + contenders[:rnd % len(contenders)]
            for cn in order:
                r = runner.run(row, cn)
                r["round"] = rnd + 1
                res[row.name]["tput"][cn].append(r)
                log(run_line(row, cn, r, "max"))
    for row in rows:
        meds = [med([r["tx_mpps"] for r in res[row.name]["tput"][cn] if "error" not in r]) for cn in contenders]
        if None in meds:
            log(f"  {row.name}: a contender has no throughput figure: no latency runs")
            continue
        res[row.name]["capacity"] = min(meds)
    for frac in a.loads:
        for rnd in range(a.rounds):
            log(f"latency at {frac * 100:.0f} % of each row's capacity, round {rnd + 1}/{a.rounds}")
            for row in rows:
                cap = res[row.name]["capacity"]
                if cap is None:
                    continue
                rate = round(frac * cap, 3)
                per = res[row.name]["loads"].setdefault(str(frac), {cn: [] for cn in contenders})
                order = contenders[rnd % len(contenders):] + contenders[:rnd % len(contenders)]
                for cn in order:
                    r = runner.run(row, cn, rx_rate=round(rate, 3), offered=rate)
                    r["round"] = rnd + 1
                    per[cn].append(r)
                    log(run_line(row, cn, r, f"{frac * 100:.0f} %"))
    return res


def summarize(rows: list[Row], res: dict, contenders: list[str], loads) -> dict:
    out = {}
    for row in rows:
        s: dict = {"capacity_mpps": res[row.name]["capacity"],
                   "contenders": {}}
        tq = res[row.name]["tput"].get("tq", [])
        for cn in contenders:
            rs = [r for r in res[row.name]["tput"][cn] if "error" not in r]
            c: dict = {"runs": len(res[row.name]["tput"][cn]), "runs_ok": len(rs)}
            if rs:
                c["tx_mpps"] = med([r["tx_mpps"] for r in rs])
                c["tx_mpps_min"] = min(r["tx_mpps"] for r in rs)
                c["tx_mpps_max"] = max(r["tx_mpps"] for r in rs)
                roles = list(dict.fromkeys(k for r in rs for k in r["cycles_per_role"]))
                c["cycles_per_role"] = {k: med([r["cycles_per_role"].get(k) for r in rs]) for k in roles}
                c["cycles_total"] = med([r["cycles_total"] for r in rs])
                c["drops_fraction"] = med([r["drops_total"] / r["rx_packets"] for r in rs if r["rx_packets"]])
                c["round_trip"] = any(r.get("round_trip") for r in rs)
                c["placements"] = {p: sum(1 for r in rs if r.get("placement") == p)
                                   for p in ("near", "far", "mixed", "?", "n/a")}
                if any("class_share" in r for r in rs):
                    c["class_share"] = med([r.get("class_share") for r in rs])
                    c["class_drops"] = sum(r.get("class_drops", 0) for r in rs)
                    c["class_steering"] = rs[-1].get("class_steering")
                if cn != "tq":
                    xs = [r["tx_mpps"] / b["tx_mpps"] for r, b in zip(res[row.name]["tput"][cn], tq)
                          if "error" not in r and "error" not in b and b.get("tx_mpps")]
                    c["vs_tq_paired"] = statistics.median(xs) if xs else None
                    c["vs_tq_pairs"] = len(xs)
            c["loads"] = {}
            for frac in loads:
                lr = [r for r in res[row.name]["loads"].get(str(frac), {}).get(cn, [])
                      if "error" not in r and r.get("latency_ns")]
                if lr:
                    c["loads"][str(frac)] = {
                        "offered_mpps": lr[0]["offered_mpps"], "rx_rate": lr[0]["rx_rate"], "runs": len(lr),
                        "tx_mpps": med([r["tx_mpps"] for r in lr]),
                        **{k: med([r["latency_ns"][k] for r in lr]) for k in ("p50", "p90", "p99", "p999", "max")},
                        "drops_total": sum(r["drops_total"] for r in lr),
                        "drops_fraction": med([r["drops_total"] / r["rx_packets"] for r in lr if r["rx_packets"]])}
            s["contenders"][cn] = c
        out[row.name] = s
    return out


# ---------------------------------------------------------------- report

def us2(ns):
    return "–" if ns is None else f"{ns / 1000:.2f}"


def role_text(c: dict) -> str:
    pr = c.get("cycles_per_role") or {}
    return " · ".join(f"{k} {v:.1f}" for k, v in pr.items()) if pr else "–"


def report(meta: dict, run_rows: list[Row], skipped: list[Row], summ: dict, contenders: list[str],
           loads) -> str:
    L = [f"# tqfwd pipeline sweep — {meta['stamp']}\n"]
    L.append(f"Command: `{meta['command']}`  ")
    m = meta["machine"]
    L.append(f"Machine: {m['cpu']}, {m['nproc']} CPUs; lcores `{meta['lcores']}` ({meta['n_lcores']}); "
             f"ports: {meta['ports']}; EAL memory: {meta['mem_note']}  ")
    q = meta["quiet_check"]
    L.append(f"Load before: {q['loadavg']}, CPUs {q['cpu_busy_pct']}% busy, quiet={q['quiet']}; load after: "
             f"{meta['load_after']}; runs beside a compiler or DPDK process of someone else: "
             f"{meta['runs_with_foreign_processes']} of {meta['runs']}  ")
    L.append(f"tqfwd {meta['tqfwd_version']} (git {meta['git']}); TSC {fmt(meta['tsc_hz'] and meta['tsc_hz'] / 1e9, 2)}"
             f" GHz; {meta['rounds']} rounds × {meta['seconds']} s measured (+1 s warm-up) per run, "
             f"contenders alternated (the first of a round rotates); {meta['elapsed_s']:.0f} s of runs.\n")
    if meta.get("oversubscribed"):
        L.append("**Lcores share CPUs in this list: a functional check of the rows, not a measurement.**\n")
    L.append("## Throughput and cycles per forwarded packet\n")
    L.append("| row | lcores | contender | forwarded Mpps (min–max) | ÷ tq (paired) | busy cycles per forwarded "
             "packet, by role | Σ | drops | runs near/far/mixed |")
    L.append("|---|---:|---|---:|---:|---|---:|---:|---|")
    for row in run_rows:
        for cn in contenders:
            c = summ[row.name]["contenders"][cn]
            if not c.get("runs_ok"):
                L.append(f"| {md_cell(row.name)} | {row.need} | {cn} | failed ({c['runs']} runs) | | | | | |")
                continue
            name = cn + (" (round trip)" if cn == "tq" and c.get("round_trip") else "")
            share = (f"; class {c['class_share'] * 100:.0f} % of packets" if c.get("class_share") is not None
                     else "")
            pl = c["placements"]
            place = "n/a" if pl["n/a"] == c["runs_ok"] else f"{pl['near']}/{pl['far']}/{pl['mixed']}" + \
                (f" +{pl['?']} ?" if pl["?"] else "")
            L.append(f"| {md_cell(row.name)} | {row.need} | {name} | {c['tx_mpps']:.2f} ({c['tx_mpps_min']:.2f}–"
                     f"{c['tx_mpps_max']:.2f}) | {fmt(c.get('vs_tq_paired'), 3) if cn != 'tq' else ''} | "
                     f"{md_cell(role_text(c))}{share} | {c['cycles_total']:.1f} | "
                     f"{c['drops_fraction'] * 100:.2f} % | {place} |")
    L.append("")
    L.append("Forwarded Mpps: both ports together, the stats lines after the first second, median over the "
             "rounds. ÷ tq: median of the per-round ratios to tq's run of the same round. Cycles: each lcore's "
             "busy TSC cycles (loop passes that moved packets) over the packets forwarded, summed per role "
             "(RX, W worker, TX, class W the class's worker; `+`: roles sharing an lcore); Σ: the whole "
             "pipeline. Drops: median share of received packets dropped (`--on-full drop`, tqfwd's default).\n")
    steer = [(row, summ[row.name]["contenders"][cn].get("class_steering")) for row in run_rows if row.cls
             for cn in contenders[:1]]
    if any(st for _, st in steer):
        L.append("Class steering (`app_classes[].steering`, the last run): "
                 + "; ".join(f"{row.name}: {', '.join(st)}" for row, st in steer if st) + ".\n")
    frs = ", ".join(f"{f * 100:.0f} %" for f in loads)
    L.append(f"## Latency below saturation ({frs} of the row's capacity)\n")
    L.append("Capacity: the lowest of the row's contenders' forwarded Mpps above; every contender gets the same "
             f"offered load (`--rx-rate`), `--latency --latency-sample {LATENCY_SAMPLE}` (RX TSC stamp → just "
             "before `rte_eth_tx_burst`); medians over the rounds, µs.\n")
    head = " | ".join(f"{f * 100:.0f} %: offered → fwd Mpps | p50 | p90 | p99 | drops" for f in loads)
    L.append(f"| row | capacity Mpps | contender | {head} |")
    L.append("|---|---:|---|" + "---:|---:|---:|---:|---:|" * len(loads))
    for row in run_rows:
        cap = summ[row.name]["capacity_mpps"]
        for cn in contenders:
            c = summ[row.name]["contenders"][cn]
            cells = []
            for f in loads:
                x = c["loads"].get(str(f))
                if x:
                    cells.append(f"{x['offered_mpps']:.2f} → {x['tx_mpps']:.2f} | {us2(x['p50'])} | "
                                 f"{us2(x['p90'])} | {fmt(x['p99'] / 1000, 1)} | {x['drops_fraction'] * 100:.2f} %")
                else:
                    cells.append("– | – | – | – | –")
            L.append(f"| {md_cell(row.name)} | {fmt(cap)} | {cn} | {' | '.join(cells)} |")
    L.append("")
    L.append("offered → fwd: the load offered (the rate `--rx-rate` lets the RX lcores take) and the forwarded "
             "Mpps (median); below the offered rate, the row did not keep up with that load in those runs. "
             "Drops: median share of received packets dropped.\n")
    L.append("## Rows not run\n")
    if skipped:
        L.append(f"This list has {meta['n_lcores']} lcores.\n")
        L.append("| row | lcores it needs |")
        L.append("|---|---:|")
        for row in skipped:
            L.append(f"| {md_cell(row.name)} | {row.need} |")
    else:
        L.append("None: every row fits the list.")
    L.append("")
    fails = meta.get("failed_runs") or []
    if fails:
        L.append("## Failed runs\n")
        for f in fails:
            L.append(f"* {md_cell(f['row'])} / {f['contender']}: {f['error']}  \n  `{f['cmd']}`")
        L.append("")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- main

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    ap.add_argument("--lcores", required=True, help="EAL lcore list; the first is the main lcore")
    ap.add_argument("--eal", default="", help="EAL device options instead of the virtual ports (-a PCI ...)")
    ap.add_argument("--traffic", choices=("pcap", "null"), default="pcap")
    ap.add_argument("--class-match", default=CLASS_MATCH)
    ap.add_argument("--rows", default="mp,shape,class", help="families: mp, shape, class")
    ap.add_argument("--contenders", default="tq,ring,copy")
    ap.add_argument("--loads", default=",".join(str(f) for f in LOADS))
    ap.add_argument("--dry-run", action="store_true", help="print the rows and their commands, run nothing")
    a = ap.parse_args()
    try:
        a.lcore_list = parse_lcores(a.lcores)
    except ValueError as e:
        ap.error(f"--lcores: {e}")
    a.families = {x.strip() for x in a.rows.split(",") if x.strip()}
    if not a.families or a.families - {"mp", "shape", "class"}:
        ap.error(f"--rows: families are mp, shape, class (got '{a.rows}')")
    a.contenders = [x.strip() for x in a.contenders.split(",") if x.strip()]
    if not a.contenders or set(a.contenders) - set(CONTENDERS) or len(set(a.contenders)) != len(a.contenders):
        ap.error(f"--contenders: a subset of {', '.join(CONTENDERS)} (got '{','.join(a.contenders)}')")
    try:
        a.loads = [float(x) for x in a.loads.split(",") if x.strip()]
    except ValueError:
        ap.error("--loads: fractions of capacity, e.g. 0.1,0.5")
    if any(not 0 < f < 1 for f in a.loads):
        ap.error("--loads: each fraction between 0 and 1")
    if a.rounds < 1 or a.seconds < 1:
        ap.error("--rounds and --seconds must be >= 1")
    return a


def main() -> int:
    a = parse_args()
    lcores = a.lcore_list
    rows = build_rows(len(lcores), a.families)
    if not a.eal and a.traffic == "null":
        # net_null frames carry no flows for a class to match
        rows = [r for r in rows if not r.cls]
    run_rows = [r for r in rows if r.need <= len(lcores)]
    skipped = [r for r in rows if r.need > len(lcores)]
    runner = Runner(a, lcores)
    for r in skipped:
        log(f"not run: {r.name} needs {r.need} lcores (the list has {len(lcores)})")
    if a.dry_run:
        for row in run_rows:
            print(f"# {row.name} ({row.need} lcores)")
            print(" ".join(runner.cmd(row, a.contenders[0], "RUN.json", None)))
        for row in skipped:
            print(f"# {row.name}: needs {row.need} lcores")
        return 0
    oversub = shared_cpus(lcores)
    if oversub:
        log("WARNING: lcores of this list share CPUs: the figures check the rows, they measure nothing")
    n_runs = len(run_rows) * len(a.contenders) * a.rounds * (1 + len(a.loads))
    log(f"{len(run_rows)} rows × {len(a.contenders)} contenders × {a.rounds} rounds × (1 throughput + "
        f"{len(a.loads)} loads) = {n_runs} runs of {a.seconds} + 1 s; about "
        f"{n_runs * (a.seconds + 2.5) / 60:.0f} min")
    if not run_rows:
        log(f"error: no row fits {len(lcores)} lcores")
        return 1
    quiet = check_quiet(a)
    info = machine_info(a)
    t0 = time.time()
    res = sweep(a, runner, run_rows, a.contenders)
    elapsed = time.time() - t0
    allruns = [(row.name, cn, r) for row in run_rows for cn in a.contenders
               for r in (res[row.name]["tput"][cn]
                         + [x for per in res[row.name]["loads"].values() for x in per[cn]])]
    failed = [{"row": n, "contender": cn, "error": r["error"], "cmd": r["cmd"]} for n, cn, r in allruns
              if "error" in r]
    hz = med([r.get("tsc_hz") for _, _, r in allruns])
    meta = {"stamp": a.stamp, "command": a.command, "lcores": a.lcores, "n_lcores": len(lcores),
            "oversubscribed": oversub,
            "ports": (f"`{a.eal}`" if a.eal else
                      f"net_{a.traffic} ×2 (virtual" + (", tqfwd-gen 64 B UDP over 1024 flows" if a.traffic == "pcap"
                                                        else "") + ")"),
            "mem": a.mem, "mem_note": a.mem_note, "rounds": a.rounds, "seconds": a.seconds, "quick": a.quick,
            "loads": a.loads, "contenders": {cn: CONTENDERS[cn] for cn in a.contenders},
            "class": f"{CLASS_NAME}:{a.class_match}", "elapsed_s": round(elapsed, 1), "quiet_check": quiet,
            "load_after": loadavg(), "runs": len(allruns),
            "runs_with_foreign_processes": sum(1 for _, _, r in allruns if r.get("foreign_processes")),
            "waited_for_others_s": round(runner.waited, 1),
            "tsc_hz": round(hz) if hz else None, **info, "failed_runs": failed}
    summ = summarize(run_rows, res, a.contenders, a.loads)
    md = report(meta, run_rows, skipped, summ, a.contenders, a.loads)
    sys.stdout.write(md)
    os.makedirs(a.results, exist_ok=True)
    base = os.path.join(a.results, f"pipeline-sweep-{a.stamp}" + ("-quick" if a.quick else ""))
    with open(base + ".md", "w") as f:
        f.write(md)
    doc = {"schema": SCHEMA, "meta": meta,
           "rows": [{**asdict(r), "need": r.need, "ran": r in run_rows} for r in rows],
           "summary": summ, "runs": res}
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    log(f"wrote {base}.md, {base}.json ({elapsed:.0f} s of runs)"
        + (f"; list the run in {a.results}/README.md" if not a.quick else ""))
    if failed:
        log(f"{len(failed)} runs failed (see the report)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
