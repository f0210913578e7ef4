"""A host of the name-forwarding protocol (examples/plugins/names), with AF_PACKET on eth0:

    names_host.py announce SECONDS NAME...     announce the names every 0.3 s for SECONDS
    names_host.py send HOPS NAME PAYLOAD...    one data frame per payload
    names_host.py listen SECONDS               print the data frames heard, as JSON lines

Frames go to the protocol's group address from eth0's own MAC."""

import json
import select
import socket
import struct
import sys
import time

ETHERTYPE = 0x88B5
GROUP = bytes.fromhex("01005e0017aa")
DATA, ANNOUNCE = 1, 2


def frame(sock, kind, hops, name, payload=b""):
    src = sock.getsockname()[4]
    name = name.encode()
    return GROUP + src + struct.pack("!HBBH", ETHERTYPE, kind, hops, len(name)) + name + payload


def main():
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    sock.bind(("eth0", ETHERTYPE))
    cmd = sys.argv[1]
    if cmd == "announce":
        end = time.time() + float(sys.argv[2])
        while time.time() < end:
            for name in sys.argv[3:]:
                sock.send(frame(sock, ANNOUNCE, 8, name))
            time.sleep(0.3)
    elif cmd == "send":
        hops, name = int(sys.argv[2]), sys.argv[3]
        for payload in sys.argv[4:]:
            sock.send(frame(sock, DATA, hops, name, payload.encode()))
    elif cmd == "listen":
        end = time.time() + float(sys.argv[2])
        print("listening", flush=True)
        while (left := end - time.time()) > 0:
            if not select.select([sock], [], [], left)[0]:
                break
            data, meta = sock.recvfrom(65535)
            if meta[2] == socket.PACKET_OUTGOING or len(data) < 18 or data[14] != DATA:
                continue
            n = struct.unpack("!H", data[16:18])[0]
            print(json.dumps({"name": data[18:18 + n].decode(), "hops": data[15], "payload": data[18 + n:].rstrip(b"\0").decode()}),
                  flush=True)


if __name__ == "__main__":
    main()
