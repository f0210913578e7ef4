#!/usr/bin/env python3
"""The control process of a PEARL `code: i3` VR: its Chord membership and its slow path. pearld
runs it in the VR's namespace as the VR's control plane:

    control_plane: {command: [i3-control.py, --api, /run/pearl/api.sock, --id, POSITION_HEX,
                              --members, "POSITION_HEX@ADDRESS,..."]}

Membership: every node of the ring is listed (this one too, by its position); each says hello
to the others every second (UDP port 5611), and a node not heard from for 3.5 s is left out
until it is heard again. From the live members it computes its predecessor and its Chord
fingers (the successor of position + 2^k, k = 0..127) and writes them into the VR's tables
`ring` and `fingers` through pearld's API, where the fast path reads them.

Slow path: what the fast path hands to the VR's kernel arrives on UDP port 5610 here. Trigger
insertions (flag CONTROL) become entries of table `triggers` (a second target for the same
identifier makes it a multicast trigger); packets matching a multicast trigger are copied to
each target; an identifier stack is popped and the packet sent to the owner of the next
identifier; a trigger whose target is an identifier replaces the packet's."""

import argparse
import http.client
import json
import os
import pathlib
import select
import socket
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import i3  # noqa: E402

HELLO_PORT = 5611
HELLO = b"i3-hello"
DEAD_AFTER = 3.5
BITS = 128


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=5)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(5)
        self.sock.connect(self.path)


class Node:
    def __init__(self, api, vr, me, members):
        self.api, self.vr, self.me, self.members = api, vr, me, members
        self.heard = {m: time.time() for m in members}
        self.written = None
        self.triggers = {}

    def call(self, method, path, body=None):
        conn = UnixHTTPConnection(self.api)
        conn.request(method, f"/v1/vrs/{self.vr}/tables/{path}", body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        conn.close()
        if r.status >= 300 and not (method == "DELETE" and r.status == 404):
            raise RuntimeError(f"{method} {path}: {r.status} {data.decode(errors='replace')}")

    def live(self):
        now = time.time()
        return sorted(m for m in self.members if m == self.me or now - self.heard[m] < DEAD_AFTER)

    def successor(self, position, live):
        return next((m for m in live if m >= position), live[0])

    def owner_address(self, position):
        return self.members[self.successor(position, self.live())]

    def sync(self):
        """Writes the ring and fingers the live members make, when they changed."""
        live = self.live()
        predecessor = live[(live.index(self.me) - 1) % len(live)]
        fingers = {self.successor((self.me + (1 << k)) % (1 << BITS), live) for k in range(BITS)} - {self.me}
        state = (predecessor, tuple(sorted(fingers)))
        if state == self.written:
            return
        old = set(self.written[1]) if self.written else set()
        for f in fingers:
            self.call("PUT", f"fingers/{f.to_bytes(16, 'big').hex()}", {"value": socket.inet_aton(self.members[f]).hex()})
        for f in old - fingers:
            self.call("DELETE", f"fingers/{f.to_bytes(16, 'big').hex()}")
        self.call("PUT", f"ring/{b'self'.hex()}", {"value": (self.me.to_bytes(16, "big") + predecessor.to_bytes(16, "big")).hex()})
        self.written = state
        print(f"i3-control: {self.vr} predecessor {predecessor:032x}, {len(fingers)} finger(s)", flush=True)

    def owns(self, position):
        live = self.live()
        return self.successor(position, live) == self.me

    def slow_path(self, data, out):
        parsed = i3.parse(data)
        if not parsed:
            return
        flags, ids, payload = parsed
        top = ids[0]
        if not self.owns(i3.position(top)):
            out.sendto(data, (self.owner_address(i3.position(top)), i3.PORT))
            return
        if flags & i3.CONTROL:
            targets = self.triggers.setdefault(top, [])
            if payload[:6] not in targets:
                targets.append(payload[:6])
                self.call("PUT", f"triggers/{top.hex()}", {"value": b"".join(targets).hex()})
                print(f"i3-control: trigger {top.hex()[:16]}... → {len(targets)} target(s)", flush=True)
            return
        if len(ids) > 1:
            rest = i3.packet(ids[1:], payload, flags)
            out.sendto(rest, (self.owner_address(i3.position(ids[1])), i3.PORT))
            return
        for t in self.triggers.get(top, []):
            out.sendto(data, (socket.inet_ntoa(t[:4]), int.from_bytes(t[4:6], "big")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--api", required=True)
    ap.add_argument("--vr", default=None, help="this VR (default: $PEARL_VR, set by pearld)")
    ap.add_argument("--id", required=True, help="this node's ring position, 32 hex digits")
    ap.add_argument("--members", required=True, help="POSITION_HEX@ADDRESS of every node, this one too")
    a = ap.parse_args()
    vr = a.vr or os.environ.get("PEARL_VR")
    members = {int(p, 16): addr for p, addr in (m.split("@") for m in a.members.split(","))}
    node = Node(a.api, vr, int(a.id, 16), members)
    data_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    data_sock.bind(("0.0.0.0", i3.PORT))
    hello = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    hello.bind(("0.0.0.0", HELLO_PORT))
    next_hello = 0
    while True:
        now = time.time()
        if now >= next_hello:
            for m, addr in members.items():
                if m != node.me:
                    try:
                        hello.sendto(HELLO + node.me.to_bytes(16, "big"), (addr, HELLO_PORT))
                    except OSError:
                        pass
            node.sync()
            next_hello = now + 1
        ready, _, _ = select.select([data_sock, hello], [], [], max(0.0, next_hello - time.time()))
        for s in ready:
            data, _ = s.recvfrom(65535)
            if s is hello:
                if data.startswith(HELLO) and len(data) == len(HELLO) + 16:
                    sender = int.from_bytes(data[len(HELLO):], "big")
                    if sender in node.heard:
                        node.heard[sender] = time.time()
            else:
                node.slow_path(data, data_sock)


if __name__ == "__main__":
    main()
