"""Markdown report of the pipeline bench (stdout and pipeline-<date>.md),
and the text of its perf output (pipeline-<date>-perf.txt).
"""

from __future__ import annotations

from pipeline_analysis import configurations_ran
from pipeline_model import (LATENCY_SAMPLE, LINE_RATES, NEAR_NS, PLACES, WORKER_COSTS, paired_ratio,
                            throughput_points, us)


def fmt(x, d=2, none="–"):
    return none if x is None else f"{x:.{d}f}"


def md_cell(text):
    """A table cell: the layout labels contain '|'."""
    return str(text).replace("|", "\\|")


def report(meta, cfgs, runs, summ, targets, an, redrawn=None) -> str:
    """The whole markdown report. A run in which no configuration gave
    figures gets no tables and no verdicts: it says so and lists the
    failed runs. `redrawn`: the runs --match-placement set aside (by key)."""
    redrawn = redrawn or {}
    L = report_header(meta, runs, redrawn)
    if not configurations_ran(summ):
        L.append("## No configuration ran\n")
        L.append(f"None of the {len(cfgs)} configurations gave figures: no tables, no verdicts "
                 "(every target is n/a in the JSON).\n")
        return "\n".join(L + report_failures(runs, redrawn)) + "\n"
    L += report_throughput(cfgs, runs, summ)
    L += report_placement(an.get("by_placement"))
    L += report_overload(an["overload"])
    L += report_loads(meta, cfgs, summ)
    L += report_cores(meta, an["cores_for_line_rate"])
    L += report_configs(cfgs, summ, (an.get("by_placement") or {}).get("counts", {}))
    L += report_targets(targets)
    L += report_perf(meta.get("perf"))
    L += report_failures(runs, redrawn)
    return "\n".join(L) + "\n"


def report_header(meta, runs, redrawn=None) -> list[str]:
    """Title, command, machine, load and method (with the placement
    matching: --match-placement)."""
    L = []
    L.append(f"# tqfwd forwarding pipeline — {meta['stamp']}\n")
    L.append(f"Command: `{meta['command']}`  ")
    L.append(f"Machine: {meta['machine']['cpu']}, {meta['machine']['nproc']} CPUs; "
             f"EAL memory: {meta['mem_note']}  ")
    L.append(f"Load before: {meta['quiet_check']['loadavg']} (load avg 1/5/15 min), CPUs "
             f"{meta['quiet_check']['cpu_busy_pct']}% busy over 2 s, quiet={meta['quiet_check']['quiet']}; "
             f"load after: {meta['load_after']}; runs that overlapped a compiler/DPDK process of someone else: "
             f"{meta['runs_with_foreign_processes']} of "
             f"{sum(len(v) for v in runs.values()) + sum(len(v) for v in (redrawn or {}).values())}  ")
    L.append(f"tqfwd {meta['tqfwd_version']} (git {meta['git']}); {meta['rounds']} rounds × {meta['seconds']} s "
             f"measured (+1 s warm-up) per run, contenders alternated"
             + ("" if meta["quick"] else ", the net_null default, on-full drop and no --latency rows and the "
                "layout rows twice per round (ABBA)")
             + "; medians over runs; "
             f"tqfwd with `--latency --latency-sample {LATENCY_SAMPLE}` unless the row says no --latency."
             + matching_sentence(meta) + "\n")
    return L


def matching_sentence(meta) -> str:
    """--match-placement in one sentence (empty for a JSON without it)."""
    n, m = meta.get("match_placement"), meta.get("placement_matching")
    if n is None or not m:
        return ""
    if not n:
        return (" Placement matching off (`--match-placement 0`): a pair's tq and ring runs may have drawn "
                "different host placements (see By host placement).")
    return (f" Groups (one point's contenders run back to back in a round) whose tq and ring runs drew "
            f"different host placements (or a mixed or unknown one) had their tqfwd runs run again, up to {n} "
            f"times (`--match-placement {n}`): {m['groups']} groups, {m['groups_redrawn']} redrawn, "
            f"{m['redraw_runs']} redraw runs, {m['groups_unmatched']} left unmatched (their last runs kept, marked "
            f"`unmatched`), so the paired ratios compare runs of one placement; the medians are over the kept "
            f"runs, and the redrawn runs are in the JSON under `redrawn`."
            + ("" if m.get("linked_unmatched") is None else
               f" The default, on-full drop and no --latency groups of a round are held to one placement, near "
               f"(redrawn until tq and ring both drew near), so drop ÷ wait and the --latency cost also pair runs "
               f"of one placement; {m['linked_unmatched']} of those groups got no near pair (counted in the "
               f"unmatched above; kept their last attempt whose tq and ring shared a placement, if any)."))


def report_throughput(cfgs, runs, summ) -> list[str]:
    """Forwarded Mpps of every point and contender, and the paired ratios."""
    L = []
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
    return L


