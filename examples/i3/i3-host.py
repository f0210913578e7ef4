#!/usr/bin/env python3
"""An I3 end host against PEARL's `code: i3` nodes:

    i3-host.py insert NODE ID_HEX PORT       ask for ID's packets at this host's UDP PORT
    i3-host.py send NODE ID_HEX PAYLOAD...   one packet to ID per payload
    i3-host.py listen PORT SECONDS           print what arrives, a JSON line each

NODE is any I3 node's address: it routes by identifier to the node that owns ID."""

import json
import pathlib
import socket
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import i3  # noqa: E402


def own_address(node):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((node, i3.PORT))
    return s.getsockname()[0]


def main():
    cmd = sys.argv[1]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if cmd == "insert":
        node, ident, port = sys.argv[2], bytes.fromhex(sys.argv[3]), int(sys.argv[4])
        s.sendto(i3.packet([ident], i3.target(own_address(node), port), flags=i3.CONTROL), (node, i3.PORT))
    elif cmd == "send":
        node, ident = sys.argv[2], bytes.fromhex(sys.argv[3])
        for payload in sys.argv[4:]:
            s.sendto(i3.packet([ident], payload.encode()), (node, i3.PORT))
    elif cmd == "listen":
        s.bind(("0.0.0.0", int(sys.argv[2])))
        end = time.time() + float(sys.argv[3])
        print("listening", flush=True)
        while (left := end - time.time()) > 0:
            s.settimeout(left)
            try:
                data, (src, _) = s.recvfrom(65535)
            except socket.timeout:
                break
            parsed = i3.parse(data)
            if parsed:
                print(json.dumps({"id": parsed[1][0].hex(), "payload": parsed[2].decode(errors="replace"), "from": src}), flush=True)


if __name__ == "__main__":
    main()
