"""pearld killed with SIGKILL (or stopped with SIGTERM, test_live_restore.py) and started again:
the VR's namespace and its TAP devices live on (the TAP holder keeps them), the new pearld
re-adopts them instead of recreating them, and forwarding resumes at once; `pearlctl node stop`
then removes everything, the holder included."""

import json
import os
import signal
import subprocess
import time

from netns import Network, sh
from test_slow_path import config, netns_names, ping, two_hosts


def ifindex(ns, dev):
    return json.loads(sh("ip", "-n", ns, "-j", "link", "show", dev).stdout)[0]["ifindex"]


def holders():
    out = subprocess.run(["pgrep", "-f", "pearld --hold-taps"], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def test_a_killed_pearld_readopts_its_vr_and_forwarding_resumes(bin_dir, tmp_path):
    prefix = f"rs{os.getpid() % 100000}"
    vr = f"{prefix}v"
    n = two_hosts(prefix)
    before = holders()
    try:
        text = config(vr)
        n.start_pearld(bin_dir, text, tmp_path)
        assert ping(n, "a", "10.2.0.2").returncode == 0
        index = ifindex(vr, "eth0")

        n.pearld.send_signal(signal.SIGKILL)
        n.pearld.wait(timeout=10)
        assert vr in netns_names(), "the VR's namespace outlives a killed pearld"
        assert ifindex(vr, "eth0") == index, "the TAP outlives a killed pearld"

        started = time.time()
        n.start_pearld(bin_dir, text, tmp_path)
        while ping(n, "a", "10.2.0.2", "-W", "1").returncode != 0:
            assert time.time() - started < 5, "forwarding did not resume"
        assert ifindex(vr, "eth0") == index, "the TAP was re-adopted, not recreated"

        assert n.node_stop() == 0
        assert vr not in netns_names()
        assert holders() <= before, "`pearlctl node stop` ends the TAP holder"
    finally:
        n.close()