def placement_cell(n) -> str:
    """near/far/mixed run counts of one configuration (and ? when some run
    had no trip figures); n/a for testpmd and one-lcore runs."""
    if not n or (n["n/a"] and not any(n[k] for k in ("near", "far", "mixed", "?"))):
        return "n/a"
    return f"{n['near']}/{n['far']}/{n['mixed']}" + (f" +{n['?']} ?" if n["?"] else "")


def cell(x, n, d=2):
    """A median with its count of runs or pairs; – when there is none."""
    return "–" if not n or x is None else f"{x:.{d}f} ({n})"


def report_placement(bp) -> list[str]:
    """The throughput, cost, overload and latency figures again over the
    runs of one host placement (near, far): an added view, the targets use
    every run."""
    if not bp:
        return []
    L = ["## By host placement\n"]
    t = bp["totals"]
    L.append(f"The host places the two vCPUs behind lcores 0 and 1 anew for every process start, near each other "
             f"or far apart, and the pipeline's throughput follows it. tqfwd measures one cache line's one-way "
             f"trip between the two lcores as forwarding starts and after it stops (`lcore_trip_ns`): a run is "
             f"**near** when the trip is below {NEAR_NS:.0f} ns at both the start and the end of the run, "
             f"**far** when it is {NEAR_NS:.0f} ns or more at both. Runs of mixed placement (the host moved a "
             f"vCPU while the run ran) and runs without the figures (?) are left out of this section; testpmd "
             f"and `-l 0` runs have one forwarding lcore and no placement. Figures are medians over the runs of "
             f"that placement (run count in brackets); ratios pair the n-th runs of a round, as above, only where "
             f"both had that placement (pair count in brackets). tqfwd runs with figures: near {t['near']}, far "
             f"{t['far']}, mixed {t['mixed']}, ? {t['?']}" + (f", one lcore {t['n/a']}" if t["n/a"] else "")
             + ". The targets use every run; their near and far figures are under each target.\n")
    L.append("| traffic | point | placement | tq Mpps | ring Mpps | ring-copy Mpps | tq/ring | tq/ring-copy "
             "| tq / ring p99 µs |")
    L.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
    places = bp["places"]
    for i, e0 in enumerate(places[PLACES[0]]["points"]):
        for place in PLACES:
            e = places[place]["points"][i]
            cs = e["contenders"]
            if not any(x["runs"] for x in cs.values()):
                continue

            def g(cn):
                x = cs.get(cn)
                return cell(x["tx_mpps"], x["runs"]) if x else "–"

            def rr(cn):
                st = e["ratios"].get(cn)
                return cell(st["ratio"], st["pairs"], 3) if st else "–"

            def p99(cn):
                x = cs.get(cn)
                return fmt(us(x["p99_ns"]), 1) if x and x["runs"] else "–"
            L.append(f"| {e['traffic']} | {md_cell(e['point'])} | {place} | {g('tq')} | {g('ring')} | "
                     f"{g('ring-copy')} | {rr('ring')} | {rr('ring-copy')} | {p99('tq')} / {p99('ring')} |")
    L.append("")
    costs = [(place, cn, x) for place in PLACES for cn, x in places[place]["cost"].items() if x["runs"]]
    if costs:
        io = costs[0][2]["testpmd_io_cycles_per_rx_packet"]
        L.append(f"Cost at the null default point, busy TSC cycles per forwarded packet (testpmd io: "
                 f"{fmt(io, 1)}, all its runs):\n")
        L.append("| backend | placement | runs | whole pipeline | per lcore | RX+TX lcore | RX+TX ÷ testpmd io |")
        L.append("|---|---|---:|---:|---|---:|---:|")
        for place, cn, x in sorted(costs, key=lambda t: (("tq", "ring").index(t[1]), PLACES.index(t[0]))):
            per = " + ".join(f"{l['busy_cycles_per_rx_packet']:.1f} ({l['roles']})" for l in x["lcores"]
                             if l["busy_cycles_per_rx_packet"] is not None) or "–"
            L.append(f"| {cn} | {place} | {x['runs']} | {fmt(x['busy_cycles_per_rx_packet'], 1)} | {per} | "
                     f"{fmt(x['rx_tx_lcore_cycles_per_rx_packet'], 1)} | {fmt(x['rx_tx_lcore_vs_testpmd_io'], 2)} |")
        L.append("")
    ovs = [(place, cn, x) for place in PLACES for cn, x in places[place]["overload"].items()
           if x["wait_runs"] or x["drop_runs"]]
    if ovs:
        L.append("Overload, --on-full drop ÷ wait (null, default point):\n")
        L.append("| backend | placement | wait Mpps | drop Mpps | ratio of medians | median of paired ratios |")
        L.append("|---|---|---:|---:|---:|---:|")
        for place, cn, x in sorted(ovs, key=lambda t: (("tq", "ring").index(t[1]), PLACES.index(t[0]))):
            L.append(f"| {cn} | {place} | {cell(x['wait_mpps'], x['wait_runs'])} | "
                     f"{cell(x['drop_mpps'], x['drop_runs'])} | {fmt(x['ratio_of_medians'], 3)} | "
                     f"{cell(x['paired_ratio'], x['pairs'], 3)} |")
        L.append("")
    lds = [(place, e) for e0 in places[PLACES[0]]["loads"] for place in PLACES
           for e in places[place]["loads"] if e["point"] == e0["point"] and (e["tq"]["runs"] or e["ring"]["runs"])]
    if lds:
        L.append("Latency below saturation (--rx-rate), p50 / p90 / p99 µs:\n")
        L.append("| load | placement | tq | ring | tq ÷ ring p50 | tq ÷ ring p90 |")
        L.append("|---|---|---:|---:|---:|---:|")
        for place, e in lds:
            def q(cn):
                x = e[cn]
                if not x["runs"]:
                    return "–"
                return " / ".join(fmt(us(x[k]), 1) for k in ("p50", "p90", "p99")) + f" ({x['runs']})"
            L.append(f"| {e['point'].split()[1]} % | {place} | {q('tq')} | {q('ring')} | {fmt(e['p50_ratio'], 2)} | "
                     f"{fmt(e['p90_ratio'], 2)} |")
        L.append("")
    return L


