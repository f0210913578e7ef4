"""Sends or captures frames on an interface; run inside a host's namespace with
`ip netns exec NS python3 scapy_tool.py ...` (scapy itself cannot enter a namespace).

  scapy_tool.py send IFACE IN.pcap [--gap SECONDS]
  scapy_tool.py sniff IFACE OUT.pcap SECONDS
"""

import pathlib
import sys
import time

from scapy.all import conf, rdpcap, sendp, sniff, wrpcap  # noqa: E402

conf.verb = 0


def main(argv):
    cmd, iface, path = argv[1], argv[2], argv[3]
    if cmd == "send":
        gap = float(argv[5]) if len(argv) > 5 and argv[4] == "--gap" else 0.0
        frames = rdpcap(path)
        if gap:
            for frame in frames:
                sendp(frame, iface=iface)
                time.sleep(gap)
        else:
            sendp(frames, iface=iface)
    elif cmd == "sniff":
        # Only frames arriving on the wire: outgoing copies would look like forwarded traffic.
        # OUT.pcap.ready appears once the socket listens: callers wait for it before sending.
        ready = pathlib.Path(path + ".ready")
        frames = sniff(iface=iface, timeout=float(argv[4]), filter="inbound", started_callback=ready.touch)
        wrpcap(path, frames)
    else:
        sys.exit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv)
