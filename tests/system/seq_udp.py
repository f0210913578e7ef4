"""Sequenced UDP through kernel sockets, for counting what a path loses and reorders.

  seq_udp.py send DST PORT PPS SECONDS    prints the datagrams sent
  seq_udp.py sink PORT SECONDS [times]    prints {"received", "unique", "reordered", "max_gap_ms",
                                          "max_path_gap_ms"} once SECONDS have passed and nothing
                                          came for 2 s; with `times`, also each datagram's arrival
                                          (CLOCK_MONOTONIC, s) and what the path added to its gap
                                          (`path_gaps_ms`)

Each datagram carries its sequence number and the time it was sent (CLOCK_REALTIME, ns); the
sink takes the kernel's receive time of each (SO_TIMESTAMPNS, the same clock). `max_gap_ms` is
the longest silence at the sink, the sender's own hiccups included; `max_path_gap_ms` is the
longest the path added to one: the largest (arrival gap − send gap) between datagrams that
arrive one after the other, which neither the sender's pacing nor the sink's scheduling moves.
"""

import json
import socket
import struct
import sys
import time

# Linux's SO_TIMESTAMPNS (also the type of the control message it adds); Python does not name it.
SO_TIMESTAMPNS = 35


def send(dst, port, pps, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gap, start, seq = 1.0 / pps, time.monotonic(), 0
    while (now := time.monotonic()) - start < seconds:
        due = start + seq * gap
        if now < due:
            time.sleep(due - now)
        s.sendto(struct.pack("!QQ", seq, time.time_ns()) + b"\x5a" * 48, (dst, port))
        seq += 1
    print(seq)


def sink(port, seconds, times=False):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", port))
    seen, received, reordered, top, last, max_gap, arrivals = set(), 0, 0, -1, None, 0.0, []
    last_path, max_path_gap, added_ms = None, 0, []
    end = time.monotonic() + seconds
    while True:
        s.settimeout(max(end - time.monotonic(), 0) + 2.0)
        try:
            data, ancillary, _, _ = s.recvmsg(2048, 64)
        except socket.timeout:
            break
        now = time.monotonic()
        seq, sent_ns = struct.unpack("!QQ", data[:16])
        stamps = [d for level, kind, d in ancillary if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS]
        if stamps:
            sec, nsec = struct.unpack("qq", stamps[0][:16])
            arrived_ns = sec * 1_000_000_000 + nsec
            added = (arrived_ns - last_path[0]) - (sent_ns - last_path[1]) if last_path is not None else 0
            max_path_gap = max(max_path_gap, added)
            last_path = (arrived_ns, sent_ns)
        received += 1
        reordered += seq < top
        top = max(top, seq)
        seen.add(seq)
        if last is not None:
            max_gap = max(max_gap, now - last)
        last = now
        if times:
            arrivals.append(round(now, 6))
            added_ms.append(round(added / 1e6, 3) if stamps else 0.0)
    report = {"received": received, "unique": len(seen), "reordered": reordered, "max_gap_ms": round(max_gap * 1e3, 2),
              "max_path_gap_ms": round(max_path_gap / 1e6, 3)}
    if times:
        report["times"] = arrivals
        report["path_gaps_ms"] = added_ms
    print(json.dumps(report))


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        sink(int(sys.argv[2]), float(sys.argv[3]), times=sys.argv[4:] == ["times"])
