#!/usr/bin/env python3
"""Draws each figure of a `pearl-bench scale --out OUT` run against the number of VRs, with
issue 15's bar where it sets one, as one SVG of small charts (no plotting library needed).

    python3 scripts/plot_scale.py docs/benchmarks/scale.json docs/benchmarks/scale.svg
"""

import json
import math
import sys

# (title, unit, value of a point, bar at 4,096 VRs or None)
FIGURES = [
    ("pearld up", "s", lambda p: p.get("start_s"), 60),
    ("stop on SIGTERM", "s", lambda p: p.get("stop_s"), 60),
    ("API create p50", "ms", lambda p: p.get("create_ms_p50"), 20),
    ("API delete p50", "ms", lambda p: p.get("delete_ms_p50"), None),
    ("/v1/stats p50", "ms", lambda p: p.get("stats_ms_p50"), 100),
    ("idle CPU", "% of a core", lambda p: p.get("idle_cpu_percent"), 1),
    ("memory per VR", "KiB", lambda p: p.get("rss_per_vr_kib"), 1024),
    ("threads", "", lambda p: p.get("threads"), None),
    ("forwarding vs 4 VRs", "ratio", lambda p: (p.get("forwarding") or {}).get("vs_4_vrs"), 0.8),
]
W, H, COLS = 260, 170, 3
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 28, 30


def chart(x0, y0, title, unit, points, bar):
    """One chart: N on a log-2 axis, the figure on a linear one from 0."""
    xs = [n for n, _ in points]
    top = max([v for _, v in points] + ([bar] if bar is not None else [])) * 1.15 or 1
    lo, hi = math.log2(min(xs)), math.log2(max(xs))
    span = (hi - lo) or 1
    px = lambda n: x0 + LEFT + (math.log2(n) - lo) / span * (W - LEFT - RIGHT)
    py = lambda v: y0 + H - BOTTOM - v / top * (H - TOP - BOTTOM)
    out = [f'<text x="{x0 + W / 2}" y="{y0 + 16}" text-anchor="middle" font-weight="bold">{title}'
           + (f" ({unit})" if unit else "") + "</text>",
           f'<line x1="{x0 + LEFT}" y1="{py(0)}" x2="{x0 + W - RIGHT}" y2="{py(0)}" stroke="#333"/>',
           f'<line x1="{x0 + LEFT}" y1="{py(0)}" x2="{x0 + LEFT}" y2="{y0 + TOP}" stroke="#333"/>',
           f'<text x="{x0 + LEFT - 4}" y="{y0 + TOP + 4}" text-anchor="end">{top:.3g}</text>',
           f'<text x="{x0 + LEFT - 4}" y="{py(0) + 4}" text-anchor="end">0</text>']
    for n in xs:
        out.append(f'<text x="{px(n)}" y="{py(0) + 16}" text-anchor="middle">{n}</text>')
    if bar is not None:
        out.append(f'<line x1="{x0 + LEFT}" y1="{py(bar)}" x2="{x0 + W - RIGHT}" y2="{py(bar)}" '
                   'stroke="#c33" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x0 + W - RIGHT}" y="{py(bar) - 3}" text-anchor="end" fill="#c33">bar {bar:g}</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{px(n):.1f},{py(v):.1f}" for i, (n, v) in enumerate(points))
    out.append(f'<path d="{path}" fill="none" stroke="#258" stroke-width="2"/>')
    for n, v in points:
        out.append(f'<circle cx="{px(n):.1f}" cy="{py(v):.1f}" r="3" fill="#258"><title>{n} VRs: {v:g}</title></circle>')
    return out


def main(src, dst):
    points = [p for p in json.load(open(src))["points"] if p.get("kind", "fast") == "fast"]
    charts = []
    for title, unit, value, bar in FIGURES:
        series = sorted((p["vrs"], value(p)) for p in points if value(p) is not None)
        if len(series) >= 2:
            charts.append((title, unit, series, bar))
    if not charts:
        sys.exit(f"{src}: fewer than two points with figures")
    rows = math.ceil(len(charts) / COLS)
    body = []
    for i, (title, unit, series, bar) in enumerate(charts):
        body += chart((i % COLS) * W, (i // COLS) * H, title, unit, series, bar)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{COLS * W}" height="{rows * H}" '
           'font-family="sans-serif" font-size="11">\n<rect width="100%" height="100%" fill="white"/>\n'
           + "\n".join(body) + "\n</svg>\n")
    open(dst, "w").write(svg)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
