#!/usr/bin/env python3
"""Driver of bench/l3fwd.sh: tqfwd's L3 mode (--routes) against DPDK's l3fwd.

Called by bench/l3fwd.sh, which builds l3fwd (dpdk-doc's example with
bench/l3fwd.patch), reserves huge pages and picks the EAL memory mode; see
its --help and bench/README.md, "Against DPDK's l3fwd". Python 3.11
standard library only, like the rest of bench/.

Per table ("16": 16 routes, 1024 flows; "1m": 1,000,000 routes, 65,536
flows) and round, every contender runs once, back to back, the first one
rotating from round to round, on the same two ports and the same traffic.
A run: start the program; poll DPDK telemetry (`/ethdev/stats,N` on the
process's dpdk_telemetry.v2 socket) until its ports have transmitted
something (the time to get there is the run's start-up: EAL, the route
table, the ports); wait WARMUP s; read every port's stats; wait S s; read
them again; SIGINT. Forwarded Mpps = the ports' opackets over that window.
Cycles per forwarded packet: l3fwd and testpmd poll without pause under
this load, so each of their lcores spends TSC Hz cycles a second:
TSC Hz x lcores / forwarded pps. tqfwd reports its own busy cycles per
lcore in --stats-json (whole run), as bench/ab.py reads them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import shlex
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

from pipeline import cpu_busy, foreign_processes, loadavg, wait_for_others, wait_quiet
from pipeline_model import NEAR_NS, placement

SCHEMA = "tqfwd-l3fwd-bench/1"
WARMUP_S = 1.0
# Start-up allowed, per table: EAL, the route table, the ports. DPDK 22.11's
# rte_lpm_add scans the rules of the new rule's depth one by one, so l3fwd
# LPM takes minutes for the 1M table (about 6 on a busy 2-vCPU guest).
START_TIMEOUT_S = {"16": 120.0, "1m": 1800.0}
# Every contender's mbuf pool: net_pcap's infinite_rx keeps every frame of
# its file in mbufs of the RX queue's pool, 65,536 per port with the 1M
# traffic; l3fwd's floor is the same (bench/l3fwd.patch, (c)).
MBUFS = 2 * 65536 + 16384
BASE = "l3fwd-lpm-1"

# name -> (label, kind, lcores the cycles formula counts)
CONTENDERS = {
    "l3fwd-lpm-1": ("l3fwd LPM 1 lcore", "l3fwd", 1),
    "l3fwd-lpm-2": ("l3fwd LPM 2 lcores", "l3fwd", 2),
    "l3fwd-fib-1": ("l3fwd FIB 1 lcore", "l3fwd", 1),
    "testpmd-io": ("testpmd io, 1 forwarding lcore", "testpmd", 1),
    "tqfwd-tq": ("tqfwd --routes, --backend tq", "tqfwd", 2),
    "tqfwd-ring": ("tqfwd --routes, --backend ring", "tqfwd", 2),
    "tqfwd-copy": ("tqfwd --routes, --backend ring --handoff copy", "tqfwd", 2),
    "tqfwd-l2": ("tqfwd L2 (no --routes), --backend tq", "tqfwd", 2),
}
ROUTED = {"tqfwd-tq", "tqfwd-ring", "tqfwd-copy"}
SHORT = {"tqfwd-tq": "tq", "tqfwd-ring": "ring", "tqfwd-copy": "ring copy", "tqfwd-l2": "L2 (no lookup)"}
TABLES = {"16": "16 routes, 1024 flows", "1m": "1,000,000 routes, 65,536 flows"}


def log(msg: str):
    print(f"l3fwd.sh: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- traffic

# Prefix lengths of the 1M table, per million: mostly /24 and shorter as in
# a real IPv4 table (/24 about 60 %, then /22, /23, /21, /20 ...), 2 % longer.
LEN_PER_MILLION = {
    8: 10, 9: 20, 10: 50, 11: 150, 12: 400, 13: 800, 14: 1400, 15: 2170,
    16: 13000, 17: 10000, 18: 15000, 19: 25000, 20: 40000, 21: 50000, 22: 120000, 23: 100000,
    24: 602000,
    25: 6000, 26: 4000, 27: 3000, 28: 2000, 29: 2000, 30: 1500, 31: 500, 32: 1000,
}
assert sum(LEN_PER_MILLION.values()) == 1_000_000

# IPv6 lines of both tables (l3fwd refuses an empty --rule_ipv6 file; the
# traffic is IPv4 only).
V6_ROUTES = [("2001:db8::", 48, 0), ("2001:db8:1::", 48, 1), ("2001:db8:100::", 40, 0),
             ("2001:db8:200::", 40, 1)]
# The 16-route table: the traffic's two /24s (testbed.md) and 14 others that
# none of its destinations falls in.
ROUTES16 = [("198.18.0.0", 24, 0), ("198.18.1.0", 24, 1),
            ("198.18.2.0", 24, 0), ("198.18.3.0", 24, 1), ("198.18.4.0", 22, 0), ("198.18.8.0", 21, 1),
            ("198.18.64.0", 18, 0), ("198.18.128.0", 17, 1), ("198.51.100.0", 24, 0),
            ("203.0.113.0", 24, 1), ("192.0.2.0", 25, 0), ("192.0.2.128", 25, 1), ("10.0.0.0", 8, 0),
            ("172.16.0.0", 12, 1), ("100.64.0.0", 10, 0), ("192.168.0.0", 16, 1)]
assert len(ROUTES16) == 16

SRC_MAC = bytes([0x02, 0, 0, 0, 0, 0x01])  # tqfwd-gen's defaults
DST_MAC = bytes([0x02, 0, 0, 0, 0, 0x02])
DST_PORT = 9000


def ip4(s: str) -> int:
    return struct.unpack("!I", socket.inet_aton(s))[0]


def ip4s(v: int) -> str:
    return socket.inet_ntoa(struct.pack("!I", v))


def csum(b: bytes) -> int:
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(src: int, dst: int, sport: int) -> bytes:
    """A 64-byte IPv4/UDP frame without its FCS: 60 bytes."""
    payload = bytes(18)
    udp = struct.pack("!HHHH", sport, DST_PORT, 8 + len(payload), 0)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), 0, 0, 64, 17, 0,
                               struct.pack("!I", src), struct.pack("!I", dst)))
    ip[10:12] = struct.pack("!H", csum(bytes(ip)))
    return DST_MAC + SRC_MAC + b"\x08\x00" + bytes(ip) + udp + payload


def write_pcap(path: str, frames: list[bytes]):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1_000_000, i % 1_000_000, len(fr), len(fr)))
            f.write(fr)


def write_routes(base: str, v4: list[tuple[int, int, int]]) -> dict:
    """base.routes (both families: tqfwd --routes), base.v4 and base.v6
    (l3fwd --rule_ipv4 / --rule_ipv6); l3fwd's format, `R<prefix>/<len> <port>`."""
    v4_lines = [f"R{ip4s(p)}/{l} {port}\n" for p, l, port in v4]
    v6_lines = [f"R{p}/{l} {port}\n" for p, l, port in V6_ROUTES]
    with open(base + ".v4", "w") as f:
        f.writelines(v4_lines)
    with open(base + ".v6", "w") as f:
        f.writelines(v6_lines)
    with open(base + ".routes", "w") as f:
        f.writelines(v4_lines)
        f.writelines(v6_lines)
    return {"routes": base + ".routes", "v4": base + ".v4", "v6": base + ".v6",
            "v4_routes": len(v4_lines), "v6_routes": len(v6_lines)}


