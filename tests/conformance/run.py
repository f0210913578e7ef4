"""Running the harness: the Linux router first (the oracle), then pearld with each VR kind and
port driver, every one on a fresh topology of its own; the differences, the deviations file,
the ICMP rate-limit case and the kernel settings compared; reports in JSON and Markdown.

    PYTHONPATH=tests python3 -m conformance --full          # bench/conform.sh
    PYTHONPATH=tests python3 -m conformance --kinds fast --drivers af_packet --generated 300
"""

import argparse
import collections
import dataclasses
import datetime
import fnmatch
import json
import os
import pathlib
import platform
import subprocess
import time

import yaml

from . import cases as named
from . import engine, generator, topo

HERE = pathlib.Path(__file__).resolve().parent
DEVIATIONS = HERE / "deviations.yaml"
KINDS = ["fast", "kernel", "shared"]
DRIVERS = list(topo.DRIVERS)
BOUNDED = [("fast", "af_packet"), ("fast", "af_xdp"), ("fast", "af_xdp+rx_af_packet"), ("kernel", "af_packet"),
           ("shared", "af_packet")]
FULL = [(k, d) for k in KINDS for d in DRIVERS]
DEFAULT_SEED = 21


def load_deviations(path=DEVIATIONS):
    data = yaml.safe_load(pathlib.Path(path).read_text()) or {}
    devs = data.get("deviations") or []
    for i, d in enumerate(devs):
        for key in ("case", "reason"):
            if not d.get(key):
                raise ValueError(f"{path}: deviations[{i}] needs {key!r}")
    return devs


def plan(generated=300, seed=DEFAULT_SEED, pattern="*"):
    chosen = [c for c in named.CASES if fnmatch.fnmatch(c.id, pattern)]
    gen = generator.generate(seed, generated, engine.next_tag(named.CASES)) if generated else []
    # Tags follow the full list's positions, so a case's bytes do not depend on the filter.
    pos = {c.id: i for i, c in enumerate(named.CASES)}
    items = [engine.Item(c.id, c.group, engine.TAG_BASE + pos[c.id], c.frames(engine.TAG_BASE + pos[c.id]), c.slow,
                         c.desc) for c in chosen]
    items += [engine.Item(g.id, "generated", g.tag, [g.frame], False, g.desc) for g in gen]
    assert max((i.tag for i in items), default=0) < 65536
    return chosen, items


def run_router(prefix, items, log, **kw):
    t0 = time.monotonic()
    t = topo.Topology(prefix, **kw)
    built = time.monotonic() - t0
    try:
        res = engine.execute(t, items, log=log)
        res.built = built
        res.sysctls = t.sysctls()
        return res
    finally:
        t.close()


# -- the ICMP rate-limit case (full run) ----------------------------------------------------------
FLOOD_SECONDS = 10
FLOOD_RATE = 1000


def rate_limit(prefix, log, **kw):
    """A 10 s flood of TTL-1 UDP from one source: ICMP time-exceeded messages per second that
    reach the sender. The Linux router runs with its default ICMP settings here."""
    t = topo.Topology(prefix, **kw)
    try:
        tag = 65000
        src = "10.64.253.1"
        from scapy.all import IP, UDP, Ether, Raw
        frame = bytes(Ether(src=topo.HOST_A_MAC, dst=topo.R_MAC[0]) / IP(src=src, dst="198.51.100.7", ttl=1, id=tag) /
                      UDP(sport=40000, dport=33434) / Raw(b"flood" * 4))
        cap = t.capture("a")
        sender = t.sender()
        time.sleep(0.3)
        cap.take()
        start = time.monotonic()
        sender.send([frame] * (FLOOD_SECONDS * FLOOD_RATE), rate=FLOOD_RATE, burst=10)
        sent_for = time.monotonic() - start
        time.sleep(1.0)
        per_second = collections.Counter()
        for ts, f, _ in cap.take():
            keys = engine.frame_keys(f)
            if ("4", tag) in keys and len(f) > 34 and f[23] == 1 and f[34] == 11:
                per_second[int(ts - start)] += 1
        secs = [per_second.get(i, 0) for i in range(FLOOD_SECONDS)]
        total = sum(secs)
        log(f"  rate limit, {t.describe()}: {total} errors for {FLOOD_SECONDS * FLOOD_RATE} packets "
            f"({total / sent_for:.1f}/s; per second {secs})")
        return {"router": t.describe(), "sent": FLOOD_SECONDS * FLOOD_RATE, "seconds": round(sent_for, 2),
                "errors": total, "per_second": secs, "errors_per_second": round(total / sent_for, 2)}
    finally:
        t.close()


