#!/usr/bin/env python3
"""Bursty producers into one consumer: what the shared topology's fixed
per-producer shares cost, against the alternatives a user can pick.

    bench/shares.py [--tqfwd BINARY] [--runs N] [--producers K] [--frames F] [--depth D]

K RX lcores (default 3) each receive one burst of F frames (default
1000: a pcap per RX queue of `net_pcap0`, read once) into one worker,
which hands them to a TX lcore (`net_pcap0`'s `tx_pcap`). K + 1 lcores
are mapped onto this machine's two CPUs with EAL's `--lcores` (the RX
lcores alternate between the CPUs, the worker on the last one), so a
producer often finds the worker preempted: its queue fills at the rate
the burst arrives, and what does not fit is dropped (`--on-full drop`,
after `--drop-after`, default 1 ms) or waits (`--on-full wait`). Each
configuration runs N times (default 4); printed per configuration:
forwarded frames (min and max over the runs) of K x F, the drops by
reason, and the hand-off capacity each producer can fill (its share).

Configurations: tq shared at --depth D (shares of D / K), tq shared at
the power of two from K x D (shares of at least D), tq sharded at D (a queue of D per producer), the ring shared at D
(one ring of D all producers fill), tq shared at D with `--on-full wait`.
Each run must end with conservation and 0 mbufs in use, or the script
says so and exits 1. bench/README.md ("Shared queues and bursty
producers") gives a run's output and what it decides.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def gen(path, frames, first_flow):
    """A pcap of `frames` 64-byte UDP frames over 64 flows."""
    gen_bin = os.path.join(ROOT, "target", "release", "tqfwd-gen")
    subprocess.run(
        [gen_bin, "--out", path, "--flows", "64", "--packets", str(frames), "--size", "64"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def run(binary, tmp, k, files, empty, depth, extra, tag):
    """One forwarder run: RX lcores 0..k-1 (lcore i reads `files[i]` on
    port 0), the worker on lcore k, TX on lcore 0; returns its
    --stats-json and command."""
    lcores = ",".join(f"{i}@{i % 2}" for i in range(k)) + f",{k}@{k % 2}"
    rx0 = ",".join(f"rx_pcap={f}" for f in files)
    rx1 = ",".join(f"rx_pcap={empty}" for _ in files)
    out0 = os.path.join(tmp, f"out0-{tag}.pcap")
    out1 = os.path.join(tmp, f"out1-{tag}.pcap")
    js = os.path.join(tmp, f"{tag}.json")
    cmd = [
        binary, "--lcores", lcores, "--no-pci", "--in-memory", "--file-prefix", f"shares{os.getpid()}{tag}",
        f"--vdev=net_pcap0,{rx0},tx_pcap={out0}",
        f"--vdev=net_pcap1,{rx1},tx_pcap={out1}",
        "--",
        "--rx-lcores", f"0-{k - 1}", "--worker-lcores", str(k), "--tx-lcores", "0",
        "--depth", str(depth), "--stats-interval", "0", "--stats-json", js,
        "--debug-exit-when-idle", "300", "--duration", "30",
    ] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"shares: {' '.join(cmd)} exited {p.returncode}\n{p.stderr[-2000:]}")
    with open(js) as f:
        j = json.load(f)
    if not j["conservation_ok"] or j["mbufs_in_use"] != 0:
        sys.exit(f"shares: conservation or mbufs in use failed: {' '.join(cmd)}\n{json.dumps(j)[:2000]}")
    return j, cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tqfwd", default=os.path.join(ROOT, "target", "release", "tqfwd"))
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=2048)
    a = ap.parse_args()
    k, d = a.producers, a.depth
    # The next power of two that gives each producer the whole of D.
    big = 1 << (k * d - 1).bit_length()
    configs = [
        (f"tq shared, depth {d}", d, ["--topology", "shared"], d // k),
        (f"tq shared, depth {big}", big, ["--topology", "shared"], big // k),
        (f"tq sharded, depth {d}", d, ["--topology", "sharded"], d),
        (f"ring shared, depth {d}", d, ["--backend", "ring", "--topology", "shared"], d),
        (f"tq shared, depth {d}, --on-full wait", d, ["--topology", "shared", "--on-full", "wait"], d // k),
    ]
    with tempfile.TemporaryDirectory(prefix="tqfwd-shares-") as tmp:
        files = []
        for i in range(k):
            f = os.path.join(tmp, f"in{i}.pcap")
            gen(f, a.frames, i * 1000)
            files.append(f)
        empty = os.path.join(tmp, "empty.pcap")
        gen(empty, 0, 0)
        print(f"{k} RX lcores x {a.frames} frames into one worker, lcores {k + 1} on 2 CPUs, {a.runs} runs each")
        print(f"{'configuration':42} {'share':>6} {'forwarded (min-max)':>20}  drops by reason")
        last_cmd = None
        for name, depth, extra, share in configs:
            fwd, reasons = [], {}
            for r in range(a.runs):
                tag = f"{len(configs)}-{depth}-{'-'.join(extra)}-{r}".replace("--", "")
                j, last_cmd = run(a.tqfwd, tmp, k, files, empty, depth, extra, tag)
                fwd.append(j["tx_packets"])
                for reason, n in j["drops"].items():
                    if n:
                        reasons[reason] = reasons.get(reason, 0) + n
            total = k * a.frames
            drops = ", ".join(f"{r} {n / a.runs:.0f}/run" for r, n in sorted(reasons.items())) or "none"
            print(f"{name:42} {share:>6} {min(fwd):>9}-{max(fwd):<5} of {total}  {drops}")
        print("\nlast command:", " ".join(last_cmd))



if __name__ == "__main__":
    main()
