"""`pearl-bench eval --quick` as a user runs it: into a directory of their choice, a line per trial
while it runs, and at the end the JSON of every trial, one PNG per figure and the markdown page
with the NDR/PDR table and every seed paper's figure listed. The numbers are the machine's (it is
shared here); what is checked is that each output is there and well-formed."""

import json
import re
import struct
import subprocess

SIZES = (64, 512, 1518)
PEERS = ("pearl-fast", "kernel", "rig")
FIGURES = ("throughput.png", "forwarded_vs_offered.png")


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path} is not a PNG"
    assert data[-8:-4] == b"IEND", f"{path} is truncated"
    return struct.unpack(">II", data[16:24])


def test_quick_evaluation_writes_every_output(bin_dir, tmp_path):
    out = tmp_path / "evaluation"
    done = subprocess.run([str(bin_dir / "pearl-bench"), "eval", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    # Progress: one line per trial, the warm-up of each search marked.
    trials = [l for l in done.stderr.splitlines() if re.match(r"eval: \d+ B \S+ +trial +\d+", l)]
    assert sum("(warm-up)" in l for l in trials) == len(SIZES) * len(PEERS), done.stderr[-2000:]

    data = json.loads((out / "throughput.json").read_text())
    assert data["quick"] is True and data["machine"]["cpu"]
    assert data["settings"]["trial_seconds"] == 1.0 and data["settings"]["width"] == 0.01
    got = {(r["size"], r["peer"]) for r in data["results"]}
    assert got == {(s, p) for s in SIZES for p in PEERS}
    for r in data["results"]:
        assert len(r["trials"]) >= 2, r
        assert r["trials"][0]["load_pps"] == data["settings"]["max_load_pps"], "the warm-up runs at the maximum load"
        for t in r["trials"]:
            assert t["offered"] >= t["received"] and t["lost"] == t["offered"] - t["received"], t
        for goal in ("ndr_pps", "pdr_pps"):
            assert r[goal] is None or 0 < r[goal] <= data["settings"]["max_load_pps"], r
        if r["ndr_pps"] is not None and r["pdr_pps"] is not None:
            assert r["ndr_pps"] <= r["pdr_pps"] * 1.01, r
    assert len(trials) == sum(len(r["trials"]) for r in data["results"])

    for name in FIGURES:
        width, height = png_size(out / name)
        assert width >= 400 and height >= 300, (name, width, height)

    page = (out / "EVALUATION.md").read_text()
    assert "| frame (B) | PEARL fast NDR" in page
    for size in SIZES:
        assert re.search(rf"^\| {size} \|", page, re.M), f"no row for {size} B"
    for name in FIGURES:
        assert f"]({name})" in page, f"{name} is not shown"
    assert "FPGA substrate | Fig. 5" in page and "produced: [throughput.png]" in page
    assert page.count("| pending |") >= 10, "the figures this run does not draw are listed as pending"