# -- reporting ----------------------------------------------------------------------------------------
def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=topo.ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def sysctl_diff(linux, vr):
    keys = sorted(set(linux) | set(vr))
    out = {}
    for k in keys:
        if linux.get(k) != vr.get(k) and not k.startswith(("net.netfilter.", "net.core.", "net.unix.")) \
                and "stable_secret" not in k and not k.endswith(("base_reachable_time", "base_reachable_time_ms")):
            out[k] = {"linux": linux.get(k), "pearld_vr": vr.get(k)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="conformance", description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="every VR kind × port driver, 10,000 generated packets, "
                    "the oracle run twice, the rate-limit case")
    ap.add_argument("--kinds", default=None, help="comma-separated VR kinds (default: the chosen matrix)")
    ap.add_argument("--drivers", default=None, help="comma-separated port drivers")
    ap.add_argument("--generated", type=int, default=None, help="generated packets (bounded 300, full 10000)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cases", default="*", help="glob over named case ids")
    ap.add_argument("--rate-limit", action="store_true", help="run the ICMP rate-limit flood too")
    ap.add_argument("--oracle-twice", action="store_true", help="run the Linux router twice and set aside cases "
                    "it answers differently")
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--md", type=pathlib.Path)
    ap.add_argument("--doc", type=pathlib.Path, help="rewrite the generated part of docs/CONFORMANCE.md")
    ap.add_argument("--bin-dir", type=pathlib.Path, default=topo.ROOT / "target" / "release")
    ap.add_argument("--prefix", default=f"cf{os.getpid() % 10000}")
    a = ap.parse_args(argv)
    if a.full:
        a.rate_limit = a.oracle_twice = True
    generated = a.generated if a.generated is not None else (10000 if a.full else 300)
    matrix = FULL if a.full else BOUNDED
    if a.kinds or a.drivers:
        ks = a.kinds.split(",") if a.kinds else KINDS
        ds = a.drivers.split(",") if a.drivers else DRIVERS
        matrix = [(k, d) for k in ks for d in ds]
    report = run(matrix, generated, a.seed, a.cases, a.rate_limit, a.oracle_twice, a.bin_dir, a.prefix)
    if a.json:
        # The case table is the Markdown's (and docs/CONFORMANCE.md's); the JSON keeps the
        # figures and every difference.
        a.json.write_text(json.dumps({k: v for k, v in report.items() if k != "table"}, indent=1) + "\n")
    md = markdown(report, table_in=a.doc)
    if a.md:
        a.md.write_text(md)
    if a.doc:
        update_doc(a.doc, report)
    failing = [d for d in report["differences"] if not d["deviation"]]
    print(f"conformance: {report['named_cases']} named cases, {report['generated']} generated packets, "
          f"{len(report['runs'])} routers, {len(failing)} differences not in the deviations file "
          f"({report['seconds']:.0f} s)")
    return 1 if failing or report["rate_limit_failures"] else 0


def base_router(name):
    """A run's router without its profile: "pearld/fast/af_packet [urpf strict]" → "pearld/fast/af_packet"."""
    return name.split(" [")[0]


