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


# Each program kind's wire: where it is built (by scripts/build-plugins.sh, from `plugins`,
# its wasm directory) and how a VR's `plugin:` names it.
WIRES = {"wasm": (lambda plugins: plugins / "pearl_plugin_wire.wasm", lambda path: f"{{wasm: {path}}}"),
         "process": (lambda plugins: plugins.parents[1] / "native" / "pearl_plugin_c_wire", lambda path: f"{{process: [{path}]}}"),
         "xdp": (lambda plugins: plugins.parents[1] / "xdp" / "wire.o", lambda path: f"{{xdp: {path}}}")}


def swap_run(bin_dir, plugins, swaps, pps, dwell, kind="wasm"):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pearl-swap-"))
    built, spelt = WIRES[kind]
    wires = [tmp / f"wire-a-{built(plugins).name}", tmp / f"wire-b-{built(plugins).name}"]
    for w in wires:
        shutil.copy(built(plugins), w)
    net = Network(f"bs{os.getpid() % 10000}")
    try:
        a = f"{net.prefix}va"
        config = beside_a_router(net, wire_vr(a, wires[0]).replace(f"{{wasm: {wires[0]}}}", spelt(wires[0])))
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
            subprocess.run([str(bin_dir / "pearlctl"), "--socket", str(net.api), "vr", "set", a, f"plugin={spelt(wires[(i + 1) % 2])}"],
                           check=True, capture_output=True)
            marks.append((started, time.monotonic()))
            api_ms.append((marks[-1][1] - started) * 1e3)
        sent = {f: int(p.communicate(timeout=seconds + 30)[0]) for f, p in senders.items()}
        got = {f: json.loads(p.communicate(timeout=seconds + 30)[0]) for f, p in sinks.items()}
        # Where the lost datagrams went, as pearld counts them by reason.
        drops = {f: {k: n for k, n in v["drops"].items() if n} for f, name in (("swapped", a), ("elsewhere", f"{net.prefix}ok"))
                 for v in net.stats()["vrs"] if v["name"] == name}
    finally:
        net.close()
        shutil.rmtree(tmp, ignore_errors=True)
    start = min(min(g["times"]) for g in got.values() if g["times"])
    # Each swap's outage: the most the path added to A's gaps from the command's start to
    # WINDOW_S after it returned; B's in the same windows is the baseline.
    def most_added(g, spans):
        return [max((gap for t, gap in zip(g["times"], g["path_gaps_ms"]) if t0 <= t <= t1), default=0.0) for t0, t1 in spans]

    # A datagram lost leaves no path gap (the next one's send gap grows as much as its arrival
    # gap): a window's silence, the longest between two arrivals, shows it.
    def longest_silence(g, spans):
        return [max((b - a for a, b in zip(g["times"], g["times"][1:]) if t0 <= b <= t1), default=0.0) * 1e3 for t0, t1 in spans]

    swap_spans = [(s0, s1 + WINDOW_S) for s0, s1 in marks]
    windows = {f: most_added(g, swap_spans) for f, g in got.items()}
    silences = {f: longest_silence(g, swap_spans) for f, g in got.items()}
    # The same windows half a dwell later, with no swap: what the machine does to A's path
    # anyway (both VRs share one worker, so a swap that stalled it would show at B too).
    quiet_spans = [(t0 + dwell / 2, t1 + dwell / 2) for t0, t1 in swap_spans]
    quiet = most_added(got["swapped"], quiet_spans)
    quiet_silences = {f: longest_silence(g, quiet_spans) for f, g in got.items()}
    # Where A's losses fall: its arrivals per second in the swap windows and between them (from
    # one window's end to the next one's start); the same rates say a swap costs A nothing.
    between_spans = [(t1, t0) for (_, t1), (t0, _) in zip(swap_spans, swap_spans[1:])]

    def arrival_rate(g, spans):
        n = sum(1 for t in g["times"] if any(t0 <= t <= t1 for t0, t1 in spans))
        return round(n / max(sum(t1 - t0 for t0, t1 in spans), 1e-9))

    rates = {"in_swap_windows": arrival_rate(got["swapped"], swap_spans), "between_swaps": arrival_rate(got["swapped"], between_spans)}
    timeline = {"bin_ms": BIN_MS, "swaps_s": [[round(s0 - start, 4), round(s1 - start, 4)] for s0, s1 in marks],
                "kpps": {f: bins(g.pop("times"), start) for f, g in got.items()}}
    return {"bench": "swap", "kind": kind, "swaps": swaps, "pps": pps, "timeline": timeline,
            "outage_ms": round(statistics.median(windows["swapped"]), 3),
            "outage_max_ms": round(max(windows["swapped"]), 3),
            "baseline_gap_ms": round(statistics.median(windows["elsewhere"]), 3),
            "baseline_max_ms": round(max(windows["elsewhere"]), 3),
            "quiet_ms": round(statistics.median(quiet), 3), "quiet_max_ms": round(max(quiet), 3),
            "outage_over_baseline_max_ms": round(max(a - b for a, b in zip(windows["swapped"], windows["elsewhere"])), 3),
            "silence_ms": {f: round(statistics.median(v), 3) for f, v in silences.items()},
            "silence_max_ms": {f: round(max(v), 3) for f, v in silences.items()},
            "quiet_silence_ms": {f: round(statistics.median(v), 3) for f, v in quiet_silences.items()},
            "quiet_silence_max_ms": {f: round(max(v), 3) for f, v in quiet_silences.items()},
            "outages_ms": windows["swapped"], "baselines_ms": windows["elsewhere"], "quiets_ms": quiet,
            "run_path_gap_ms": {"swapped": got["swapped"]["max_path_gap_ms"], "elsewhere": got["elsewhere"]["max_path_gap_ms"]},
            "sink_gap_ms": {"swapped": got["swapped"]["max_gap_ms"], "elsewhere": got["elsewhere"]["max_gap_ms"]},
            "lost_swapped": sent["swapped"] - got["swapped"]["unique"], "lost_elsewhere": sent["elsewhere"] - got["elsewhere"]["unique"],
            "sent_each": sent, "drops": drops, "swapped_pps": rates, "pearlctl_ms_median": round(statistics.median(api_ms), 1)}


def bins(times, start):
    """Datagrams per BIN_MS bin from `start`, as thousands per second; the last, partial bin
    is left out."""
    counts = [0] * (int((max(times, default=start) - start) * 1000 / BIN_MS) + 1)
    for t in times:
        counts[int((t - start) * 1000 / BIN_MS)] += 1
    return [round(c * 1000 / BIN_MS / 1000, 2) for c in counts[:-1]]
