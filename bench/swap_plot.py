"""The hot-swap figure as an SVG (no plotting library needed): throughput over time of the VR
whose plugin is swapped and of the VR beside it, one panel each as in the FPGA substrate's
Figures 6-7, with each swap marked where `pearlctl vr set` ran."""

W, H, LEFT, RIGHT, TOP, GAP, BOTTOM = 900, 420, 60, 20, 30, 40, 40
COLOURS = {"swapped": "#c0392b", "elsewhere": "#2471a3"}
TITLES = {"swapped": "VR A: its plugin swapped", "elsewhere": "VR B: beside it, untouched"}


def svg(timeline):
    flows = ["swapped", "elsewhere"]
    bin_s = timeline["bin_ms"] / 1000
    span = max(len(timeline["kpps"][f]) for f in flows) * bin_s
    top = max(max(timeline["kpps"][f], default=1) for f in flows) * 1.15
    panel = (H - TOP - BOTTOM - GAP) / 2
    x = lambda t: LEFT + (W - LEFT - RIGHT) * t / span
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    for k, f in enumerate(flows):
        y0 = TOP + k * (panel + GAP)
        y = lambda v: y0 + panel * (1 - v / top)
        out.append(f'<text x="{LEFT}" y="{y0 - 8}" font-weight="bold">{TITLES[f]} (thousand datagrams/s, counted per {timeline["bin_ms"]} ms)</text>')
        out.append(f'<rect x="{LEFT}" y="{y0}" width="{W - LEFT - RIGHT}" height="{panel}" fill="none" stroke="#888"/>')
        for v in (0, top / 2):
            out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4}" text-anchor="end">{v:.1f}</text>')
        for s0, s1 in timeline["swaps_s"]:
            out.append(f'<rect x="{x(s0):.1f}" y="{y0}" width="{max(x(s1) - x(s0), 1):.1f}" height="{panel}" fill="#f5b041" opacity="0.5"/>')
        points = " ".join(f"{x(i * bin_s):.1f},{y(v):.1f}" for i, v in enumerate(timeline["kpps"][f]))
        out.append(f'<polyline points="{points}" fill="none" stroke="{COLOURS[f]}" stroke-width="1.2"/>')
    for t in range(int(span) + 1):
        out.append(f'<text x="{x(t):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 6}" text-anchor="middle">seconds (orange: a swap, from the call of pearlctl vr set to its answer)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