def run(matrix, generated, seed, pattern="*", with_rate_limit=False, oracle_twice=False, bin_dir=None, prefix=None,
        log=print, urpf_matrix=None):
    """The whole comparison; returns the report (a dict, as written to JSON). `urpf_matrix`:
    the VR kinds and drivers run again, on the uRPF cases only, with the ingress interface in
    strict and in loose mode (default: `matrix`)."""
    prefix = prefix or f"cf{os.getpid() % 10000}"
    t0 = time.monotonic()
    chosen, items = plan(generated, seed, pattern)
    devs = load_deviations()
    log(f"conformance: {len(chosen)} named cases, {generated} generated (seed {seed}), "
        f"{sum(len(i.frames) for i in items)} frames per router")
    ref = run_router(f"{prefix}l", items, log)
    unstable = set()
    if oracle_twice:
        again = run_router(f"{prefix}k", items, log)
        unstable = engine.stability(items, ref, again)
        if unstable:
            log(f"  the Linux router answered {len(unstable)} cases differently on a second run: set aside "
                f"({', '.join(sorted(unstable)[:10])})")
    runs, diffs = [ref], []
    table_items = [it for it in items if it.group != "generated"]
    table_runs = {it.id: (ref, []) for it in table_items}

    def versus(its, reference, pairs, **kw):
        for kind, driver in pairs:
            try:
                res = run_router(f"{prefix}p", its, log, router="pearld", kind=kind, driver=driver, bin_dir=bin_dir,
                                 **kw)
            except Exception as e:  # noqa: BLE001 - a router that cannot start differs in everything
                log(f"  pearld/{kind}/{driver}: could not run: {e}")
                diffs.append(engine.Diff("*", "setup", f"pearld/{kind}/{driver}", "runs", f"failed: {e}"[:500], []))
                continue
            runs.append(res)
            for it in its:
                if it.id in table_runs:
                    table_runs[it.id][1].append(res)
            for d in engine.compare(its, reference, res, devs):
                if d.case.split("@")[0] not in unstable:
                    diffs.append(d)

    versus(items, ref, matrix)
    vr_sysctls = next((r.sysctls for r in runs[1:]), None)
    for profile in ("strict", "loose"):
        its = [dataclasses.replace(it, id=f"{it.id}@urpf-{profile}") for it in items if it.group == "urpf"]
        if not its:
            continue
        pref = run_router(f"{prefix}l", its, log, urpf=profile)
        runs.append(pref)
        table_items += its
        table_runs.update({it.id: (pref, []) for it in its})
        versus(its, pref, urpf_matrix if urpf_matrix is not None else matrix, urpf=profile)
    rl, rl_fail = [], []
    if with_rate_limit:
        lin = rate_limit(f"{prefix}l", log, sysctls="default")
        rl.append(lin)
        for kind, driver in matrix:
            try:
                r = rate_limit(f"{prefix}p", log, router="pearld", kind=kind, driver=driver, bin_dir=bin_dir,
                               sysctls="default")
            except Exception as e:  # noqa: BLE001
                log(f"  rate limit, pearld/{kind}/{driver}: could not run: {e}")
                continue
            rl.append(r)
            allowed = lin["errors_per_second"] * 1.1 + 1
            if r["errors_per_second"] > allowed:
                d = engine.Diff("ratelimit.v4.ttl1-flood", "rate-limit", r["router"],
                                f"{lin['errors']} time-exceeded in {FLOOD_SECONDS} s ({lin['errors_per_second']}/s)",
                                f"{r['errors']} time-exceeded in {FLOOD_SECONDS} s ({r['errors_per_second']}/s)", [])
                d.deviation = engine.deviation_for(devs, d)
                diffs.append(d)
                if not d.deviation:
                    rl_fail.append(r["router"])
    table = {}
    for it in table_items:
        reference, others = table_runs[it.id]
        row = {"group": it.group, "desc": it.desc, "linux": engine.answer(reference.obs.get(it.id, []), it.frames)}
        for r in others:
            row[base_router(r.router)] = engine.answer(r.obs.get(it.id, []), it.frames)
        table[it.id] = row
    report = {
        "what": "differential conformance: pearld VRs against the Linux router on the same topology",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(),
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}",
        "named_cases": len(chosen),
        "generated": generated,
        "seed": seed,
        "frames_per_router": sum(len(i.frames) for i in items),
        "matrix": [f"{k}/{d}" for k, d in matrix],
        "unstable_oracle_cases": sorted(unstable),
        "runs": [{"router": r.router, "built_seconds": round(getattr(r, "built", 0), 2), "seconds": round(r.seconds, 2),
                  "frames_sent": r.sent, "answers": sum(len(v) for v in r.obs.values()), "unmatched": len(r.unmatched),
                  "icmp": r.snmp, "notes": r.notes, "pearld_stats": r.stats} for r in runs],
        "differences": [d.__dict__ for d in diffs],
        "rate_limit": rl,
        "rate_limit_failures": rl_fail,
        "sysctl_differences": sysctl_diff(ref.sysctls, vr_sysctls) if vr_sysctls else {},
        "deviations": devs,
        "table": table,
        "seconds": round(time.monotonic() - t0, 1),
    }
    return report


def _cell(s):
    return s.replace("|", "\\|")


def grouped(report):
    """Differences grouped by case, each listing the routers that answer that way."""
    by = collections.OrderedDict()
    for d in report["differences"]:
        key = (d["case"], d["reference"], d["got"], d["deviation"])
        by.setdefault(key, []).append(d["router"].replace("pearld/", ""))
    return by


