"""`code: filter` (issue 17): SPP's generic filter code option. A fast VR without a routing
table sends each frame where the `match` rule it matches says: out of an interface to a next
hop's MAC, to its kernel, or nowhere; a frame matching no rule is dropped as `filter_miss`.
Rules come from the configuration and from the API (`pearlctl filter add`), between hosts with
the kernel's default offloads."""

import os
import socket
import subprocess

from netns import one_vr, sh, two_hosts

A_MAC, B_MAC = "02:aa:00:00:00:01", "02:aa:00:00:00:02"


def ctl(net, bin_dir, *args):
    return subprocess.run(["ip", "netns", "exec", net.router, str(bin_dir / "pearlctl"), "--socket", str(net.api),
                           *map(str, args)], capture_output=True, text=True, timeout=30)


def vr(net, name):
    return next(v for v in net.stats()["vrs"] if v["name"] == name)


def udp_exchange(net, port, count=20):
    """Sends `count` UDP datagrams from a to b:`port`; returns what b received and each one's TTL."""
    receiver = subprocess.Popen(
        ["ip", "netns", "exec", net.hosts["b"], "python3", "-c", f"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 12, 1)  # IP_RECVTTL, which Python does not name
s.bind(("10.2.0.2", {port}))
s.settimeout(2)
print("ready", flush=True)
try:
    while True:
        data, anc, _, _ = s.recvmsg(2048, 64)
        print(data.decode(), int.from_bytes(anc[0][2][:4], sys.byteorder) if anc else -1, flush=True)
except socket.timeout:
    pass
"""], stdout=subprocess.PIPE, text=True)
    assert receiver.stdout.readline().strip() == "ready"
    sh("python3", "-c", f"""
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range({count}):
    s.sendto(b"m%d" % i, ("10.2.0.2", {port}))
    time.sleep(0.01)
""", ns=net.hosts["a"])
    out, _ = receiver.communicate(timeout=15)
    return [line.split() for line in out.splitlines()]


def ping(net, dst, count=3):
    return sh("ping", "-c", count, "-i", "0.2", "-W", "1", dst, ns=net.hosts["a"], check=False)


def test_a_filter_vr_sends_frames_where_its_rules_say_and_takes_rules_from_the_api(bin_dir, tmp_path):
    net = two_hosts(f"cf{os.getpid() % 100000}")
    name = f"{net.prefix}f"
    try:
        config = one_vr(name).replace("    kind: fast\n", "    kind: fast\n    code: filter\n") + f"""
    match:
      - {{in_port: p0, udp_dst: 5000, out: eth1, mac: "{B_MAC}"}}
      - {{udp_dst: 6000, drop: true}}
      - {{ip_dst: 10.1.0.1/32, slow: true, priority: 120}}
"""
        net.start_pearld(bin_dir, config, tmp_path)
        got = udp_exchange(net, 5000)
        assert len(got) >= 18, got
        assert {ttl for _, ttl in got} == {"64"}, f"a filter leaves the frame but its MACs alone: {got}"
        assert udp_exchange(net, 6000, count=5) == [], "a drop rule"
        stats = vr(net, name)
        assert stats["drops"]["program"] >= 5, stats["drops"]

        # The VR's kernel answered a's ARP (no rule needed) and, by the slow rule, its pings.
        assert ping(net, "10.1.0.1").returncode == 0, (tmp_path / "pearld.log").read_text()
        assert ping(net, "10.2.0.2", count=2).returncode != 0, "ICMP to b matches no rule"
        missed = vr(net, name)["drops"]["filter_miss"]
        assert missed >= 2, vr(net, name)["drops"]

        for rule in (["in_port=p0", "ip_proto=1", "out=eth1", f"mac={B_MAC}"], ["in_port=p1", "ip_proto=1", "out=eth0", f"mac={A_MAC}"]):
            done = ctl(net, bin_dir, "filter", "add", name, *rule)
            assert done.returncode == 0, done.stderr
        done = ping(net, "10.2.0.2", count=3)
        assert done.returncode == 0 and "ttl=64" in done.stdout, done.stdout
        listed = ctl(net, bin_dir, "filter", "list", name)
        assert f"out=eth1 mac={B_MAC}" in listed.stdout and "drop" in listed.stdout, listed.stdout
        assert vr(net, name)["drops"]["filter_miss"] == missed, "the new rules matched the pings"

        refused = ctl(net, bin_dir, "filter", "add", name, "udp_dst=7000", "out=eth7")
        assert refused.returncode != 0 and "vrs[0].match[5].out" in refused.stderr and "eth7" in refused.stderr, refused.stderr
    finally:
        net.close()
