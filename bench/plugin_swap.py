"""The hot-swap figure of issue 17: plugin VR A (the wire example) carries datagrams between
hosts a and b while `pearlctl vr set A plugin=…` replaces its program over and over (two copies
of the wire, so that every swap starts a new instance); fast VR B (`<prefix>ok`) beside it carries the same
rate between hosts c and d. Outage: the largest gap between two datagrams at b; B's largest gap
is the same run's baseline (what the sender and the machine do without any swap). Losses are
counted by sequence number. Run by bench/programmable.py (root: namespaces)."""

import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
from netns import Network  # noqa: E402
from test_plugins import beside_a_router, wire_vr  # noqa: E402

SEQ_UDP = ROOT / "tests" / "system" / "seq_udp.py"
# Throughput over time is counted in bins of this many milliseconds.
BIN_MS = 10


def swap_run(bin_dir, plugins, swaps, pps, dwell):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-swap-"))
    wires = [tmp / "wire-a.wasm", tmp / "wire-b.wasm"]
    for w in wires:
        shutil.copy(plugins / "pearl_plugin_wire.wasm", w)
    net = Network(f"bs{os.getpid() % 10000}")
    try:
        a = f"{net.prefix}va"
        config = beside_a_router(net, wire_vr(a, wires[0]))
        net.start_pearld(bin_dir, config, tmp)
        for host, dst in (("a", "10.9.0.2"), ("c", "10.2.0.2")):
            subprocess.run(["ip", "netns", "exec", net.hosts[host], "ping", "-c", "3", "-i", "0.2", dst], check=True, capture_output=True)
        seconds = dwell * (swaps + 1)
        flows = {"swapped": ("a", "b", "10.9.0.2"), "elsewhere": ("c", "d", "10.2.0.2")}
        sinks = {f: subprocess.Popen(["ip", "netns", "exec", net.hosts[to], sys.executable, str(SEQ_UDP), "sink", "4001", str(seconds), "times"],
                                     stdout=subprocess.PIPE, text=True) for f, (_, to, _) in flows.items()}
        net.procs += sinks.values()
        time.sleep(0.5)
        senders = {f: subprocess.Popen(["ip", "netns", "exec", net.hosts[frm], sys.executable, str(SEQ_UDP), "send", dst, "4001",
                                        str(pps), str(seconds)], stdout=subprocess.PIPE, text=True)
                   for f, (frm, _, dst) in flows.items()}
        net.procs += senders.values()
        api_ms, marks = [], []
        for i in range(swaps):
            time.sleep(dwell)
            started = time.monotonic()
            subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "set", a, f"plugin={{wasm: {wires[(i + 1) % 2]}}}"],
                           check=True, capture_output=True)
            marks.append((started, time.monotonic()))
            api_ms.append((marks[-1][1] - started) * 1e3)
        sent = {f: int(p.communicate(timeout=seconds + 30)[0]) for f, p in senders.items()}
        got = {f: json.loads(p.communicate(timeout=seconds + 30)[0]) for f, p in sinks.items()}
    finally:
        net.close()
        shutil.rmtree(tmp, ignore_errors=True)
    start = min(min(g["times"]) for g in got.values() if g["times"])
    timeline = {"bin_ms": BIN_MS, "swaps_s": [[round(s0 - start, 4), round(s1 - start, 4)] for s0, s1 in marks],
                "kpps": {f: bins(g.pop("times"), start) for f, g in got.items()}}
    return {"bench": "swap", "swaps": swaps, "pps": pps, "timeline": timeline,
            "outage_ms": got["swapped"]["max_gap_ms"], "baseline_gap_ms": got["elsewhere"]["max_gap_ms"],
            "lost_swapped": sent["swapped"] - got["swapped"]["unique"], "lost_elsewhere": sent["elsewhere"] - got["elsewhere"]["unique"],
            "sent_each": sent, "pearlctl_ms_median": round(statistics.median(api_ms), 1)}


def bins(times, start):
    """Datagrams per BIN_MS bin from `start`, as thousands per second; the last, partial bin
    is left out."""
    counts = [0] * (int((max(times, default=start) - start) * 1000 / BIN_MS) + 1)
    for t in times:
        counts[int((t - start) * 1000 / BIN_MS)] += 1
    return [round(c * 1000 / BIN_MS / 1000, 2) for c in counts[:-1]]
