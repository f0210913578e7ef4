"""The tool matrix of issue 57, the bounded subset (tests/conformance/nd_matrix.py SUBSET: one or
two invocations of each of thc-ipv6's alive6, thcping6, trace6, toobig6, implementation6,
fragmentation6 and ipv6toolkit's frag6, icmp6, tcp6, ni6, scan6) from host A, through the Linux
kernel router and through a pearld fast VR (`driver: af_xdp, rx: af_packet` on veth, as the
README advises) in the same run: hosts A and B must receive the same frames (as signatures:
nd_matrix.signature) from both. The full matrix is bench/nd_matrix.py
(docs/benchmarks/nd-exhaustion.md, "Tool matrix")."""

import os
import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from conformance import nd_matrix, topo  # noqa: E402

@pytest.fixture(autouse=True)
def attack_tools():
    """The test command installs them (scripts/setup.sh): a machine without them fails here
    rather than passing by skipping."""
    missing = [t for t in ("atk6-alive6", "scan6") if not shutil.which(t)]
    assert not missing, f"{missing} not installed: apt-get install thc-ipv6 ipv6toolkit (scripts/setup.sh)"

# The sources a frame arriving at host A may have: the router's addresses and host B's.
ANSWERERS = {"R0", "R1", "RLL0", "RLL1", "B"}


def run(router, bin_dir, kind=None, driver=None):
    t = topo.Topology(f"ndm{router[0]}{os.getpid() % 1000}", router=router, kind=kind, driver=driver, bin_dir=bin_dir)
    try:
        return nd_matrix.run_cases(t, nd_matrix.SUBSET)
    finally:
        t.close()


def sources(seen):
    return {s.split("→")[0] for s in seen}


def test_the_tools_get_the_same_answers_through_a_fast_vr_as_through_the_kernel_router(bin_dir):
    kernel = run("linux", bin_dir)
    pearld = run("pearld", bin_dir, "fast", "af_xdp+rx_af_packet")
    # The oracle did answer: the far host's echo reply came back, the router's own errors too.
    assert any("icmp6 129/0" in s for s in kernel["alive6-ping-b"]["a"]), kernel["alive6-ping-b"]
    assert any(s.startswith("R0→A") and "icmp6 1/1" in s for s in kernel["thcping6-prohibit"]["a"]), \
        kernel["thcping6-prohibit"]
    assert any("icmp6 3/0" in s for s in kernel["thcping6-hlim1-b"]["a"]), kernel["thcping6-hlim1-b"]
    wrong = {}
    for cid in nd_matrix.SUBSET:
        d = nd_matrix.differences(kernel[cid], pearld[cid])
        if not nd_matrix.explained(cid, d):
            wrong[cid] = d
        strangers = sources(pearld[cid]["a"]) - ANSWERERS
        if strangers:
            wrong.setdefault(cid, {})["strangers on host A's link"] = sorted(strangers)
    assert not wrong, "\n".join(f"{cid}: {d}" for cid, d in wrong.items())
