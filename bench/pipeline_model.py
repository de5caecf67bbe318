"""The pipeline bench's configurations and the figures shared by its
runner, its analysis and its report writers.

A configuration (`Cfg`) is one contender at one point on one traffic; its
runs are keyed by `Cfg.key` ("traffic/point/contender"). Python 3.11
standard library only, like the rest of bench/.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# tq and ring: tqfwd's two backends as it runs by default (tq: --handoff
# round-trip, which works as zero-copy where the layout does not allow a
# round trip; ring: --handoff zero-copy, rte_ring through DPDK's
# zero-copy ring API, the ring at its best); ring-copy: the
# ring through per-stage bursts (rte_ring_enqueue_burst/dequeue_burst, as
# most DPDK applications use it), at the points every contender runs.
CONTENDERS = ["tq", "ring", "ring-copy", "testpmd-mac", "testpmd-io"]
TQFWD = {"tq", "ring", "ring-copy"}
LATENCY_SAMPLE = 16
# Cores for line rate: 64-byte line rates of 10/25/40/100 GbE, Mpps.
LINE_RATES = ((14.88, "10 GbE"), (37.2, "25 GbE"), (59.52, "40 GbE"), (148.8, "100 GbE"))
WORKER_COSTS = (0, 100, 500)  # --worker-cycles of the rows that give the worker's cost

# Host placement of the first two lcores, from tqfwd's `lcore_trip_ns` (one
# cache line's one-way trip between them, measured as forwarding starts and
# after it stops). On the 2-vCPU test VM the host puts the two vCPUs near
# each other (a shared cache: ~14-60 ns) or far apart (~150-175 ns), anew for
# every process start, and the pipeline's throughput follows it (~47 against
# ~26 Mpps for the same binary): figures compared across runs of different
# placements mix the host's choice into the contenders'. Same threshold as
# bench/ab.py.
NEAR_NS = 100.0
PLACES = ("near", "far")  # the placements compared; "mixed" and "?" runs are left out


def placement(trip: dict | None) -> str:
    """A run's host placement from its `lcore_trip_ns`: "near" (the trip
    below NEAR_NS at the start and at the end of the run), "far" (at or
    above it at both), "mixed", or "?" (missing: not measured or null).

    The host picks the vCPUs' placement for each process start (and may pick
    again when they idle), so every run has its own; a run whose start and
    end figures fall on different sides of NEAR_NS changed placement while it
    ran ("mixed") and belongs to neither group."""
    if not trip:
        return "?"
    start, end = trip.get("start"), trip.get("end")
    if start is None or end is None:
        return "?"
    if start < NEAR_NS and end < NEAR_NS:
        return "near"
    if start >= NEAR_NS and end >= NEAR_NS:
        return "far"
    return "mixed"


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


def placed_pair_ratios(runs, ka, kb, place, metric="tx_mpps"):
    """pair_ratios over the rounds where both runs had host placement
    `place` (their "placement" field)."""
    ra, rb = runs.get(ka, []), runs.get(kb, [])
    xs = []
    for a, b in zip(ra, rb):
        if "error" in a or "error" in b or not b.get(metric):
            continue
        if a.get("placement") == place and b.get("placement") == place:
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
