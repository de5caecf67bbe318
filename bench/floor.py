#!/usr/bin/env python3
"""The RX+TX lcore beside its anchors: testpmd io, the floor of a pipeline
built from DPDK's own primitives (bench/pipe_floor.c), and tqfwd.

    bench/floor.py [--rounds N] [--seconds S] [--batch B] [--tqfwd BINARY] [--tqfwd-opts "OPTS"]

Each round runs, back to back and rotating which goes first:
- testpmd io (`--burst=32 --record-core-cycles`): its busy cycles per packet;
- pipe_floor with a worker that does nothing (`none`), that rewrites the
  MACs where rte_pktmbuf_mtod() says the frame is (`mtod`: a read of the
  mbuf header on the worker's core, as a DPDK worker finds its frame), and
  that rewrites them at the frame's fixed place (`frame`: no header read,
  as tqfwd's worker finds it from its queue word);
- tqfwd (default two-lcore layout, `--on-full wait --latency
  --latency-sample 16` unless `--tqfwd-opts` says otherwise).
All on two net_null 64-byte ports, lcores 0-1, PMD bursts of 32; pipe_floor
hands packets on in batches of B (default 64, tqfwd's default
`--handoff-batch`; tqfwd gets `--handoff-batch B` when --batch is given),
as tqfwd does: a batch is received in PMD bursts for as long as the port
fills them, and transmitted in PMD bursts. Printed per
contender: the median of the RX+TX lcore's busy cycles per forwarded packet,
of its paired ratio to testpmd io's (same round), and of forwarded Mpps
(not read for testpmd: bench/pipeline.sh does).
pipe_floor is compiled here (cc, pkg-config libdpdk) into a temporary
directory. Every run must end with 0 mbufs in use (tqfwd: and conservation),
or the script says so and exits 1.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab import eal_memory, run as run_tqfwd  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PORTS = ["--vdev=net_null0,size=64", "--vdev=net_null1,size=64"]


def eal(prefix):
    return ["-l", "0-1", "--no-pci", *eal_memory(), "--file-prefix", prefix, *PORTS]


def build_floor(tmp):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        sys.exit("floor: no C compiler (cc, gcc or clang) for bench/pipe_floor.c")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libdpdk"], text=True,
                           stdout=subprocess.PIPE, check=True).stdout.split()
    out = os.path.join(tmp, "pipe_floor")
    subprocess.run([cc, "-O3", "-march=native", os.path.join(HERE, "pipe_floor.c"), *flags,
                    "-o", out], check=True)
    return out


def run_testpmd(seconds, seq):
    cmd = ["timeout", "-s", "INT", str(seconds + 2), "dpdk-testpmd", *eal(f"fl{os.getpid()}-{seq}"),
           "--", "--forward-mode=io", "--auto-start", "--stats-period", "100", "--burst=32",
           "--rxd=1024", "--txd=1024", "--record-core-cycles"]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=seconds + 60)
    cyc = re.findall(r"CPU cycles/packet=([\d.]+)", p.stdout)
    if not cyc:
        sys.exit(f"floor: no cycles from: {' '.join(cmd)}\n{p.stdout[-2000:]}")
    # Its cycles are the anchor; its rate is not read (bench/pipeline.sh does).
    return {"cyc": float(cyc[-1]), "mpps": float("nan"), "ok": True}


def run_floor(binary, touch, seconds, batch, seq):
    cmd = [binary, *eal(f"fl{os.getpid()}-{seq}"), "--log-level=3", "--", str(seconds), touch, str(batch)]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=seconds + 60)
    m = re.search(r'"mpps": ([\d.]+), "rxtx_cycles_per_packet": ([\d.]+), '
                  r'"worker_cycles_per_packet": ([\d.]+).*"mbufs_in_use": (\d+)', p.stdout)
    if p.returncode != 0 or not m:
        sys.exit(f"floor: pipe_floor failed: {' '.join(cmd)}\n{p.stdout[-2000:]}")
    return {"cyc": float(m[2]), "mpps": float(m[1]), "worker": float(m[3]), "ok": m[4] == "0"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3, help="measured seconds per run (default 3)")
    ap.add_argument("--batch", type=int, help="hand-off batch (default 64, tqfwd's default)")
    ap.add_argument("--tqfwd", default=os.path.join(HERE, "..", "target", "release", "tqfwd"))
    ap.add_argument("--tqfwd-opts", default="--on-full wait --latency --latency-sample 16")
    a = ap.parse_args()
    if not os.access(a.tqfwd, os.X_OK):
        sys.exit(f"floor: no tqfwd binary at {a.tqfwd} (cargo build --release, or --tqfwd)")
    if a.batch is not None and not 1 <= a.batch <= 256:
        sys.exit("floor: --batch is 1 to 256 packets")
    batch = a.batch or 64
    tq_opts = a.tqfwd_opts.split() + (["--handoff-batch", str(batch)] if a.batch else [])
    tq_args = SimpleNamespace(pcap=None, pcap_queues=1, lcores="0-1", seconds=a.seconds)
    names = ["testpmd-io", "floor-none", "floor-mtod", "floor-frame", "tqfwd"]
    res = {n: [] for n in names}
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        floor = build_floor(tmp)
        seq = 0
        for r in range(a.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                seq += 1
                if name == "testpmd-io":
                    x = run_testpmd(a.seconds, seq)
                elif name == "tqfwd":
                    t = run_tqfwd(a.tqfwd, tq_opts, tq_args, seq, tmp)
                    x = {"cyc": t["per"][0], "mpps": t["mpps"], "worker": t["per"][1], "ok": t["ok"]}
                else:
                    x = run_floor(floor, name.split("-")[1], a.seconds, batch, seq)
                res[name].append(x)
                bad += not x["ok"]
                print(f"round {r} {name:12s} {x['cyc']:6.1f} cyc/pkt on the RX+TX lcore  {x['mpps']:6.2f} Mpps"
                      f"{'' if x['ok'] else '  END CHECK FAILED'}", flush=True)
    print(f"\n{'contender':12s} {'RX+TX cyc/pkt':>14s} {'x testpmd io (paired)':>22s} {'Mpps':>7s}")
    for name in names:
        xs = res[name]
        cyc = statistics.median(x["cyc"] for x in xs)
        ratio = statistics.median(x["cyc"] / t["cyc"] for x, t in zip(xs, res["testpmd-io"]))
        mpps = statistics.median(x["mpps"] for x in xs)
        print(f"{name:12s} {cyc:14.1f} {ratio:22.2f} {mpps:7.2f}")
    if bad:
        sys.exit(f"floor: {bad} run(s) ended with mbufs in use or without conservation")


if __name__ == "__main__":
    main()
