"""The hot-swap figure of issue 17: plugin VR A (the wire example) carries datagrams between
hosts a and b while `pearlctl vr set A plugin=…` replaces its program over and over (two copies
of the wire, so that every swap starts a new instance); fast VR B (`<prefix>ok`) beside it carries the same
rate between hosts c and d. A swap's outage: the most the path added to the gap between two
datagrams arriving one after the other at b (arrival gap, from the kernel's receive times, minus
send gap: seq_udp.py's `path_gaps_ms`, which the sender's pacing does not move), from the swap
command's start to 50 ms after it returned; B's in the same windows is the baseline (what the
machine does to a path meanwhile), and A's in windows as long half a dwell later (no swap) is
A's own quiet. Medians and maxima over the swaps; the whole run's largest
such gap and the plain largest silences at b and d are kept too. Losses are counted by
sequence number. Run by bench/programmable.py (root: namespaces)."""

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
# A swap's window runs from `pearlctl vr set` starting to this long after it returned.
WINDOW_S = 0.05


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
    # Each swap's outage: the most the path added to A's gaps from the command's start to
    # WINDOW_S after it returned; B's in the same windows is the baseline.
    def most_added(g, spans):
        return [max((gap for t, gap in zip(g["times"], g["path_gaps_ms"]) if t0 <= t <= t1), default=0.0) for t0, t1 in spans]

    swap_spans = [(s0, s1 + WINDOW_S) for s0, s1 in marks]
    windows = {f: most_added(g, swap_spans) for f, g in got.items()}
    # The same windows half a dwell later, with no swap: what the machine does to A's path
    # anyway (both VRs share one worker, so a swap that stalled it would show at B too).
    quiet = most_added(got["swapped"], [(t0 + dwell / 2, t1 + dwell / 2) for t0, t1 in swap_spans])
    timeline = {"bin_ms": BIN_MS, "swaps_s": [[round(s0 - start, 4), round(s1 - start, 4)] for s0, s1 in marks],
                "kpps": {f: bins(g.pop("times"), start) for f, g in got.items()}}
    return {"bench": "swap", "swaps": swaps, "pps": pps, "timeline": timeline,
            "outage_ms": round(statistics.median(windows["swapped"]), 3),
            "outage_max_ms": round(max(windows["swapped"]), 3),
            "baseline_gap_ms": round(statistics.median(windows["elsewhere"]), 3),
            "baseline_max_ms": round(max(windows["elsewhere"]), 3),
            "quiet_ms": round(statistics.median(quiet), 3), "quiet_max_ms": round(max(quiet), 3),
            "outage_over_baseline_max_ms": round(max(a - b for a, b in zip(windows["swapped"], windows["elsewhere"])), 3),
            "outages_ms": windows["swapped"], "baselines_ms": windows["elsewhere"], "quiets_ms": quiet,
            "run_path_gap_ms": {"swapped": got["swapped"]["max_path_gap_ms"], "elsewhere": got["elsewhere"]["max_path_gap_ms"]},
            "sink_gap_ms": {"swapped": got["swapped"]["max_gap_ms"], "elsewhere": got["elsewhere"]["max_gap_ms"]},
            "lost_swapped": sent["swapped"] - got["swapped"]["unique"], "lost_elsewhere": sent["elsewhere"] - got["elsewhere"]["unique"],
            "sent_each": sent, "pearlctl_ms_median": round(statistics.median(api_ms), 1)}


def bins(times, start):
    """Datagrams per BIN_MS bin from `start`, as thousands per second; the last, partial bin
    is left out."""
    counts = [0] * (int((max(times, default=start) - start) * 1000 / BIN_MS) + 1)
    for t in times:
        counts[int((t - start) * 1000 / BIN_MS)] += 1
    return [round(c * 1000 / BIN_MS / 1000, 2) for c in counts[:-1]]