def valid_first_octet(o: int) -> bool:
    return 1 <= o <= 223 and o != 127


def million_routes(rng: random.Random) -> list[tuple[int, int, int]]:
    """1,000,000 distinct IPv4 prefixes, host bits clear, ports 0/1 at random."""
    seen: set[tuple[int, int]] = set()
    out = []
    for length, n in LEN_PER_MILLION.items():
        got = 0
        while got < n:
            p = rng.getrandbits(length) << (32 - length)
            if not valid_first_octet(p >> 24) or (p, length) in seen:
                continue
            seen.add((p, length))
            out.append((p, length, rng.getrandbits(1)))
            got += 1
    rng.shuffle(out)
    return out


def make_traffic(work: str, tables: list[str], seed: int) -> dict:
    out = {}
    if "16" in tables:
        t0 = time.time()
        v4 = [(ip4(p), l, port) for p, l, port in ROUTES16]
        files = write_routes(os.path.join(work, "routes16"), v4)
        # 1024 flows, 512 to each of 198.18.0.0/24 and 198.18.1.0/24,
        # round-robin, 8 frames per flow (as bench/pipeline.sh's pcap)
        flows = [(ip4("10.0.0.0") + i, ip4("198.18.0.0") + ((i & 1) << 8) + (i >> 1), 1024 + i)
                 for i in range(1024)]
        pcap = os.path.join(work, "udp64-16routes.pcap")
        write_pcap(pcap, [frame(*flows[j % 1024]) for j in range(8192)])
        files.update(pcap=pcap, flows=1024, frames=8192, gen_s=round(time.time() - t0, 2),
                     what="16 routes (198.18.0.0/24 -> 0, 198.18.1.0/24 -> 1 and 14 others no flow "
                          "falls in) + 4 IPv6; 1024 UDP flows to the two /24s, 8192 frames of 60 B "
                          "(64 B on the wire), round-robin")
        out["16"] = files
    if "1m" in tables:
        t0 = time.time()
        rng = random.Random(seed)
        v4 = million_routes(rng)
        files = write_routes(os.path.join(work, "routes1m"), v4)
        frames = []
        for i in range(65536):
            p, length, _ = v4[rng.randrange(len(v4))]
            dst = p | (rng.getrandbits(32 - length) if length < 32 else 0)
            frames.append(frame(ip4("10.0.0.0") + i, dst, 1024 + i % 60000))
        pcap = os.path.join(work, "udp64-1mroutes.pcap")
        write_pcap(pcap, frames)
        lens = {}
        for _, length, _ in v4:
            lens[length] = lens.get(length, 0) + 1
        longer24 = len({p >> 8 for p, length, _ in v4 if length > 24})
        files.update(pcap=pcap, flows=65536, frames=65536, seed=seed, gen_s=round(time.time() - t0, 2),
                     prefix_lengths={str(k): v for k, v in sorted(lens.items())},
                     slash24s_with_longer_prefixes=longer24,
                     what=f"1,000,000 random distinct IPv4 prefixes (seed {seed}; /8-/23 "
                          f"{sum(v for k, v in lens.items() if k < 24):,}, /24 {lens.get(24, 0):,}, "
                          f"/25-/32 {sum(v for k, v in lens.items() if k > 24):,}; first octet 1-223 "
                          f"but 127; host bits clear; port 0 or 1 at random) + 4 IPv6; 65,536 UDP "
                          f"flows, each to a random address inside a route drawn at random, one "
                          f"60-byte frame per flow")
        out["1m"] = files
    for t, f in out.items():
        f["sha256_16"] = {k: sha16(f[k]) for k in ("routes", "pcap")}
        log(f"traffic {t}: {f['v4_routes']:,} IPv4 + {f['v6_routes']} IPv6 routes, {f['frames']:,} frames "
            f"({f['gen_s']} s to generate)")
    return out


