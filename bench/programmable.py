#!/usr/bin/env python3
"""Programmable VRs (issue 17), as root: the per-packet cost of plugins (WebAssembly, process, XDP) against the
built-in IP router, in the in-memory pipeline (64-byte frames, 4 VRs, the real BGP table, one
worker pinned; the programs alternate round by round so that each ratio compares runs of the
same minutes of a shared machine), and the outage of a plugin swapped under traffic
(bench/plugin_swap.py). Writes docs/benchmarks/programmable.json (one object a line:
{"bench": "plugin", "mode", "program", "mpps", "ratio_to_builtin", ...} and {"bench": "swap",
"outage_ms", "lost_elsewhere", ...}) and programmable.md.

    sudo bench/programmable.py [--rounds N] [--seconds S] [--table FILE] [--swaps N] [--pps P] [--parts pipeline,e2e,swap]
"""

import argparse
import datetime
import json
import pathlib
import statistics
import subprocess

from plugin_swap import swap_run
from swap_plot import svg

# The program kinds whose swap is measured, each with its wire example.
SWAP_KINDS = ["wasm", "process", "xdp"]

ROOT = pathlib.Path(__file__).resolve().parents[1]
# (mode, program, pearl-bench arguments; a plugin's file name is resolved in the plugins' directory)
PROGRAMS = [("builtin", "ip", []), ("builtin", "filter", ["--code", "filter", "--rules", "1000"]),
            ("builtin", "i3", ["--code", "i3", "--triggers", "10000"]),
            ("wasm", "wire", ["--plugin", "pearl_plugin_wire.wasm"]), ("wasm", "lpm", ["--plugin", "pearl_plugin_lpm.wasm"]),
            ("process", "wire", ["--plugin", str(ROOT / "target" / "plugins" / "native" / "pearl_plugin_c_wire")]),
            ("process", "lpm", ["--plugin", str(ROOT / "target" / "plugins" / "native" / "pearl_plugin_c_lpm")]),
            ("xdp", "wire", ["--plugin", str(ROOT / "target" / "plugins" / "xdp" / "wire.o")]),
            ("xdp", "lpm", ["--plugin", str(ROOT / "target" / "plugins" / "xdp" / "router.o")])]


def sil(f, which, flow):
    """A swap figure's silence of `flow` in `which` windows, as "median / max"."""
    if f"{which}_ms" not in f:
        return "–"
    return f"{f[f'{which}_ms'][flow]} / {f[f'{which}_max_ms'][flow]}"


