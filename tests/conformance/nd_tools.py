"""Cases driven by IPv6 attack tools nobody here wrote (issue 57): Debian's thc-ipv6 (`atk6-*`)
and SI6 Networks' ipv6toolkit (`scan6`), run from host A of the conformance topology
(topo.py) against the Linux router and a pearld VR alike.

A flood case runs a tool for a bounded time while host A pings host B through the router, and
records what a user notices: how much of the ping flow came through, how many frames host A
offered, and the router's own account of what it dropped and why (pearld's /v1/stats).

A scan case lists every address that answers on the router's link to host A (multicast echo
and an unknown destination option to ff02::1): only the router's own may answer.
"""

import re
import subprocess
import time

from . import topo

# The tools, as host A runs them: name → argv (eth0 is host A's interface).
FLOODS = {
    # RFC 6583: ICMPv6 "packet too big" to random addresses of host B's /64, each one a
    # neighbour the router must resolve before it can forward.
    "ndpexhaust26": ["atk6-ndpexhaust26", "eth0", "2001:db8:2::"],
    "flood_solicitate6": ["atk6-flood_solicitate6", "eth0", topo.R6[0]],
    "flood_advertise6": ["atk6-flood_advertise6", "eth0", topo.R6[0]],
    "flood_router26": ["atk6-flood_router26", "eth0", topo.R6[0]],
}

PING_INTERVAL = 0.05


def tx_packets(ns, iface="eth0"):
    return int(topo.sh("cat", f"/sys/class/net/{iface}/statistics/tx_packets", ns=ns).stdout)


def pearld_account(t):
    """What pearld says it did with the flood: the VR's drops and exceptions that are not zero
    and its ports' receive losses."""
    stats = t.stats()
    vr = next(v for v in stats["vrs"] if v["name"] == t.vr)
    nonzero = lambda d: {k: n for k, n in d.items() if n}  # noqa: E731
    return {
        "drops": nonzero(vr["drops"]),
        "exceptions": nonzero(vr["exceptions"]),
        "slow_path_full": vr["exception_drops"],
        "forwarded": vr["forwarded_packets"],
        "rx_dropped": sum(p["rx_dropped"] for p in stats["ports"]),
    }


def flood_with_flow(t, tool, seconds):
    """Runs `tool` (a key of FLOODS) from host A for `seconds` while A pings B (IPv6, one echo
    every PING_INTERVAL); returns the flow kept, the frames offered and the router's account."""
    count = int(seconds / PING_INTERVAL)
    before = tx_packets(t.a)
    flood = subprocess.Popen(["ip", "netns", "exec", t.a, *FLOODS[tool]], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(0.5)  # the flood is on before the flow starts
        ping = topo.sh("ping", "-6", "-q", "-i", str(PING_INTERVAL), "-c", str(count), "-W", "1", topo.B6, ns=t.a,
                       check=False, timeout=seconds * 3 + 30)
    finally:
        flood.terminate()
        flood.wait(timeout=10)
    offered = tx_packets(t.a) - before - count
    m = re.search(r"(\d+) packets transmitted, (\d+) received", ping.stdout)
    sent, got = (int(m.group(1)), int(m.group(2))) if m else (count, 0)
    out = {"tool": tool, "router": t.describe(), "seconds": seconds, "flow_sent": sent, "flow_received": got,
           "flow_kept_percent": round(100.0 * got / max(sent, 1), 1), "frames_offered": offered}
    if t.router == "pearld":
        out["pearld"] = pearld_account(t)
    return out


def answering_addresses(t):
    """Every source address that answers, on host A's link, a multicast echo and an echo with an
    unknown destination option to ff02::1 (scan6's link-local scan), and the MACs they came from."""
    done = topo.sh("scan6", "-i", "eth0", "-L", "-e", "-P", "all", "-p", "all", ns=t.a, check=False, timeout=60)
    found = set()
    for line in done.stdout.splitlines():
        line = line.strip()
        if ":" in line and not line.startswith(("Link-local", "Global")):
            found.add(line.split()[0].split("@")[0].lower())
    return found
