"""The pipeline bench's chart (pipeline-<date>.svg), drawn by hand.

Why by hand: the bench runs on the project's build machines, where
matplotlib is not installed and scripts/install-deps.sh does not install
it; the chart is two bar panels, which plain SVG text does in ~100 lines.

What it draws (1100 × 480 px): left, forwarded Mpps (median) per contender
at burst 8 / 32 / 64 on net_null and burst 32 on net_pcap (linear axis);
right, tqfwd's RX→TX latency percentiles p50 / p90 / p99 / p99.9 in µs for
tq and ring at the default point (log axis); a legend and a footer with the
run's stamp, rounds, EAL memory and load. A bar without a figure is left
out; a panel without any says "no data". Every bar has a <title> tooltip
with its value.

Redraw the chart of a results JSON (written next to it, .json -> .svg):
    python3 bench/report_svg.py bench/results/pipeline-<date>.json
"""

from __future__ import annotations

import json
import math
import sys

from pipeline_model import CONTENDERS, LATENCY_SAMPLE, Cfg, us


COLORS = {"tq": "#1f77b4", "ring": "#ff7f0e", "ring-copy": "#d62728", "testpmd-mac": "#2ca02c",
          "testpmd-io": "#7f7f7f"}


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
        o.append(f'<rect x="{lx}" y="{H - 48}" width="12" height="12" fill="{COLORS.get(c, "#999")}"/>')
        o.append(f'<text x="{lx + 16}" y="{H - 38}" font-size="12">{c}</text>')
        lx += 120
    o.append(f'<text x="70" y="{H - 14}" font-size="11" fill="#555">{esc(meta["stamp"])}: {meta["rounds"]} rounds × '
             f'{meta["seconds"]} s, {esc(meta["mem_note"])}; load avg before {esc(meta["quiet_check"]["loadavg"])}; '
             f'tqfwd with --latency --latency-sample {LATENCY_SAMPLE}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def render_file(path: str) -> str:
    """Redraws the chart of a results JSON next to it; returns the SVG's path."""
    with open(path) as f:
        doc = json.load(f)
    cfgs = [Cfg(**s["config"]) for s in doc["summary"].values()]
    out = path[:-len(".json")] + ".svg"
    with open(out, "w") as f:
        f.write(svg_chart(doc["meta"], cfgs, doc["summary"]))
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].endswith(".json"):
        sys.exit("usage: python3 bench/report_svg.py RESULTS.json")
    print(f"wrote {render_file(sys.argv[1])}")
