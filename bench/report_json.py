"""JSON results of the pipeline bench (pipeline-<date>.json).

Schema `tqfwd-pipeline-bench/1`, keys in this order: `meta` (command,
machine, load, method, loads, floor, perf, `match_placement` N and
`placement_matching`: groups, groups_redrawn, redraw_runs,
groups_unmatched, and linked_unmatched: of those, the default, on-full
drop and no --latency groups, held to near, that got no near pair),
`targets` (name, verdict MET / MISSED / n/a, detail), `summary`
(medians per configuration, by "traffic/point/contender"),
`runs` (every kept run: command line, figures or error; tqfwd runs also
`lcore_trip_ns` and `placement`: near / far / mixed / ? / n/a; a run of a
redraw also `attempt` k, the k-th redraw of its group; the kept runs of a
group whose placements never matched `unmatched`: true), `redrawn` (the
runs set aside by --match-placement, by key, each with `redraw_of_round`
and `attempt`: 0 the group's first run, k its k-th redraw), `overload`,
`cores_for_line_rate`, `by_placement` (runs per placement per
configuration, and per placement near / far: the
throughput points' medians and tq's paired ratios against ring and
ring-copy, the null default point's cost, overload, the latency option's
cost and the --rx-rate loads, from that placement's runs only), and
`ratios` (tq over each other contender, median of paired ratios, per
point). Targets with near / far figures carry them in `by_placement`.
"""

from __future__ import annotations

import json

from pipeline_model import CONTENDERS, paired_ratio, points_in_order

SCHEMA = "tqfwd-pipeline-bench/1"


def results_doc(meta, cfgs, runs, summ, targets, an, redrawn=None) -> dict:
    return {"schema": SCHEMA, "meta": meta, "targets": targets,
            "summary": summ, "runs": runs, "redrawn": redrawn or {}, **an,
            "ratios": {f"{t}/{p}": {cn: paired_ratio(runs, f"{t}/{p}/tq", f"{t}/{p}/{cn}")
                                    for cn in CONTENDERS[1:]} for t, p in points_in_order(cfgs)}}


def write_json(path: str, doc: dict):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
