"""`code: reflect`: a fast VR that sends each unicast frame addressed to it back out of the
interface it came in by with its MACs swapped (a link's far-end loopback), between hosts with
the kernel's default offloads. The VR's kernel still answers ARP, so a host reaches it as its
gateway; nothing crosses to the other side."""

import os
import subprocess

from netns import one_vr, sh, two_hosts

A_MAC, VR_MAC = "02:aa:00:00:00:01", "02:00:00:00:01:00"

# In a's namespace: listens on eth0 for frames arriving from VR_MAC that carry the datagrams
# sent to b, and prints each one's payload and MACs.
SNIFF = f"""
import socket
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind(("eth0", 0))
s.settimeout(3)
print("ready", flush=True)
try:
    while True:
        frame, (_, _, kind, _, _) = s.recvfrom(2048)
        if kind != socket.PACKET_OUTGOING and frame[6:12] == bytes.fromhex("{VR_MAC.replace(':', '')}") and frame[23] == 17:
            print(frame[42:].decode(errors="replace"), frame[:6].hex(), frame[30:34].hex(), flush=True)
except socket.timeout:
    pass
"""

# In b's namespace: prints each datagram that reaches b's port 5000.
RECEIVE = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.2.0.2", 5000))
s.settimeout(3)
print("ready", flush=True)
try:
    while True:
        print(s.recv(2048).decode(), flush=True)
except socket.timeout:
    pass
"""


def test_a_reflect_vr_sends_frames_back_with_their_macs_swapped(bin_dir, tmp_path):
    net = two_hosts(f"cr{os.getpid() % 100000}")
    name = f"{net.prefix}m"
    try:
        config = one_vr(name).replace("    kind: fast\n", "    kind: fast\n    code: reflect\n")
        net.start_pearld(bin_dir, config, tmp_path)
        sniffer = subprocess.Popen(["ip", "netns", "exec", net.hosts["a"], "python3", "-c", SNIFF], stdout=subprocess.PIPE, text=True)
        assert sniffer.stdout.readline().strip() == "ready"
        receiver = subprocess.Popen(["ip", "netns", "exec", net.hosts["b"], "python3", "-c", RECEIVE], stdout=subprocess.PIPE, text=True)
        assert receiver.stdout.readline().strip() == "ready"
        sh("python3", "-c", """
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(20):
    s.sendto(b"m%d" % i, ("10.2.0.2", 5000))
    time.sleep(0.01)
""", ns=net.hosts["a"])
        out, _ = sniffer.communicate(timeout=15)
        crossed, _ = receiver.communicate(timeout=15)
        back = [line.split() for line in out.splitlines()]
        # The first datagram may wait for ARP (a asks the VR's kernel for 10.1.0.1).
        assert len(back) >= 18, back
        assert {(mac, dst) for _, mac, dst in back} == {(A_MAC.replace(":", ""), "0a020002")}, back
        assert [p for p, _, _ in back] == sorted({p for p, _, _ in back}, key=lambda p: int(p[1:])), "in order, once each"
        assert crossed == "", "nothing reached b"
        stats = next(v for v in net.stats()["vrs"] if v["name"] == name)
        assert stats["exceptions"].get("arp", 0) >= 1, stats["exceptions"]
    finally:
        net.close()
