"""Analysis of the pipeline bench's runs: medians per configuration,
overload and core-count figures, the same figures per host placement of
the two lcores (`by_placement`), and the targets with their verdicts.

Every verdict is MET, MISSED or n/a; a target that evaluated no
configuration (its rows did not run or have no figure) is n/a, never MET.
INFO marks a figure reported beside the targets, not judged.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from pipeline_model import (CONTENDERS, LINE_RATES, NEAR_NS, PLACES, TQFWD, WORKER_COSTS, Cfg, med, pair_ratios,
                            paired_ratio, placed_pair_ratios, points_in_order, throughput_points)


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



# ---------------------------------------------------------------- placement

PLACEMENT_KINDS = ("near", "far", "mixed", "?", "n/a")


def placed_runs(runs, key, place) -> list[dict]:
    """The runs of `key` that gave figures and had host placement `place`."""
    return [r for r in runs.get(key, []) if "error" not in r and r.get("placement") == place]


def ratio_stats(xs) -> dict:
    return {"ratio": statistics.median(xs) if xs else None, "pairs": len(xs),
            "min": min(xs) if xs else None, "max": max(xs) if xs else None, "ratios": xs}


def placement_counts(cfgs, runs) -> dict:
    """Runs that gave figures per placement, per tqfwd configuration (testpmd
    has one forwarding lcore: no placement)."""
    out = {}
    for c in cfgs:
        if c.contender not in TQFWD:
            continue
        n = {k: 0 for k in PLACEMENT_KINDS}
        for r in runs.get(c.key, []):
            if "error" not in r:
                p = r.get("placement", "?")
                n[p if p in n else "?"] += 1
        out[c.key] = n
    return out


def by_placement(cfgs, runs, summ) -> dict:
    """The figures the report and the targets compare, again over the runs
    of one host placement (near, far) only: per throughput point each tqfwd
    contender's median and tq's paired ratios against ring and ring-copy
    (rounds where both runs had that placement), the null default point's
    cost (testpmd io's figure from all its runs: one lcore, no placement),
    overload drop ÷ wait, the latency option's cost, and the --rx-rate
    loads' latency. An added view: the targets' verdicts use every run."""
    counts = placement_counts(cfgs, runs)
    totals = {k: sum(n[k] for n in counts.values()) for k in PLACEMENT_KINDS}
    io = summ.get("null/default/testpmd-io", {}).get("busy_cycles_per_rx_packet")
    out = {"near_ns": NEAR_NS, "counts": counts, "totals": totals, "places": {}}
    trs = [cn for cn in CONTENDERS if cn in TQFWD]
    for place in PLACES:
        pl = {"place": place, "points": [], "cost": {}, "overload": {}, "latency_cost": [], "loads": []}
        # throughput points
        for traffic, pt in throughput_points(cfgs):
            keys = {cn: f"{traffic}/{pt}/{cn}" for cn in trs if f"{traffic}/{pt}/{cn}" in runs}
            if not keys:
                continue
            ent = {"traffic": traffic, "point": pt, "contenders": {}, "ratios": {}}
            for cn, k in keys.items():
                rs = placed_runs(runs, k, place)
                ent["contenders"][cn] = {
                    "tx_mpps": med([r["tx_mpps"] for r in rs]), "runs": len(rs),
                    "p99_ns": med([r["latency_ns"]["p99"] for r in rs])
                    if rs and all(r.get("latency_ns") for r in rs) else None}
            if "tq" in keys:
                for b in ("ring", "ring-copy"):
                    if b in keys:
                        ent["ratios"][b] = ratio_stats(placed_pair_ratios(runs, keys["tq"], keys[b], place))
            pl["points"].append(ent)
        # cost at the null default point
        for cn in ("tq", "ring"):
            k = f"null/default/{cn}"
            if k not in runs:
                continue
            rs = placed_runs(runs, k, place)
            n = len(rs[0]["lcores"]) if rs else 0
            lcores = [{"lcore": rs[0]["lcores"][i]["lcore"], "roles": rs[0]["lcores"][i]["roles"],
                       "busy_cycles_per_rx_packet": med([r["lcores"][i]["busy_cycles_per_rx_packet"]
                                                         for r in rs if len(r["lcores"]) == n])}
                      for i in range(n)]
            rxtx = med([l["busy_cycles_per_rx_packet"] for r in rs for l in r["lcores"] if l["roles"] == "rx+tx"])
            pl["cost"][cn] = {"runs": len(rs), "busy_cycles_per_rx_packet": med([r.get("busy_cycles_per_rx_packet")
                                                                                for r in rs]),
                              "lcores": lcores, "rx_tx_lcore_cycles_per_rx_packet": rxtx,
                              "testpmd_io_cycles_per_rx_packet": io,
                              "rx_tx_lcore_vs_testpmd_io": rxtx / io if rxtx is not None and io else None}
        # overload: --on-full drop against wait
        for cn in ("tq", "ring"):
            kw, kd = f"null/default/{cn}", f"null/on-full drop/{cn}"
            if kw not in runs or kd not in runs:
                continue
            w, d = placed_runs(runs, kw, place), placed_runs(runs, kd, place)
            wm, dm = med([r["tx_mpps"] for r in w]), med([r["tx_mpps"] for r in d])
            xs = placed_pair_ratios(runs, kd, kw, place)
            pl["overload"][cn] = {"wait_mpps": wm, "wait_runs": len(w), "drop_mpps": dm, "drop_runs": len(d),
                                  "ratio_of_medians": dm / wm if wm and dm is not None else None,
                                  "paired_ratios": xs, "paired_ratio": statistics.median(xs) if xs else None,
                                  "pairs": len(xs)}
        # the latency option's cost: with / without --latency, paired
        for traffic in ("null", "pcap"):
            for cn in ("tq", "ring"):
                ka, kb = f"{traffic}/default/{cn}", f"{traffic}/no --latency/{cn}"
                if ka in runs and kb in runs:
                    pl["latency_cost"].append({"traffic": traffic, "contender": cn,
                                               **ratio_stats(placed_pair_ratios(runs, ka, kb, place))})
        # latency below saturation (--rx-rate)
        for traffic, pt in points_in_order([c for c in cfgs if c.rx_rate is not None]):
            ent = {"traffic": traffic, "point": pt}
            for cn in ("tq", "ring"):
                rs = [r for r in placed_runs(runs, f"{traffic}/{pt}/{cn}", place) if r.get("latency_ns")]
                ent[cn] = {"runs": len(rs), **{q: med([r["latency_ns"][q] for r in rs]) for q in ("p50", "p90", "p99")}}
            for q in ("p50", "p90"):
                a, b = ent["tq"][q], ent["ring"][q]
                ent[f"{q}_ratio"] = a / b if a is not None and b else None
            pl["loads"].append(ent)
        out["places"][place] = pl
    return out


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _attach(t: dict, bp: dict | None, text_of) -> dict:
    """Adds `by_placement` {place: text} to target `t`: `text_of(place
    figures)` per placement, where it gives one (None: no figure)."""
    if not bp:
        return t
    notes = {}
    for place in PLACES:
        txt = text_of(bp["places"][place])
        if txt:
            notes[place] = txt
    if notes:
        t["by_placement"] = notes
    return t


def _point(pl, traffic, pt):
    return next((e for e in pl["points"] if e["traffic"] == traffic and e["point"] == pt), None)


def _ratio_text(st):
    return f"{st['ratio']:.3f} ({_plural(st['pairs'], 'pair')})" if st and st["pairs"] else None


def configurations_ran(summ) -> int:
    """Configurations with at least one run that gave figures."""
    return sum(1 for s in summ.values() if s["rounds_ok"])


def verdict(evaluated: int, misses) -> str:
    """n/a when nothing was evaluated, else MISSED if anything missed, else MET."""
    if not evaluated:
        return "n/a"
    return "MISSED" if misses else "MET"


def evaluate_targets(cfgs, runs, summ, meta, an) -> list[dict]:
    """Every target, in report order: the per-row comparisons and checks,
    overload, then latency below saturation. A target with a figure per
    host placement carries it in `by_placement` (near / far: text), beside
    the verdict, which stays that of every run."""
    bp = an.get("by_placement")
    return (targets_cost(runs, summ, bp) + targets_rows(cfgs, runs, summ, meta, bp)
            + targets_overload(an["overload"], bp) + targets_loads(cfgs, summ, meta, bp))


# Issue 18's cost targets.
PIPELINE_CYCLES_MAX = 120.0
IO_LCORE_VS_TESTPMD_IO_MAX = 1.7
TQ_VS_RING_DEFAULT_MIN = 1.05
TQ_VS_RING_DEFAULT_PAIRS = 8


def targets_cost(runs, summ, bp=None) -> list[dict]:
    """The pipeline's own cost: busy cycles per forwarded packet summed over
    every lcore, the RX+TX lcore against testpmd io, and tq against ring at
    the default point (net_null, default 2-lcore layout)."""
    T = []
    for cn in ("tq", "ring"):
        s = summ.get(f"null/default/{cn}", {})
        c = s.get("busy_cycles_per_rx_packet")
        name = f"{cn}: whole pipeline <= {PIPELINE_CYCLES_MAX:.0f} busy cycles per forwarded packet (null, default)"
        if c is None:
            T.append({"name": name, "verdict": "n/a", "detail": "no figures"})
            continue
        per = " + ".join(f"{l['busy_cycles_per_rx_packet']:.1f} ({l['roles']})" for l in s.get("lcores", []))

        def whole(pl, cn=cn):
            x = pl["cost"].get(cn)
            return f"{x['busy_cycles_per_rx_packet']:.1f} ({_plural(x['runs'], 'run')})" if x and x["runs"] else None
        T.append(_attach({"name": name, "cycles": c, "verdict": "MET" if c <= PIPELINE_CYCLES_MAX else "MISSED",
                          "detail": f"{c:.1f} = {per}" if per else f"{c:.1f}"}, bp, whole))
    io = summ.get("null/default/testpmd-io", {}).get("busy_cycles_per_rx_packet")
    for cn in ("tq", "ring"):
        lc = next((l for l in summ.get(f"null/default/{cn}", {}).get("lcores", []) if l["roles"] == "rx+tx"), None)
        name = f"{cn}: RX+TX lcore <= {IO_LCORE_VS_TESTPMD_IO_MAX} x testpmd io cycles per packet (null, default)"
        if lc is None or not io:
            T.append({"name": name, "verdict": "n/a", "detail": "no figures"})
            continue
        r = lc["busy_cycles_per_rx_packet"] / io

        def vs_io(pl, cn=cn):
            x = pl["cost"].get(cn)
            if not x or x["rx_tx_lcore_vs_testpmd_io"] is None:
                return None
            return (f"{x['rx_tx_lcore_cycles_per_rx_packet']:.1f}, x{x['rx_tx_lcore_vs_testpmd_io']:.2f} "
                    f"({_plural(x['runs'], 'run')})")
        T.append(_attach({"name": name, "ratio": r,
                          "verdict": "MET" if r <= IO_LCORE_VS_TESTPMD_IO_MAX else "MISSED",
                          "detail": f"{lc['busy_cycles_per_rx_packet']:.1f} per forwarded packet vs testpmd io "
                                    f"{io:.1f}: x{r:.2f}"}, bp, vs_io))
    xs = pair_ratios(runs, "null/default/tq", "null/default/ring")
    name = (f"tq >= {TQ_VS_RING_DEFAULT_MIN} x ring forwarded Mpps at the default point "
            f"(median of >= {TQ_VS_RING_DEFAULT_PAIRS} paired ratios)")
    def default_ratio(b):
        def text(pl):
            e = _point(pl, "null", "default")
            return _ratio_text(e["ratios"].get(b)) if e else None
        return text
    if not xs:
        T.append({"name": name, "verdict": "n/a", "detail": "no figures"})
    else:
        m = statistics.median(xs)
        enough = len(xs) >= TQ_VS_RING_DEFAULT_PAIRS
        v = ("MET" if m >= TQ_VS_RING_DEFAULT_MIN else "MISSED") if enough else "n/a"
        T.append(_attach({"name": name, "ratio": m, "pairs": len(xs), "verdict": v,
                          "detail": f"{m:.3f}, median of {len(xs)} paired ratios ({min(xs):.3f}-{max(xs):.3f})"
                          + ("" if enough else f"; fewer than {TQ_VS_RING_DEFAULT_PAIRS} pairs: use --rounds 4 "
                                               "or more")}, bp, default_ratio("ring")))
    # Beside it, not a target: the ring as most DPDK applications use it
    # (bursts copied in and out), and what zero-copy buys the ring.
    for a, b in (("tq", "ring-copy"), ("ring", "ring-copy")):
        xs = pair_ratios(runs, f"null/default/{a}", f"null/default/{b}")
        if xs:
            m = statistics.median(xs)

            def info(pl, a=a, b=b):
                return _ratio_text(ratio_stats(placed_pair_ratios(runs, f"null/default/{a}",
                                                                  f"null/default/{b}", pl["place"])))
            T.append(_attach({"name": f"{a} / {b} forwarded Mpps at the default point (reported, not a target)",
                              "ratio": m, "pairs": len(xs), "verdict": "INFO",
                              "detail": f"{m:.3f}, median of {len(xs)} paired ratios ({min(xs):.3f}-{max(xs):.3f})"},
                             bp, info))
    return T


def targets_rows(cfgs, runs, summ, meta, bp=None) -> list[dict]:
    """tq against ring and testpmd row by row, drops with --on-full wait,
    the latency option's cost, and tqfwd's end checks."""
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
    def rows_tput(pl):
        below, m = [], 0
        for e in pl["points"]:
            st = e["ratios"].get("ring")
            if not st or not st["pairs"]:
                continue
            m += 1
            if st["ratio"] < 1.0:
                below.append(f"{e['traffic']}/{e['point']} {st['ratio']:.3f} ({_plural(st['pairs'], 'pair')})")
        if not m:
            return None
        return f"{m - len(below)}/{m} rows" + ("; below: " + "; ".join(below) if below else "")
    T.append(_attach({"name": "tq throughput >= ring in every row", "rows": n, "misses": miss,
                      "verdict": verdict(n, miss),
                      "detail": (f"{n - len(miss)}/{n} rows; below: " + "; ".join(miss)) if miss
                      else f"{n}/{n} rows" if n else "no row with figures for both"}, bp, rows_tput))
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
    def rows_p99(pl):
        above, m = [], 0
        for e in pl["points"]:
            a, b = e["contenders"].get("tq"), e["contenders"].get("ring")
            if not a or not b or a["p99_ns"] is None or b["p99_ns"] is None:
                continue
            m += 1
            if a["p99_ns"] > b["p99_ns"]:
                above.append(f"{e['traffic']}/{e['point']} {a['p99_ns'] / 1000:.1f} vs {b['p99_ns'] / 1000:.1f} µs "
                             f"({a['runs']} / {b['runs']} runs)")
        if not m:
            return None
        return f"{m - len(above)}/{m} rows" + ("; above: " + "; ".join(above) if above else "")
    T.append(_attach({"name": "tq p99 <= ring p99 in every row", "rows": n, "misses": miss,
                      "verdict": verdict(n, miss),
                      "detail": (f"{n - len(miss)}/{n} rows; above: " + "; ".join(miss)) if miss
                      else f"{n}/{n} rows" if n else "no row with figures for both"}, bp, rows_p99))
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
    T.append({"name": "zero drops with --on-full wait", "misses": bad, "verdict": verdict(n, bad),
              "detail": f"{n} configurations, {'no drops' if not bad else 'drops in: ' + '; '.join(bad)}"
              if n else "no --on-full wait configuration with figures"})
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
    def lat_cost(pl):
        ps = [f"{x['contender']} {x['traffic']} {x['ratio']:.3f} (cost {(1 - x['ratio']) * 100:+.1f}%, "
              f"{_plural(x['pairs'], 'pair')})" for x in pl["latency_cost"] if x["pairs"]]
        return ", ".join(ps) or None
    T.append(_attach({"name": "--latency --latency-sample 16 costs < 5 % throughput", "worst_cost_pct": worst,
                      "verdict": verdict(len(parts), worst >= 5), "detail": "; ".join(parts) or "no figures"},
                     bp, lat_cost))
    # 6. end checks
    bad = [k for k, s in summ.items() if s["config"]["contender"] in TQFWD and
           (s.get("mbufs_in_use_max", 0) != 0 or not s.get("conservation_ok_all", True))]
    n = sum(1 for s in summ.values() if s["config"]["contender"] in TQFWD and "tx_mpps" in s)
    T.append({"name": "tqfwd end checks (conservation, 0 mbufs in use at exit)", "verdict": verdict(n, bad),
              "detail": ("all runs" if not bad else ", ".join(bad)) if n else "no tqfwd configuration with figures"})
    return T


def targets_overload(ov, bp=None) -> list[dict]:
    """--on-full drop >= 0.95 x wait, per backend."""
    T = []
    for cn in ("tq", "ring"):
        o = ov.get(cn)
        name = f"{cn}: --on-full drop >= 0.95 x --on-full wait forwarded Mpps (null, default point)"
        if not o or o["paired_ratio"] is None:
            T.append({"name": name, "verdict": "n/a", "detail": "no figures"})
            continue
        both = [o["ratio_of_medians"], o["paired_ratio"]]
        mf = o["drops_fraction_of_rx_median"]

        def ov_place(pl, cn=cn):
            x = pl["overload"].get(cn)
            if not x or (x["ratio_of_medians"] is None and not x["pairs"]):
                return None
            return (f"ratio of medians {x['ratio_of_medians']:.3f} ({x['drop_runs']} drop / {x['wait_runs']} wait runs)"
                    if x["ratio_of_medians"] is not None else "ratio of medians –") + \
                (f", paired {x['paired_ratio']:.3f} ({_plural(x['pairs'], 'pair')})" if x["pairs"]
                 else ", no pair of that placement")
        T.append(_attach({"name": name, "ratio_of_medians": o["ratio_of_medians"], "paired_ratio": o["paired_ratio"],
                  "verdict": "MET" if min(both) >= 0.95 else "MISSED",
                  "detail": f"drop {o['drop_mpps']:.2f} vs wait {o['wait_mpps']:.2f} Mpps: ratio of medians "
                            f"{o['ratio_of_medians']:.3f}, median of {len(o['paired_ratios'])} paired ratios "
                            f"{o['paired_ratio']:.3f} (MET needs both >= 0.95); drops after RX "
                            f"{'–' if mf is None else f'{mf * 100:.1f}'} % of rx packets (median run)"},
                         bp, ov_place))
    return T


def targets_loads(cfgs, summ, meta, bp=None) -> list[dict]:
    """Latency below saturation: drops, p99 bound, tq against ring."""
    T = []
    lrows = [c for c in cfgs if c.rx_rate is not None]
    loads = points_in_order(lrows)
    skipped = meta.get("loads", {}).get("skipped")

    def lat(traffic, pt, cn, k):
        l = summ.get(f"{traffic}/{pt}/{cn}", {}).get("latency_ns")
        return l[k] if l else None

    na = f"no load rows ({skipped})" if skipped else "no load rows"
    bad = [f"{c.point} {c.contender} {summ[c.key]['drops_all_rounds']}" for c in lrows
           if summ[c.key].get("drops_total_all_rounds")]
    n = sum(1 for c in lrows if "tx_mpps" in summ[c.key])
    T.append({"name": "no drops at " + "/".join(p.split()[1] for _, p in loads) + " % load" if loads
              else "no drops below saturation", "misses": bad,
              "verdict": verdict(n, bad),
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
    def p99_place(pl):
        ps = [f"{e['point']} " + ", ".join(f"{cn} {e[cn]['p99'] / 1000:.1f} ({_plural(e[cn]['runs'], 'run')})"
                                          for cn in ("tq", "ring") if e[cn]["p99"] is not None)
              for e in pl["loads"] if any(e[cn]["p99"] is not None for cn in ("tq", "ring"))]
        return "; ".join(ps) + " µs" if ps else None
    T.append(_attach({"name": "p99 < 100 µs below saturation", "misses": miss, "verdict": verdict(parts, miss),
                      "detail": ("; ".join(parts) + " µs" + (f" (missed: {', '.join(miss)})" if miss else ""))
                      if parts else na}, bp, p99_place))
    for k, factor, label in (("p50", 0.9, "tq p50 <= 0.9 x ring p50"), ("p90", 1.0, "tq p90 <= ring p90")):
        parts, miss = [], []
        for traffic, pt in loads:
            a, b = lat(traffic, pt, "tq", k), lat(traffic, pt, "ring", k)
            if a is None or b is None or not b:
                continue
            parts.append(f"{pt} {a / 1000:.1f} vs {b / 1000:.1f} µs (×{a / b:.2f})")
            if a > factor * b:
                miss.append(pt)
        def q_place(pl, k=k):
            ps = [f"{e['point']} {e['tq'][k] / 1000:.1f} vs {e['ring'][k] / 1000:.1f} µs (×{e[f'{k}_ratio']:.2f}; "
                  f"{e['tq']['runs']} / {e['ring']['runs']} runs)" for e in pl["loads"] if e[f"{k}_ratio"] is not None]
            return "; ".join(ps) or None
        T.append(_attach({"name": f"{label} below saturation", "misses": miss, "verdict": verdict(parts, miss),
                          "detail": ("; ".join(parts) + (f" (missed at {', '.join(miss)})" if miss else ""))
                          if parts else na}, bp, q_place))
    return T