def rates_of(f):
    """A swap figure's arrival rates of the swapped VR, in its swap windows / between them."""
    r = f.get("swapped_pps")
    return f"{r['in_swap_windows']:,} / {r['between_swaps']:,}" if r else "–"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--table", default=str(ROOT.parent / "shared" / "data" / "bgp-full-table-2025.txt.gz"))
    ap.add_argument("--swaps", type=int, default=20)
    ap.add_argument("--pps", type=int, default=5000)
    ap.add_argument("--e2e-repeat", type=int, default=3)
    ap.add_argument("--parts", default="pipeline,e2e,swap",
                    help="what to measure again; the other parts' figures are kept from programmable.json")
    a = ap.parse_args()
    parts = set(a.parts.split(",")) - {""}
    if parts - {"pipeline", "e2e", "swap"}:
        ap.error(f"--parts: expected pipeline, e2e and/or swap, got {a.parts!r}")
    docs = ROOT / "docs" / "benchmarks"
    kept = [json.loads(line) for line in (docs / "programmable.json").read_text().splitlines() if line.strip()]
    kept_of = {"pipeline": "plugin", "e2e": "plugin_e2e", "swap": "swap"}
    # `--parts ""` measures nothing: it writes programmable.md again from the JSON.
    if parts:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "pearl-bench", "-p", "pearld", "-p", "pearlctl"], cwd=ROOT, check=True)
        plugins = pathlib.Path(subprocess.run(["bash", str(ROOT / "scripts" / "build-plugins.sh")], check=True,
                                              capture_output=True, text=True).stdout.split()[-1])
    bench = ROOT / "target" / "release" / "pearl-bench"
    load = open("/proc/loadavg").read().split()[:3]
    rates = {(mode, name): [] for mode, name, _ in PROGRAMS}
    for _ in range(a.rounds if "pipeline" in parts else 0):
        for mode, name, extra in PROGRAMS:
            cmd = ["taskset", "-c", "1", str(bench), "pipeline", "--table", a.table, "--vrs", "4", "--seconds", str(a.seconds), "--repeat", "1"]
            cmd += [str(plugins / x) if x.endswith(".wasm") else x for x in extra]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            rates[(mode, name)].append(json.loads(out.splitlines()[-1])["mpps"])
    figures = [f for part, bench in kept_of.items() if part not in parts for f in kept if f["bench"] == bench]
    builtin = statistics.median(rates[("builtin", "ip")]) if "pipeline" in parts else None
    for mode, name, extra in PROGRAMS if "pipeline" in parts else []:
        m = statistics.median(rates[(mode, name)])
        figures.append({"bench": "plugin", "mode": mode, "program": name, "mpps": round(m, 3),
                        "ratio_to_builtin": round(m / builtin, 3), "runs_mpps": rates[(mode, name)], "vrs": 4, "size": 64,
                        "workers": 1, "seconds": a.seconds, "date": str(datetime.date.today()), "load_before": load})
        if "--rules" in extra:
            figures[-1]["rules"] = int(extra[extra.index("--rules") + 1])
    # End to end over veth: each hosting mode's VR between a generator and a sink namespace,
    # against the kernel router on the same topology in the same run.
    e2e_kinds = "fast,wasm-lpm,wasm-wire,process-lpm,process-wire,xdp-lpm,xdp-wire"
    e2e_cmd = [str(bench), "e2e", "--kinds", e2e_kinds, "--sizes", "64", "--vrs", "1", "--repeat", str(a.e2e_repeat),
               "--seconds", "2", "--warmup", "1"]
    e2e = [json.loads(line) for line in subprocess.run(e2e_cmd, check=True, capture_output=True, text=True).stdout.splitlines()
           if line.startswith("{")] if "e2e" in parts else []
    for f in e2e:
        figures.append({"bench": "plugin_e2e", "mode": f["kind"], "pps": f["pps"], "cpu_ns_per_pkt": f["cpu_ns_per_pkt"],
                        "kernel_pps": f["kernel_pps"], "kernel_cpu_ns_per_pkt": f["kernel_cpu_ns_per_pkt"],
                        "pps_ratio_to_kernel": f["pps_ratio"], "driver": f["driver"], "size": f["size"], "repeat": f["repeat"],
                        "date": str(datetime.date.today())})
    if "swap" in parts:
        # Each program kind swapped the same way (issue 51); the timeline drawn is the process
        # plugin's, whose swap used to stall.
        for kind in SWAP_KINDS:
            swap = swap_run(ROOT / "target" / "release", plugins, a.swaps, a.pps, 0.5, kind)
            swap["date"] = str(datetime.date.today())
            swap["load_before"] = open("/proc/loadavg").read().split()[:3]
            timeline = swap.pop("timeline")
            figures.append(swap)
            if kind == "process":
                (docs / "programmable-swap.svg").write_text(svg(timeline))
                (docs / "programmable-swap-timeline.json").write_text(json.dumps(timeline) + "\n")
    swaps = [f for f in figures if f["bench"] == "swap"]
    swap = swaps[0]
    timeline = json.loads((docs / "programmable-swap-timeline.json").read_text())
    order = {"plugin": 0, "plugin_e2e": 1, "swap": 2}
    figures.sort(key=lambda f: order[f["bench"]])
    # A part not measured again keeps its figures and says when they were taken.
    first = next(f for f in figures if f["bench"] == "plugin")
    pipeline_date, pipeline_load = first["date"], first["load_before"]
    (docs / "programmable.json").write_text("".join(json.dumps(f) + "\n" for f in figures))
    lines = ["# Programmable VRs: plugins against the built-in IP router\n",
             f"Generated by `bench/programmable.py --rounds {a.rounds} --seconds {a.seconds}` on {pipeline_date} "
             f"(load average before: {' '.join(pipeline_load)}). The in-memory pipeline (`pearl-bench pipeline`), 4 VRs, "
             "64-byte IPv4 frames to 65,536 destinations drawn from the full BGP table, one worker pinned to "
             "CPU 1; the programs alternate each round and each figure is the median of the rounds. "
             "Raw figures: `programmable.json`.\n",
             "| program | mode | Mpps (median) | ratio to the built-in `ip` |", "|---|---|---|---|"]
    for f in figures:
        if f["bench"] == "plugin":
            lines.append(f"| {f['program']} | {f['mode']} | {f['mpps']} | {f['ratio_to_builtin']} |")
    lines += ["",
              "- `ip`: the built-in IP router (RFC 1812 checks, LPM in the VR's FIB, TTL −1, MAC rewrite).",
              "- `filter`: the built-in `code: filter` (SPP's generic filter code option): 1,000 `match` rules per VR, "
              "prefixes drawn from the table as `ip_dst` matches (priority by length), each sending its frames out of the VR's "
              "second interface to a next hop's MAC; the destinations are drawn from those prefixes. Its lookup is the "
              "classifier's, which claims the frame for the VR and names the rule in one step.",
              "- `i3`: the built-in `code: i3` (SPP's I3 code option): each VR an I3 node owning half the Chord ring, 16 "
              "fingers and 10,000 triggers whose targets, like the fingers, are destinations of the table; 78-byte I3 "
              "datagrams to the VR, alternately to a trigger's identifier (delivered to its target) and to an identifier "
              "the node does not own (forwarded to a finger): matched, re-addressed (header checksum recomputed) and "
              "routed by the VR's FIB, the lookups of a run batched.",
              "- `wire` (examples/plugins/wire): a trivial forwarder, interface 0 ↔ 1, frames as they are. As a process "
              "(examples/plugins/c/wire.c built natively, one process per VR): the worker posts each batch into the memory it "
              "shares with the VR's process, wakes it and waits for its verdicts (futex); `taskset` pins the bench and the "
              "processes it starts to the same CPU, so the figure is per core.",
              "- `lpm` (examples/plugins/lpm): an IPv4 router in the plugin: one `route_v4_batch` call per batch "
              "(the FIB lookups overlapped by the host), TTL −1 with an incremental checksum, MAC rewrite. As a process "
              "(examples/plugins/c/lpm.c built natively): each `route_v4_batch` of 128 addresses is a call to pearld through "
              "the shared memory, answered by the waiting worker.",
              "- `xdp` `wire` (examples/xdp/wire.c, clang -target bpf): the same cable as an XDP program (an array-map "
              "lookup and an atomic add per frame, then `bpf_redirect`), run in place on each packet by PEARL's eBPF "
              "interpreter (crates/ebpf: every access checked, one unit of fuel per instruction).",
              "- `xdp` `lpm` (examples/xdp/router.c): an IPv4 router as an XDP program, its routes the whole table written "
              "into its LPM-trie map `routes` (as an owner would through `pearlctl plugin table`), TTL −1 with an incremental "
              "checksum, MAC rewrite, `bpf_redirect`; the trie is a hash table per prefix length, probed from the longest length present down.",
              "",
              "The plugins run in wasmi (an interpreter with fuel metering); frames are copied into the "
              "plugin's batch area and back. wasmi builds in 50 s on this machine's two cores; wasmtime "
              "(a JIT) took 6 min 17 s, which CI cannot afford today.",
              "",
              "## End to end over veth",
              "",
              f"`{' '.join(['pearl-bench'] + e2e_cmd[1:])}`: one VR between a generator and a sink namespace on veth "
              f"(pearld's default port driver), 60-byte frames, the kernel router on the same topology measured in the same run; "
              "medians of the repetitions. `fast` is the built-in IPv4 router; the others are plugin VRs running the examples "
              "(`xdp-lpm`: examples/xdp/router.c, its trie holding the route the bench writes with `pearlctl plugin table`). "
              "CPU per packet is pearld's (and its children's: a process plugin's program) process time.",
              "",
              "| VR program | pps | CPU ns/packet | kernel router pps | kernel CPU ns/packet | pps ratio to the kernel |",
              "|---|---|---|---|---|---|"]
    for f in figures:
        if f["bench"] == "plugin_e2e":
            lines.append(f"| {f['mode']} | {f['pps']:,.0f} | {f['cpu_ns_per_pkt']:,.0f} | {f['kernel_pps']:,.0f} | "
                         f"{f['kernel_cpu_ns_per_pkt']:,.0f} | {f['pps_ratio_to_kernel']} |")
    lines += ["",
              "## Swapping a plugin under traffic",
              "",
              f"Plugin VR A (the wire of each kind: examples/plugins/wire as WebAssembly, examples/plugins/c/wire.c as a "
              f"process, examples/xdp/wire.c as XDP) carries {a.pps:,} datagrams/s from host a to host b while "
              f"`pearlctl vr set A plugin=…` replaces its program {swap['swaps']} times, 0.5 s apart (two copies of the program, "
              "so each swap compiles, starts or checks a new one); fast VR B beside it, on the same worker, carries "
              f"{a.pps:,} datagrams/s from c to d, measured on {swap['date']} (load average before each kind's run in the JSON). "
              "A program is made before it breaks (issue 51): compiled, started and attached (a process answers one empty "
              "batch) or checked off the worker, before the change returns; the switch is one pointer between batches and the "
              "old program serves until then. "
              "Each datagram carries its send time and the sinks take the kernel's receive time of each. A swap's window runs "
              "from the command's start to 50 ms after it returned; a quiet window is as long, half a dwell later, with no swap. "
              "Silence: the longest time between two arrivals in a window (a lost datagram shows here); path gap: the largest "
              "(arrival gap − send gap), what the path added. Medians over the swaps, maxima after the slash. Lost datagrams "
              "are counted by sequence number, and pearld's drop counters say why (`program_down`: the program not attached; "
              "`program_hang`: a process that left a batch unanswered for 2 ms, which a loaded machine also causes between "
              "swaps). A's arrivals per second in the swap windows and between them say where its losses fall: the same "
              "rates, a swap that costs it nothing. A process plugin asks the scheduler for a 100 µs slice (EEVDF's "
              "`sched_runtime`), which wakes it ahead of long-running tasks: in four back-to-back pairs of 20 process swaps "
              "(2026-12-02, AMD EPYC, 2 CPUs shared with other sessions' builds, load 1–8) it lost 0.34–0.8× the datagrams of the same pearld without it (199/249, 717/1,153, "
              "2,284/6,636, 4,300/6,215), all `program_hang`, as many between swaps as in them. Bars: the swapped VR loses nothing and its silence in a swap window is its quiet one; B's gaps in "
              "swap windows are its quiet ones (the FPGA substrate: 0.6 s partial, 12 s full reconfiguration). "
              "Before make-before-break (pearld of 21455dc, 2026-12-02, the same machine at the same load, two runs of 20 "
              "process swaps): 2,931 and 3,029 datagrams `program_down` a run (~150 a swap, ~30 ms) besides the "
              "`program_hang` the load caused, and silences at b of 26–29 ms median in swap windows.",
              "",
              "| kind | swaps | silence at b, swap / quiet windows, ms (median / max) | silence at d, swap / quiet windows, ms "
              "(median / max) | path gap at b, ms (median / max) | lost by A (why) | A's datagrams/s in swap windows / between | "
              "lost by B | `pearlctl vr set` median, ms |",
              "|---|---|---|---|---|---|---|---|---|",
              *[f"| {f.get('kind', 'wasm')} | {f['swaps']} | "
                f"{sil(f, 'silence', 'swapped')} / {sil(f, 'quiet_silence', 'swapped')} | "
                f"{sil(f, 'silence', 'elsewhere')} / {sil(f, 'quiet_silence', 'elsewhere')} | "
                f"{f['outage_ms']} / {f.get('outage_max_ms', '–')} | {f['lost_swapped']} of {f['sent_each']['swapped']:,} "
                f"({', '.join(f'{k} {n}' for k, n in f.get('drops', {}).get('swapped', {}).items()) or '–'}) | "
                f"{rates_of(f)} | {f['lost_elsewhere']} of {f['sent_each']['elsewhere']:,} | {f['pearlctl_ms_median']} |" for f in swaps],
              "",
              "Throughput over time of both VRs during the process plugin's swaps, as in the FPGA substrate's Figures 6-7 "
              f"(datagrams per {timeline['bin_ms']} ms at the receiving hosts; the data: `programmable-swap-timeline.json`):",
              "",
              "![throughput of VR A and VR B over time while A's plugin is swapped](programmable-swap.svg)"]
    (docs / "programmable.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
