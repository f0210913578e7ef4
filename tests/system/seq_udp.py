"""Sequenced UDP through kernel sockets, for counting what a path loses and reorders.

  seq_udp.py send DST PORT PPS SECONDS    prints the datagrams sent
  seq_udp.py sink PORT SECONDS [times]    prints {"received", "unique", "reordered", "max_gap_ms"} once
                                          SECONDS have passed and nothing came for 2 s; with
                                          `times`, also each datagram's arrival (CLOCK_MONOTONIC, s)
"""

import json
import socket
import struct
import sys
import time


def send(dst, port, pps, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gap, start, seq = 1.0 / pps, time.monotonic(), 0
    while (now := time.monotonic()) - start < seconds:
        due = start + seq * gap
        if now < due:
            time.sleep(due - now)
        s.sendto(struct.pack("!Q", seq) + b"\x5a" * 56, (dst, port))
        seq += 1
    print(seq)


def sink(port, seconds, times=False):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", port))
    seen, received, reordered, top, last, max_gap, arrivals = set(), 0, 0, -1, None, 0.0, []
    end = time.monotonic() + seconds
    while True:
        s.settimeout(max(end - time.monotonic(), 0) + 2.0)
        try:
            data = s.recv(2048)
        except socket.timeout:
            break
        now = time.monotonic()
        seq = struct.unpack("!Q", data[:8])[0]
        received += 1
        reordered += seq < top
        top = max(top, seq)
        seen.add(seq)
        if last is not None:
            max_gap = max(max_gap, now - last)
        last = now
        if times:
            arrivals.append(round(now, 6))
    report = {"received": received, "unique": len(seen), "reordered": reordered, "max_gap_ms": round(max_gap * 1e3, 2)}
    if times:
        report["times"] = arrivals
    print(json.dumps(report))


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        sink(int(sys.argv[2]), float(sys.argv[3]), times=sys.argv[4:] == ["times"])