def sha16(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- telemetry


class Telemetry:
    """DPDK telemetry v2 of one process (as usertools/dpdk-telemetry.py):
    a SOCK_SEQPACKET socket, a JSON greeting, then one JSON reply per
    command."""

    def __init__(self, prefix: str):
        base = "/var/run/dpdk" if os.geteuid() == 0 else \
            os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
        self.path = os.path.join(base, prefix, "dpdk_telemetry.v2")
        self.sock = None
        self.bufsize = 16384

    def connect(self) -> bool:
        if self.sock:
            return True
        if not os.path.exists(self.path):
            return False
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(5)
        try:
            s.connect(self.path)
            hello = json.loads(s.recv(self.bufsize).decode())
            self.bufsize = max(self.bufsize, int(hello.get("max_output_len", 16384)))
        except (OSError, ValueError):
            s.close()
            return False
        self.sock = s
        return True

    def cmd(self, c: str):
        self.sock.send(c.encode())
        return json.loads(self.sock.recv(self.bufsize).decode())

    def port_ids(self) -> list[int]:
        r = self.cmd("/ethdev/list").get("/ethdev/list")
        return list(r) if isinstance(r, list) else []

    def stats(self, ports: list[int]) -> dict | None:
        """{port: (ipackets, opackets, imissed)}, the time read (midpoint),
        or None while a port has none (not configured yet)."""
        t0 = time.monotonic()
        out = {}
        for p in ports:
            r = self.cmd(f"/ethdev/stats,{p}").get("/ethdev/stats")
            if not isinstance(r, dict):
                return None
            out[p] = (r["ipackets"], r["opackets"], r["imissed"])
        return {"t": (t0 + time.monotonic()) / 2, "ports": out}

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None


# ---------------------------------------------------------------- runs


class Bench:
    def __init__(self, a, traffic: dict):
        self.a = a
        self.traffic = traffic
        self.seq = 0
        self.mem = a.mem.split()
        self.routes_refused: str | None = None  # tqfwd's words when it refuses --routes
        self.tqfwd_missing = not (a.tqfwd and os.access(a.tqfwd, os.X_OK))

    def ports(self, table: str) -> list[str]:
        if self.a.ports:
            return shlex.split(self.a.ports)
        # Two rx_pcap per port: net_pcap gives one (dropping) TX queue per
        # RX pcap, and l3fwd on 2 lcores opens a TX queue per lcore on
        # every port. Every contender gets these ports; those that set up
        # one RX and one TX queue per port leave the second pair unused.
        f = self.traffic[table]["pcap"]
        return [f"--vdev=net_pcap{i},rx_pcap={f},rx_pcap={f},infinite_rx=1" for i in (0, 1)]

    def eal(self, lcores: str, table: str, prefix: str) -> list[str]:
        pci = [] if self.a.ports else ["--no-pci"]
        return ["-l", lcores, *pci, *self.mem, "--file-prefix", prefix, *self.ports(table)]

    def command(self, name: str, table: str, prefix: str, jpath: str) -> list[str]:
        t = self.traffic[table]
        if name.startswith("l3fwd-"):
            _, lookup, n = name.split("-")
            config = "(0,0,0),(1,0,0)" if n == "1" else "(0,0,0),(1,0,1)"
            return [self.a.l3fwd, *self.eal("0" if n == "1" else "0-1", table, prefix),
                    "--log-level=lib.eal:debug", "--",
                    "-p", "0x3", f"--config={config}", "--parse-ptype", f"--lookup={lookup}",
                    f"--rule_ipv4={t['v4']}", f"--rule_ipv6={t['v6']}"]
        if name == "testpmd-io":
            return ["dpdk-testpmd", *self.eal("0-1", table, prefix), "--log-level=lib.eal:debug", "--",
                    "--forward-mode=io", "--auto-start", "--stats-period", "1", "--burst=32",
                    "--rxd=1024", "--txd=1024", f"--total-num-mbufs={MBUFS}", "--record-core-cycles"]
        # --on-full wait: a full hand-off queue holds RX back and packets wait
        # in the port, as l3fwd and testpmd receive only what they forward
        # (tqfwd's default, drop, spends RX cycles on packets it then drops).
        app = ["--stats-json", jpath, "--mbufs", str(MBUFS), "--on-full", "wait"]
        app += {"tqfwd-tq": ["--routes", t["routes"], "--backend", "tq"],
                "tqfwd-ring": ["--routes", t["routes"], "--backend", "ring"],
                "tqfwd-copy": ["--routes", t["routes"], "--backend", "ring", "--handoff", "copy"],
                "tqfwd-l2": ["--backend", "tq"]}[name]
        return [self.a.tqfwd, *self.eal("0-1", table, prefix), "--", *app]

    def skip_reason(self, name: str) -> str | None:
        if CONTENDERS[name][1] != "tqfwd":
            return None
        if self.tqfwd_missing:
            return f"no tqfwd binary at {self.a.tqfwd} (cargo build --release --features testkit, or --build)"
        if name in ROUTED and self.routes_refused:
            return f"this tqfwd refuses --routes (exit 2: {self.routes_refused}): no L3 mode in this build"
        return None

    def run(self, name: str, table: str, rnd: int) -> dict:
        self.seq += 1
        prefix = f"l3b{os.getpid()}-{self.seq}"
        jpath = os.path.join(self.a.work, f"run-{self.seq}.json")
        logpath = os.path.join(self.a.work, f"run-{self.seq}.log")
        cmd = self.command(name, table, prefix, jpath)
        r = {"round": rnd + 1, "table": table, "contender": name, "cmd": shlex.join(cmd)}
        foreign = foreign_processes()
        if foreign and self.a.wait_quiet > 0:
            foreign, waited = wait_for_others(foreign)
            r["waited_for_others_s"] = round(waited, 1)
        tel = Telemetry(prefix)
        t_spawn = time.monotonic()
        with open(logpath, "w") as out:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        try:
            r.update(self.measure(p, tel, t_spawn, f"round {rnd + 1} {table} {name}", table))
        finally:
            tel.close()
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
                r.setdefault("error", "did not exit within 30 s of SIGINT: killed")
        r["rc"] = rc
        r["wall_s"] = round(time.monotonic() - t_spawn, 2)
        text, routes_logged = tail_text(logpath)
        if CONTENDERS[name][1] == "l3fwd":
            r["routes_logged"] = routes_logged  # l3fwd's "Adding route" lines: IPv4 + IPv6 routes added
        self.parse_output(name, r, text, jpath)
        if r.get("exited_early") and "error" not in r and not r.get("skipped"):
            r["error"] = f"exited ({rc}) before forwarding; last lines: " + \
                " | ".join(text.strip().splitlines()[-3:])
        if rc != 0 and "error" not in r and not r.get("skipped"):
            r["error"] = f"exit {rc}; last lines: " + " | ".join(text.strip().splitlines()[-3:])
        foreign = list(dict.fromkeys(foreign + foreign_processes()))
        if foreign:
            r["foreign_processes"] = foreign
        r["loadavg_after"] = loadavg()
        if "error" in r:
            os.makedirs(self.a.keep, exist_ok=True)
            keep = os.path.join(self.a.keep, f"l3fwd-{self.a.stamp}-failed-{self.seq}-{name}-{table}.log")
            with open(keep, "w") as f:
                f.write(text)
            r["log_tail_file"] = keep
        try:
            os.unlink(logpath)
        except OSError:
            pass
        return r

    def measure(self, p, tel: Telemetry, t_spawn: float, what: str, table: str) -> dict:
        """Waits for forwarding, then reads the window. Returns the figures,
        an "error", or "exited_early" when the program ended first."""
        ports = None
        told = 60.0
        while True:
            if p.poll() is not None:
                return {"exited_early": True}
            waited = time.monotonic() - t_spawn
            if waited > START_TIMEOUT_S[table]:
                return {"error": f"not forwarding {START_TIMEOUT_S[table]:.0f} s after start"}
            if waited > told:
                log(f"{what}: not forwarding yet after {waited:.0f} s (loading the route table?)")
                told += 60
            try:
                if tel.connect():
                    if not ports:
                        ports = tel.port_ids()
                    if ports:
                        s = tel.stats(ports)
                        if s and sum(v[1] for v in s["ports"].values()) > 0:
                            break
            except (OSError, ValueError, KeyError):
                tel.close()
            time.sleep(0.05)
        start_s = time.monotonic() - t_spawn
        time.sleep(WARMUP_S)
        try:
            s0 = tel.stats(ports)
            time.sleep(self.a.seconds)
            s1 = tel.stats(ports)
        except (OSError, ValueError, KeyError) as e:
            return {"error": f"telemetry failed in the window: {e}", "start_s": round(start_s, 2)}
        if not s0 or not s1:
            return {"error": "telemetry gave no stats in the window", "start_s": round(start_s, 2)}
        dt = s1["t"] - s0["t"]
        d = {q: [b - a for a, b in zip(s0["ports"][q], s1["ports"][q])] for q in ports}
        return {"start_s": round(start_s, 2), "window_s": round(dt, 4), "ports": ports,
                "tx_mpps": sum(v[1] for v in d.values()) / dt / 1e6,
                "rx_mpps": sum(v[0] for v in d.values()) / dt / 1e6,
                "imissed": sum(v[2] for v in d.values()),
                "per_port_tx_mpps": {str(q): v[1] / dt / 1e6 for q, v in d.items()}}

    def parse_output(self, name: str, r: dict, text: str, jpath: str):
        kind = CONTENDERS[name][1]
        m = re.search(r"TSC frequency is ~(\d+) KHz", text)
        if m:
            r["tsc_hz"] = int(m[1]) * 1000
        if kind == "testpmd":
            m = re.search(r"CPU cycles/packet=([\d.]+)", text)
            if m:
                r["testpmd_cycles_per_packet"] = float(m[1])
        if kind != "tqfwd":
            return
        m = re.search(r"TSC (\d+) Hz", text)
        if m:
            r["tsc_hz"] = int(m[1])
        if r.get("exited_early") and r.get("rc") == 2:
            if name in ROUTED and "--routes" in text:
                line = next((l.strip() for l in text.splitlines() if "--routes" in l), "")
                self.routes_refused = line[:200]
                r["skipped"] = self.skip_reason(name)
                return
            r["error"] = "tqfwd: usage error (exit 2): " + " | ".join(text.strip().splitlines()[-3:])
            return
        try:
            with open(jpath) as f:
                rep = json.load(f)
            os.unlink(jpath)
        except (OSError, ValueError):
            r.setdefault("error", "no --stats-json; last lines: " + " | ".join(text.strip().splitlines()[-3:]))
            return
        tx = max(rep["tx_packets"], 1)
        lc = []
        for l in rep["lcores"]:
            handled = l["rx_packets"] + l["worker_packets"] + l["tx_packets"]
            lc.append({"lcore": l["lcore"], "roles": "+".join(l["roles"]),
                       "busy_cycles_per_packet": l["busy_cycles_per_packet"],
                       "busy_ratio": l.get("busy_ratio"),
                       "cycles_per_forwarded_packet": l["busy_cycles_per_packet"] * handled / tx})
        r["lcores"] = lc
        r["cycles_per_packet"] = sum(x["cycles_per_forwarded_packet"] for x in lc)
        r["rx_packets"], r["tx_packets"] = rep["rx_packets"], rep["tx_packets"]
        r["drops_total"] = rep["drops_total"]
        r["conservation_ok"], r["mbufs_in_use"] = rep["conservation_ok"], rep["mbufs_in_use"]
        r["lcore_trip_ns"] = rep.get("lcore_trip_ns")
        r["placement"] = placement(r["lcore_trip_ns"]) if len(rep["lcores"]) >= 2 else "n/a"
        if not rep["conservation_ok"] or rep["mbufs_in_use"] != 0:
            r["error"] = (f"END CHECK FAILED: conservation_ok={rep['conservation_ok']}, "
                          f"mbufs_in_use={rep['mbufs_in_use']}")


def tail_text(path: str, head_lines: int = 200, tail_lines: int = 400) -> tuple[str, int]:
    """The run's output but l3fwd's per-route lines (a million of them with
    the 1M table), which are counted instead: its first head_lines and
    last tail_lines other lines (EAL's TSC line is near the start, the
    summaries at the end), and the count."""
    head, lines, routes, dropped = [], [], 0, 0
    with open(path, errors="replace") as fh:
        for line in fh:
            if line.startswith(("LPM: Adding route ", "FIB: Adding route ")):
                routes += 1
                continue
            if len(head) < head_lines:
                head.append(line)
                continue
            lines.append(line)
            if len(lines) > 4 * tail_lines:
                dropped += len(lines) - tail_lines
                del lines[:-tail_lines]
    if len(lines) > tail_lines:
        dropped += len(lines) - tail_lines
        lines = lines[-tail_lines:]
    gap = [f"[... {dropped} lines left out ...]\n"] if dropped else []
    return "".join(head + gap + lines), routes


# ---------------------------------------------------------------- figures


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def tsc_hz_of(runs) -> int | None:
    return med([r.get("tsc_hz") for r in runs])


def add_cycles(runs, hz):
    """Cycles per forwarded packet of the l3fwd and testpmd runs (busy all
    the time: TSC Hz x lcores / pps)."""
    for r in runs:
        kind, lcores = CONTENDERS[r["contender"]][1:]
        if kind != "tqfwd" and r.get("tx_mpps") and hz:
            r["cycles_per_packet"] = hz * lcores / (r["tx_mpps"] * 1e6)
            r["cycles_from"] = f"TSC Hz x {lcores} lcore(s) / forwarded pps"


def ok(r):
    return "error" not in r and not r.get("skipped") and r.get("tx_mpps")


def paired(runs, table, a, b, key):
    """Per-round a/b of one table's runs."""
    by = {}
    for r in runs:
        if r["table"] == table and ok(r) and r.get(key):
            by[(r["round"], r["contender"])] = r[key]
    xs = [by[(n, a)] / by[(n, b)] for (n, c) in list(by) if c == a and (n, b) in by]
    return xs


def summarize(runs, names, tables):
    out = {}
    for t in tables:
        rows = {}
        base_cyc = None
        for n in names:
            rs = [r for r in runs if r["table"] == t and r["contender"] == n]
            good = [r for r in rs if ok(r)]
            row = {"label": CONTENDERS[n][0], "runs": len(good), "of": len(rs)}
            if rs and all(r.get("skipped") for r in rs):
                row["skipped"] = rs[0]["skipped"]
            if good:
                row["tx_mpps"] = med([r["tx_mpps"] for r in good])
                row["tx_mpps_range"] = [min(r["tx_mpps"] for r in good), max(r["tx_mpps"] for r in good)]
                row["cycles_per_packet"] = med([r.get("cycles_per_packet") for r in good])
                row["start_s"] = med([r.get("start_s") for r in good])
                if CONTENDERS[n][1] == "tqfwd" and all(r.get("lcores") for r in good):
                    k = len(good[0]["lcores"])
                    row["per_lcore"] = [{"lcore": good[0]["lcores"][i]["lcore"],
                                         "roles": good[0]["lcores"][i]["roles"],
                                         "cycles_per_forwarded_packet":
                                             med([r["lcores"][i]["cycles_per_forwarded_packet"] for r in good])}
                                        for i in range(k)]
                    row["placements"] = [r.get("placement") for r in good]
                    for place in ("near", "far"):
                        pr = [r["tx_mpps"] for r in good if r.get("placement") == place]
                        if pr:
                            row[f"tx_mpps_{place}"] = med(pr)
                            row[f"runs_{place}"] = len(pr)
                if n == "testpmd-io":
                    row["testpmd_cycles_per_packet"] = med([r.get("testpmd_cycles_per_packet") for r in good])
                if n != BASE:
                    for key, field in (("tx_mpps", "mpps_vs_base"), ("cycles_per_packet", "cycles_vs_base")):
                        xs = paired(runs, t, n, BASE, key)
                        if xs:
                            row[field] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs),
                                          "pairs": len(xs)}
            rows[n] = row
        s = {"rows": rows}
        xs = paired(runs, t, "tqfwd-tq", "tqfwd-ring", "tx_mpps")
        if xs:
            s["tq_over_ring"] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs),
                                 "pairs": len(xs)}
            near = [r for r in runs if r["table"] == t]
            xs_near = []
            for n_ in sorted({r["round"] for r in near}):
                a_ = [r for r in near if r["round"] == n_ and r["contender"] == "tqfwd-tq" and ok(r)]
                b_ = [r for r in near if r["round"] == n_ and r["contender"] == "tqfwd-ring" and ok(r)]
                if a_ and b_ and a_[0].get("placement") == b_[0].get("placement") == "near":
                    xs_near.append(a_[0]["tx_mpps"] / b_[0]["tx_mpps"])
            if xs_near:
                s["tq_over_ring_near"] = {"median": statistics.median(xs_near), "pairs": len(xs_near)}
        lpm, io = rows.get(BASE, {}), rows.get("testpmd-io", {})
        if lpm.get("cycles_per_packet") and io.get("cycles_per_packet"):
            d = {"l3fwd_lpm_1": lpm["cycles_per_packet"], "testpmd_io": io["cycles_per_packet"],
                 "difference": lpm["cycles_per_packet"] - io["cycles_per_packet"]}
            pd = []
            for n_ in sorted({r["round"] for r in runs if r["table"] == t}):
                a_ = [r for r in runs if r["round"] == n_ and r["table"] == t and r["contender"] == BASE and ok(r)]
                b_ = [r for r in runs if r["round"] == n_ and r["table"] == t and r["contender"] == "testpmd-io"
                      and ok(r)]
                if a_ and b_ and a_[0].get("cycles_per_packet") and b_[0].get("cycles_per_packet"):
                    pd.append(a_[0]["cycles_per_packet"] - b_[0]["cycles_per_packet"])
            if pd:
                d["difference_paired_median"] = statistics.median(pd)
                d["pairs"] = len(pd)
            s["l3_beyond_io"] = d
        workers = {}
        for n in ("tqfwd-tq", "tqfwd-ring", "tqfwd-copy", "tqfwd-l2"):
            for l in rows.get(n, {}).get("per_lcore", []):
                if "worker" in l["roles"].split("+"):
                    workers[n] = l["cycles_per_forwarded_packet"]
        if workers:
            s["tqfwd_worker_cycles"] = workers
        out[t] = s
    return out