def report_configs(cfgs, summ, placements=None) -> list[str]:
    """Every configuration's medians, one row each, with its runs' host
    placements (near/far/mixed)."""
    placements = placements or {}
    L = []
    L.append("## Every configuration\n")
    L.append("| contender | traffic | point | rx Mpps | tx Mpps (min–max) | drops by reason (all rounds) "
             "| p50 / p90 / p99 / p99.9 / max µs | busy cyc/pkt per lcore | busy ratio | idle polls (M) "
             "| busy cyc per rx pkt | mbufs in use | ok runs | placement (near/far/mixed) |")
    L.append("|---|---|---|---:|---:|---|---|---|---|---|---:|---:|---:|---:|")
    for c in cfgs:
        s = summ[c.key]
        pc = placement_cell(placements.get(c.key))
        if "tx_mpps" not in s:
            L.append(f"| {c.contender} | {c.traffic} | {md_cell(c.point)} | FAILED |||||||||"
                     f"{s['rounds_ok']}/{s['rounds']} | {pc} |")
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
                 f"{s['rounds_ok']}/{s['rounds']} | {pc} |")
    L.append("")
    L.append("placement: the runs with figures whose two lcores the host placed near, far, or first one then "
             "the other (mixed), from tqfwd's `lcore_trip_ns` (see By host placement); `+n ?`: runs without "
             "the figures; n/a: one forwarding lcore (testpmd, `-l 0`). busy cyc/pkt per lcore: tqfwd's `busy_cycles_per_packet` (busy-poll cycles / packets the lcore "
             "handled, counting each role it holds). busy cyc per rx pkt: all lcores' busy cycles / packets "
             "received; for testpmd its `--record-core-cycles` \"CPU cycles/packet\" (same definition: "
             "cycles of polls that received packets / packets received).\n")
    return L


def report_targets(targets) -> list[str]:
    """The targets with their verdicts (MET, MISSED or n/a), each with its
    near and far figures (by host placement) under it where they exist."""
    L = []
    L.append("## Targets\n")
    for t in targets:
        L.append(f"- **{t['name']}**: {t['verdict']} — {t['detail']}")
        bp = t.get("by_placement")
        if bp:
            L.append("  - " + "; ".join(f"{p}: {bp[p]}" for p in PLACES if p in bp))
    L.append("")
    return L


def report_perf(perf) -> list[str]:
    """perf record / perf stat of tq and ring (full mode)."""
    L = []
    if perf:
        L.append("## perf (tq and ring, net_null, default point)\n")
        for name, pf in perf.items():
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
    return L


def report_failures(runs, redrawn=None) -> list[str]:
    """Every failed run with its error, those set aside by a redraw too."""
    L = []
    fails = [f"{k} round {i + 1}: {r['error']}" for k, rs in runs.items() for i, r in enumerate(rs) if "error" in r]
    fails += [f"{k} round {r['redraw_of_round']} (redrawn, attempt {r['attempt']}): {r['error']}"
              for k, rs in (redrawn or {}).items() for r in rs if "error" in r]
    if fails:
        L.append("## Failed runs\n")
        L.extend(f"- {f}" for f in fails)
        L.append("")
    return L


def perf_text(perf, header: str = "") -> str:
    """pipeline-<date>-perf.txt: every perf record / perf stat output."""
    out = header
    for name, pf in perf.items():
        out += f"== {name}: {pf.get('record_cmd', '')}\n"
        out += "samples per thread: " + "; ".join(pf.get("threads", [])) + "\n"
        out += "\n".join(pf.get("top", [])) + "\n"
        out += f"== {name}: by thread and library\n" + "\n".join(pf.get("thread_dso", [])) + "\n"
        out += f"== {name}: by source line\n" + "\n".join(pf.get("top_srcline", [])) + "\n"
        out += f"== {name}: {pf.get('stat_cmd', '')}\n"
        out += "\n".join(pf.get("summary", []) + pf.get("stat", [])) + "\n\n"
    return out


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
