"""The figures of `pearl-bench eval`, one PNG each, drawn from the JSON the run wrote.

usage: python3 eval_plot.py RESULTS.json OUT_DIR   (pearl-bench eval runs it; prints each PNG)

Every plot carries the rig's own limit (the generator straight into a counter): on veth the rig
is often what stops, and a reader must see where."""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"pearl-fast": ("#c0392b", "o"), "kernel": ("#2471a3", "s"), "rig": ("#555555", "")}
LABEL = {"pearl-fast": "PEARL fast VR", "kernel": "Linux kernel router", "rig": "rig's own limit"}


def mpps(x):
    return None if x is None else x / 1e6


def by_size(results, peer, goal):
    rows = sorted((r for r in results if r["peer"] == peer), key=lambda r: r["size"])
    return [r["size"] for r in rows], [mpps(r[goal]) for r in rows]


def throughput(data, out):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for peer in ("pearl-fast", "kernel"):
        colour, marker = STYLE[peer]
        for goal, dash in (("ndr_pps", "-"), ("pdr_pps", "--")):
            xs, ys = by_size(data["results"], peer, goal)
            ax.plot(xs, ys, dash, color=colour, marker=marker, label=f"{LABEL[peer]}, {goal[:3].upper()}")
    xs, ys = by_size(data["results"], "rig", "pdr_pps")
    ax.plot(xs, ys, ":", color=STYLE["rig"][0], linewidth=2, label=LABEL["rig"] + " (PDR)")
    ax.set_xlabel("frame size (bytes, FCS included)")
    ax.set_ylabel("throughput (Mpps)")
    ax.set_title("NDR (loss 0) and PDR (loss 0.5 %), MLRsearch, one VR on veth")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out, "throughput.png")


def forwarded_vs_offered(data, out):
    sizes = sorted({r["size"] for r in data["results"]})
    fig, axes = plt.subplots(1, len(sizes), figsize=(max(4 * len(sizes), 6), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        rows = {r["peer"]: r for r in data["results"] if r["size"] == size}
        top = 1.0
        for peer in ("pearl-fast", "kernel"):
            trials = rows[peer]["trials"][1:]
            xs = [t["offered"] / t["seconds"] for t in trials]
            ys = [max(t["received"], 1) / t["seconds"] for t in trials]
            top = max([top] + xs)
            ax.scatter(xs, ys, s=12, color=STYLE[peer][0], marker=STYLE[peer][1], label=LABEL[peer])
        rig = rows["rig"]["pdr_pps"]
        if rig:
            ax.axhline(rig, linestyle=":", color=STYLE["rig"][0], label=LABEL["rig"] + " (PDR)")
        ax.plot([1e4, top], [1e4, top], color="#bbbbbb", linewidth=0.8, label="forwarded = offered")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{size} B")
        ax.set_xlabel("offered (frames/s)")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("forwarded (frames/s)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Forwarded against offered: every trial of the searches")
    return save(fig, out, "forwarded_vs_offered.png")


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main():
    results, out = sys.argv[1], sys.argv[2]
    with open(results) as f:
        data = json.load(f)
    for draw in (throughput, forwarded_vs_offered):
        print(draw(data, out))


if __name__ == "__main__":
    main()