def markdown(report, table_in=None):
    """The report in Markdown; the case table is left to `table_in` (a document) when given."""
    lines = [f"# Conformance: pearld against the Linux router", "",
             f"{report['date']}, commit {report['commit']}, {report['machine']}.", "",
             f"- {report['named_cases']} named cases and {report['generated']} generated packets (seed {report['seed']}): "
             f"{report['frames_per_router']} frames through each router",
             f"- routers: Linux (oracle), " + ", ".join(f"pearld {m}" for m in report["matrix"]),
             f"- run time {report['seconds']:.0f} s"]
    fails = [d for d in report["differences"] if not d["deviation"]]
    lines += [f"- **{len(fails)} differences** not in the deviations file, "
              f"{len(report['differences']) - len(fails)} listed deviations", ""]
    if report["unstable_oracle_cases"]:
        lines += [f"Set aside (the Linux router answered them differently on two runs): "
                  f"{', '.join(report['unstable_oracle_cases'])}", ""]
    lines += ["| router | built s | run s | frames | answers | unmatched | notes |", "|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        lines.append(f"| {r['router']} | {r['built_seconds']} | {r['seconds']} | {r['frames_sent']} | {r['answers']} | "
                     f"{r['unmatched']} | {_cell('; '.join(r['notes']))} |")
    lines += ["", "## Differences", ""]
    if not report["differences"]:
        lines.append("None.")
    else:
        lines += ["| case | Linux router | pearld | where | deviation |", "|---|---|---|---|---|"]
        for (case, ref, got, dev), where in grouped(report).items():
            lines.append(f"| {case} | {_cell(ref)} | {_cell(got)} | {', '.join(where)} | {_cell(dev or '')} |")
    if report["rate_limit"]:
        lines += ["", "## ICMP rate limit (10 s flood of TTL-1 packets from one source)", "",
                  "| router | errors | per second |", "|---|---|---|"]
        for r in report["rate_limit"]:
            lines.append(f"| {r['router']} | {r['errors']} of {r['sent']} | {r['errors_per_second']} |")
    if report["sysctl_differences"]:
        lines += ["", "## Kernel settings: a pearld VR namespace against the default Linux router", "",
                  "| setting | Linux router | pearld VR |", "|---|---|---|"]
        for k, v in report["sysctl_differences"].items():
            lines.append(f"| {k} | {v['linux']} | {v['pearld_vr']} |")
    if table_in:
        lines += ["", f"Every named case, each router's answer: `{table_in}`."]
    else:
        lines += ["", "## Every named case", "", table_markdown(report)]
    return "\n".join(lines) + "\n"


def table_markdown(report):
    """Case, the Linux router's answer, and pearld's per VR kind (`=` where every port driver
    of that kind answers as Linux does)."""
    kinds = [k for k in KINDS if any(m.startswith(k + "/") for m in report["matrix"])]
    lines = ["| case | Linux router | " + " | ".join(f"pearld {k}" for k in kinds) + " |",
             "|---|---|" + "---|" * len(kinds)]
    for cid, row in report["table"].items():
        cells = []
        for k in kinds:
            mine = {r: v for r, v in row.items() if r.startswith(f"pearld/{k}/")}
            differ = {r.split("/")[2]: v for r, v in mine.items() if v != row["linux"]}
            if not mine:
                cells.append("")
            elif not differ:
                cells.append("=")
            else:
                by = collections.defaultdict(list)
                for drv, v in differ.items():
                    by[v].append(drv)
                same = len(differ) == len(mine)
                cells.append("<br>".join(f"**{_cell(v)}**" + ("" if same and len(by) == 1 else f" ({', '.join(d)})")
                                         for v, d in by.items()))
        lines.append(f"| {cid} | {_cell(row['linux'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


BEGIN, END = "<!-- conformance:begin (written by python3 -m conformance --doc) -->", "<!-- conformance:end -->"


def update_doc(path, report):
    text = path.read_text() if path.exists() else f"{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    fails = [d for d in report["differences"] if not d["deviation"]]
    body = [f"Last full run: {report['date']}, commit {report['commit']}: {report['named_cases']} named cases, "
            f"{report['generated']} generated packets (seed {report['seed']}), routers "
            + ", ".join(report["matrix"]) + f"; **{len(fails)} differences** not in the deviations file"
            + f" ({len(report['differences']) - len(fails)} listed). Details: `docs/benchmarks/conformance.md`.", "",
            table_markdown(report)]
    path.write_text(head + BEGIN + "\n" + "\n".join(body) + "\n" + END + tail)
