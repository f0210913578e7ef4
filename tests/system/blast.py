"""Paced traffic generator: sends identical UDP frames on an interface at a given rate for a
given time through a raw AF_PACKET socket. Run inside a host namespace.

  blast.py IFACE SRC_MAC DST_MAC SRC_IP DST_IP FRAME_BYTES RATE_MBPS SECONDS
"""

import socket
import struct
import sys
import time


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def frame(src_mac, dst_mac, src_ip, dst_ip, size):
    payload = b"\xab" * (size - 14 - 20 - 8)
    udp = struct.pack("!HHHH", 4000, 4001, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    mac = lambda m: bytes(int(x, 16) for x in m.split(":"))  # noqa: E731
    return mac(dst_mac) + mac(src_mac) + b"\x08\x00" + ip + udp


def main(iface, src_mac, dst_mac, src_ip, dst_ip, size, rate_mbps, seconds):
    size, rate, seconds = int(size), float(rate_mbps) * 1e6, float(seconds)
    data = frame(src_mac, dst_mac, src_ip, dst_ip, size)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    interval = size * 8 / rate
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) - start < seconds:
        due = int((now - start) / interval) + 1
        while sent < due:
            try:
                s.send(data)
            except BlockingIOError:
                break
            sent += 1
        time.sleep(0.0005)
    print(sent)


if __name__ == "__main__":
    main(*sys.argv[1:])
