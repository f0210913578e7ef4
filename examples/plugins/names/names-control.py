#!/usr/bin/env python3
"""The control program of a name-forwarding VR (the `names` plugin): run by pearld in the VR's
namespace as its control plane,

    control_plane: {command: [names-control.py, --api, /run/pearl/api.sock]}

it learns routes from announcements and writes them into the plugin's `names` table through
pearld's API, then announces on. An announcement (type 2) names a prefix someone serves; the
plugin hands it to the VR's kernel, where this program reads it on the interface it came in
by, adds that interface to the prefix's route, and sends it on, one hop less, out of every
other interface (from that interface's own MAC, so the next VR knows where it came from).
Hosts announce what they serve every few seconds, so a VR that starts late learns too."""

import argparse
import http.client
import json
import os
import select
import socket
import struct
import sys

ETHERTYPE = 0x88B5
GROUP = bytes.fromhex("01005e0017aa")
ANNOUNCE = 2


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=5)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(5)
        self.sock.connect(self.path)


def api(path, method, url, body=None):
    conn = UnixHTTPConnection(path)
    conn.request(method, url, body=json.dumps(body) if body is not None else None,
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {url}: {r.status} {data.decode(errors='replace')}")
    return json.loads(data)


def parse_announcement(frame):
    """(hops, name) of an announcement frame, or None."""
    if len(frame) < 18 or struct.unpack("!H", frame[12:14])[0] != ETHERTYPE or frame[14] != ANNOUNCE:
        return None
    hops, name_len = frame[15], struct.unpack("!H", frame[16:18])[0]
    if 18 + name_len > len(frame):
        return None
    return hops, frame[18:18 + name_len]


def announcement(src_mac, hops, name):
    return GROUP + src_mac + struct.pack("!HBBH", ETHERTYPE, ANNOUNCE, hops, len(name)) + name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--api", required=True, help="pearld's API socket")
    ap.add_argument("--vr", default=os.environ.get("PEARL_VR"), help="this VR's name (default: $PEARL_VR, set by pearld)")
    args = ap.parse_args()
    if not args.vr:
        sys.exit("names-control: --vr or PEARL_VR is needed")
    interfaces = [i["name"] for i in api(args.api, "GET", f"/v1/vrs/{args.vr}")["interfaces"]]
    socks = {}
    macs = {}
    for index, name in enumerate(interfaces):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
        s.bind((name, ETHERTYPE))
        socks[s] = index
        with open(f"/sys/class/net/{name}/address") as f:
            macs[index] = bytes.fromhex(f.read().strip().replace(":", ""))
    routes = {}
    print(f"names-control: {args.vr} on {interfaces}", flush=True)
    while True:
        ready, _, _ = select.select(list(socks), [], [])
        for s in ready:
            frame, meta = s.recvfrom(65535)
            # Only what came in: a socket also sees what this program sends.
            if meta[2] == socket.PACKET_OUTGOING:
                continue
            parsed = parse_announcement(frame)
            if parsed is None:
                continue
            hops, name = parsed
            came_by = socks[s]
            mask = routes.get(name, 0) | (1 << came_by)
            if mask != routes.get(name):
                api(args.api, "PUT", f"/v1/vrs/{args.vr}/tables/names/{name.hex()}", {"value": struct.pack("<Q", mask).hex()})
                routes[name] = mask
                print(f"names-control: {name.decode(errors='replace')} by {interfaces[came_by]}", flush=True)
            if hops > 1:
                for other, index in socks.items():
                    if index != came_by:
                        other.send(announcement(macs[index], hops - 1, name))


if __name__ == "__main__":
    main()
