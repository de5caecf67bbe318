"""The pipeline bench's configurations and the figures shared by its
runner, its analysis and its report writers.

A configuration (`Cfg`) is one contender at one point on one traffic; its
runs are keyed by `Cfg.key` ("traffic/point/contender"). Python 3.11
standard library only, like the rest of bench/.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# tq and ring: tqfwd's two backends as it runs by default (--handoff
# zero-copy: rte_ring through DPDK's zero-copy ring API); ring-copy: the
# ring through per-stage bursts (rte_ring_enqueue_burst/dequeue_burst, as
# most DPDK applications use it), at the points every contender runs.
CONTENDERS = ["tq", "ring", "ring-copy", "testpmd-mac", "testpmd-io"]
TQFWD = {"tq", "ring", "ring-copy"}
LATENCY_SAMPLE = 16
# Cores for line rate: 64-byte line rates of 10/25/40/100 GbE, Mpps.
LINE_RATES = ((14.88, "10 GbE"), (37.2, "25 GbE"), (59.52, "40 GbE"), (148.8, "100 GbE"))
WORKER_COSTS = (0, 100, 500)  # --worker-cycles of the rows that give the worker's cost


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


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


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


def throughput_points(cfgs):
    """The points of the throughput table: every one but the --rx-rate loads."""
    return points_in_order([c for c in cfgs if c.rx_rate is None])


def points_in_order(cfgs):
    seen, out = set(), []
    for c in cfgs:
        k = (c.traffic, c.point)
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


def us(ns):
    """ns -> µs (None stays None)."""
    return None if ns is None else ns / 1000.0
