"""The I3 packet format of PEARL's `code: i3` (crates/plugin/src/i3.rs), for hosts and control
processes: UDP to an I3 node's port 5610, an I3 header (version 1, flags, the depth of the
identifier stack, a reserved byte, 32 bytes per identifier), then the payload. A trigger
insertion is a packet with flag CONTROL whose payload is the target: an IPv4 address and a UDP
port (6 bytes)."""

import socket
import struct

PORT = 5610
VERSION = 1
CONTROL = 1


def packet(ids, payload=b"", flags=0):
    return struct.pack("!BBBB", VERSION, flags, len(ids), 0) + b"".join(ids) + payload


def parse(data):
    """(flags, ids, payload), or None for what is not an I3 packet."""
    if len(data) < 36 or data[0] != VERSION or data[2] == 0 or len(data) < 4 + 32 * data[2]:
        return None
    n = data[2]
    return data[1], [data[4 + 32 * i:36 + 32 * i] for i in range(n)], data[4 + 32 * n:]


def target(addr, port):
    return socket.inet_aton(addr) + struct.pack("!H", port)


def position(identifier):
    """Where an identifier sits on the Chord ring: its first 128 bits."""
    return int.from_bytes(identifier[:16], "big")