# ---------------------------------------------------------------- report


def f(x, nd=2):
    return "—" if x is None else f"{x:.{nd}f}"


def ratio(d):
    if not d:
        return "—"
    return f"{d['median']:.3f} [{d['min']:.3f}–{d['max']:.3f}, {d['pairs']}]"


def report_md(doc) -> str:
    m = doc["meta"]
    L = [f"# tqfwd L3 against DPDK's l3fwd: run `{m['run']}`", ""]
    if m.get("smoke"):
        L += [f"**{m['smoke']}**", ""]
    L += [f"- command: `{m['command']}`",
          f"- machine: {m['machine']['cpu']}, {m['machine']['nproc']} CPUs, kernel {m['machine']['kernel']}; "
          f"TSC {f(m['tsc_hz'] / 1e9 if m['tsc_hz'] else None, 3)} GHz ({m['tsc_hz_from']}); "
          f"EAL memory: {m['mem_note']}",
          f"- quiet check before the runs: CPUs {m['quiet'].get('cpu_busy_pct')} % busy, load avg "
          f"{m['quiet'].get('loadavg')}, {len(m['quiet'].get('foreign') or [])} compiler/DPDK processes"
          f"{' (waited ' + str(m['quiet'].get('waited_s')) + ' s)' if m['quiet'].get('waited_s') else ''}; "
          f"{m['contended_runs']} of {m['runs']} runs overlapped another compiler or DPDK program",
          f"- DPDK {m['dpdk']}; l3fwd: {m['l3fwd']}; testpmd: `dpdk-testpmd` of the same DPDK",
          f"- tqfwd: {m['tqfwd']}",
          f"- git: {m['git']}",
          f"- {m['rounds']} rounds of {m['seconds']} s windows (after {WARMUP_S:.0f} s warm-up), contenders "
          f"alternated, the first one rotating each round; ports: {m['ports']}",
          ""]
    for t, tr in doc["traffic"].items():
        L.append(f"- table {t}: {tr['what']}")
    L.append("")
    for t, s in doc["summary"].items():
        L += [f"## {TABLES[t]}", "",
              "| contender | Mpps | ÷ l3fwd LPM 1 lcore (paired) [range, pairs] | cycles/pkt | per lcore (role) "
              "| cycles ÷ l3fwd LPM 1 lcore (paired) | start-up s | runs |",
              "|---|---|---|---|---|---|---|---|"]
        for n, row in s["rows"].items():
            if row.get("skipped"):
                L.append(f"| {row['label']} | skipped: {row['skipped']} | | | | | | 0 |")
                continue
            per = " + ".join(f"{f(l['cycles_per_forwarded_packet'], 1)} ({l['roles']})"
                             for l in row.get("per_lcore", []))
            if not per and row.get("cycles_per_packet"):
                k = CONTENDERS[n][2]
                per = f"{k} lcore{'s' if k > 1 else ''}, busy polling" + \
                    (f"; testpmd's own: {f(row.get('testpmd_cycles_per_packet'), 1)}"
                     if row.get("testpmd_cycles_per_packet") else "")
            L.append(f"| {row['label']} | {f(row.get('tx_mpps'))} | "
                     f"{'1 (base)' if n == BASE and row.get('tx_mpps') else ratio(row.get('mpps_vs_base'))} | "
                     f"{f(row.get('cycles_per_packet'), 1)} | {per} | "
                     f"{'1 (base)' if n == BASE and row.get('tx_mpps') else ratio(row.get('cycles_vs_base'))} | "
                     f"{f(row.get('start_s'), 2)} | {row['runs']}/{row['of']} |")
        L.append("")
        if s.get("tq_over_ring"):
            L.append(f"- tq ÷ ring, Mpps, paired: {ratio(s['tq_over_ring'])}"
                     + (f"; near-placement pairs only: {s['tq_over_ring_near']['median']:.3f} "
                        f"({s['tq_over_ring_near']['pairs']} pairs)" if s.get("tq_over_ring_near") else ""))
        d = s.get("l3_beyond_io")
        if d:
            w = s.get("tqfwd_worker_cycles", {})
            L.append(f"- L3 cost beyond I/O: l3fwd LPM 1 lcore {f(d['l3fwd_lpm_1'], 1)} − testpmd io "
                     f"{f(d['testpmd_io'], 1)} = **{f(d['difference'], 1)} cycles/pkt** (medians; paired per "
                     f"round: {f(d.get('difference_paired_median'), 1)}); tqfwd's worker lcore: "
                     + (", ".join(f"{SHORT[k]} {f(v, 1)}" for k, v in w.items())
                        if w else "not measured"))
        pl = [(row["label"], row) for row in s["rows"].values() if row.get("placements")]
        if pl:
            L.append("- tqfwd by host placement (median Mpps, runs): " + "; ".join(
                f"{lab}: near {f(row.get('tx_mpps_near'))} ({row.get('runs_near', 0)}), far "
                f"{f(row.get('tx_mpps_far'))} ({row.get('runs_far', 0)})" for lab, row in pl))
        L.append("")
    L += ["## Every run", "",
          "| round | table | contender | tx Mpps | rx Mpps | imissed | tqfwd drops | cycles/pkt | per lcore "
          "| trip ns start/end | placement | start-up s | wall s | notes |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["runs"]:
        trip = r.get("lcore_trip_ns") or {}
        per = " + ".join(f"{f(l['cycles_per_forwarded_packet'], 1)}" for l in r.get("lcores", []))
        note = r.get("skipped") or r.get("error") or ""
        if r.get("foreign_processes"):
            note += f" (beside {len(r['foreign_processes'])} compiler/DPDK processes)"
        L.append(f"| {r['round']} | {r['table']} | {r['contender']} | {f(r.get('tx_mpps'))} | "
                 f"{f(r.get('rx_mpps'))} | {r.get('imissed', '—')} | {r.get('drops_total', '—')} | "
                 f"{f(r.get('cycles_per_packet'), 1)} | "
                 f"{per or '—'} | {f(trip.get('start'), 0)}/{f(trip.get('end'), 0)} | "
                 f"{r.get('placement', '—')} | {f(r.get('start_s'))} | {f(r.get('wall_s'), 1)} | {note} |")
    L += ["", "## How the figures are made", "",
          "- **Mpps**: forwarded packets per second, the opackets of both ports over the window, read "
          "through DPDK telemetry (`/ethdev/stats,N`) at its start and its end, for every contender alike; "
          "median over rounds.",
          "- **cycles/pkt** per forwarded packet. l3fwd and testpmd: TSC Hz × lcores ÷ forwarded pps — "
          "they poll without pause and this load never lets them idle, so every cycle of their forwarding "
          "lcores is spent on the packets (testpmd: its one forwarding lcore; its main lcore only "
          "prints). Beside it, testpmd's own `--record-core-cycles` figure (busy cycles ÷ received "
          "packets). tqfwd: its --stats-json busy cycles per lcore over the whole run, each lcore's busy "
          "cycles per handled packet × packets it handled ÷ forwarded packets (as bench/ab.py).",
          "- **paired ratios**: the median over rounds of this contender's figure ÷ l3fwd LPM 1 lcore's "
          "in the same round and table (back to back), with their range and count; tq ÷ ring the same.",
          "- **L3 cost beyond I/O**: l3fwd LPM 1 lcore's cycles/pkt − testpmd io's (one lcore each, the "
          "same ports and traffic: what the lookup and the rewrite add to moving the packet), beside "
          "tqfwd's worker lcore (where its lookup runs; tqfwd L2's worker is the same lcore without it).",
          "- **start-up**: from the program's start until its ports have transmitted packets (EAL, the "
          "route table, the ports): the 1M table's load is its start-up less the 16-route one's.",
          "- **placement**: tqfwd's `lcore_trip_ns` (one cache line's trip between its two lcores, at "
          f"the start and the end): near below {NEAR_NS:.0f} ns at both, far at or above at both, else "
          "mixed; l3fwd and testpmd cross no core.",
          "- tqfwd's end checks (conservation, 0 mbufs in use) are checked on every run; a failure is "
          "marked END CHECK FAILED and the script exits 1.", ""]
    return "\n".join(L)


# ---------------------------------------------------------------- main


def machine() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(l.split(":", 1)[1].strip() for l in fh if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "nproc": os.cpu_count(), "kernel": platform.release()}


def sh(*cmd) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-traffic", metavar="DIR",
                    help="only write the tables' route files and pcaps to DIR (a NIC host's generator)")
    ap.add_argument("--l3fwd")
    ap.add_argument("--l3fwd-note", default="")
    ap.add_argument("--tqfwd", default="")
    ap.add_argument("--tqfwd-note", default="")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--tables", default="16,1m")
    ap.add_argument("--only", default="")
    ap.add_argument("--ports", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wait-quiet", type=float, default=0)
    ap.add_argument("--mem")
    ap.add_argument("--mem-note")
    ap.add_argument("--work")
    ap.add_argument("--results")
    ap.add_argument("--keep", default="target/bench", help="where the output of a failed run is kept")
    ap.add_argument("--stamp")
    ap.add_argument("--command")
    a = ap.parse_args()
    tables = [t for t in a.tables.split(",") if t]
    names = [n for n in a.only.split(",") if n] or list(CONTENDERS)
    bad = [t for t in tables if t not in TABLES] + [n for n in names if n not in CONTENDERS]
    if bad or not tables:
        log(f"unknown table or contender: {', '.join(bad) or '(no table)'}; tables: {', '.join(TABLES)}; "
            f"contenders: {', '.join(CONTENDERS)}")
        return 2
    names = [n for n in CONTENDERS if n in names]  # report order
    if a.write_traffic:
        os.makedirs(a.write_traffic, exist_ok=True)
        tr = make_traffic(a.write_traffic, tables, a.seed)
        for t, x in tr.items():
            print(f"{t}: {x['what']}\n  {x['routes']} (both families), {x['v4']}, {x['v6']}, {x['pcap']}")
        return 0
    if not (a.l3fwd and a.mem and a.work and a.results and a.stamp and a.command is not None):
        log("l3fwd.py is run by bench/l3fwd.sh (it needs --l3fwd, --mem, --work, --results, --stamp, --command)")
        return 2

    quiet = wait_quiet(a.wait_quiet, log) if a.wait_quiet > 0 else \
        {"quiet": None, "cpu_busy_pct": round(cpu_busy(2.0), 1), "loadavg": loadavg(),
         "foreign": foreign_processes(), "waited_s": 0}
    if quiet["foreign"] or quiet["cpu_busy_pct"] >= 15:
        log(f"WARNING: machine not quiet (CPUs {quiet['cpu_busy_pct']} % busy, load {quiet['loadavg']}, "
            f"{len(quiet['foreign'])} compiler/DPDK processes): figures will be noisy")
    traffic = make_traffic(a.work, tables, a.seed)
    b = Bench(a, traffic)
    if b.tqfwd_missing and any(CONTENDERS[n][1] == "tqfwd" for n in names):
        log(f"no tqfwd at {a.tqfwd}: the tqfwd contenders are skipped")
    runs = []
    t_start = time.time()
    for rnd in range(a.rounds):
        if rnd > 0 and a.wait_quiet > 0:
            wait_quiet(min(a.wait_quiet, 120), log)
        for t in tables:
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for n in order:
                why = b.skip_reason(n)
                if why:
                    r = {"round": rnd + 1, "table": t, "contender": n, "skipped": why}
                else:
                    r = b.run(n, t, rnd)
                runs.append(r)
                if r.get("skipped"):
                    log(f"round {rnd + 1} {t:>2} {n:12s} skipped: {r['skipped']}")
                    continue
                trip = r.get("lcore_trip_ns") or {}
                log(f"round {rnd + 1} {t:>2} {n:12s} tx {f(r.get('tx_mpps')):>6} Mpps  rx {f(r.get('rx_mpps')):>6}"
                    f"  start-up {f(r.get('start_s'))} s"
                    + (f"  {f(r.get('cycles_per_packet'), 1)} cyc/pkt" if r.get("cycles_per_packet") else "")
                    + (f"  trip {f(trip.get('start'), 0)}/{f(trip.get('end'), 0)} ns {r['placement']}"
                       if r.get("placement") not in (None, "n/a") else "")
                    + (f"  ERROR {r['error']}" if "error" in r else ""))
    hz = tsc_hz_of(runs)
    add_cycles(runs, hz)
    doc = {
        "schema": SCHEMA,
        "meta": {
            "run": f"l3fwd-{a.stamp}", "command": a.command, "rounds": a.rounds, "seconds": a.seconds,
            "warmup_s": WARMUP_S, "tables": tables, "contenders": names, "machine": machine(),
            "tsc_hz": hz, "tsc_hz_from": "EAL's rte_get_tsc_hz() as the runs logged it, median" if hz else
            "not measured", "mem": a.mem, "mem_note": a.mem_note, "huge_pages": a.mem.strip() == "--in-memory",
            "mbufs": MBUFS, "ports": a.ports or "two net_pcap ports, rx_pcap=F twice each, infinite_rx=1",
            "dpdk": sh("pkg-config", "--modversion", "libdpdk"), "l3fwd": a.l3fwd_note,
            "tqfwd": a.tqfwd_note or a.tqfwd, "git": sh("git", "describe", "--always", "--dirty"),
            "quiet": quiet, "runs": sum(1 for r in runs if "cmd" in r),
            "contended_runs": sum(1 for r in runs if r.get("foreign_processes")),
            "elapsed_s": round(time.time() - t_start, 1),
        },
        "traffic": {t: {k: v for k, v in tr.items() if k not in ("routes", "v4", "v6", "pcap")}
                    for t, tr in traffic.items()},
        "contender_labels": {n: CONTENDERS[n][0] for n in names},
        "runs": runs,
        "summary": summarize(runs, names, tables),
    }
    if a.rounds < 5 or a.seconds < 5:
        doc["meta"]["smoke"] = (f"Short run ({a.rounds} round(s) of {a.seconds:g} s; the defaults are 5 of 5): "
                                "a check of the plumbing, not a measurement.")
    os.makedirs(a.results, exist_ok=True)
    base = os.path.join(a.results, f"l3fwd-{a.stamp}")
    with open(base + ".json", "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    md = report_md(doc)
    with open(base + ".md", "w") as fh:
        fh.write(md + "\n")
    print(md)
    log(f"wrote {base}.md and {base}.json ({doc['meta']['elapsed_s']:.0f} s of runs)")
    failed = [r for r in runs if "error" in r]
    for r in failed:
        log(f"FAILED: round {r['round']} {r['table']} {r['contender']}: {r['error']}"
            + (f" (output: {r['log_tail_file']})" if r.get("log_tail_file") else ""))
    if not any(ok(r) for r in runs):
        log("no run gave figures")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
