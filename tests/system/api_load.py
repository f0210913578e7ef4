#!/usr/bin/env python3
"""Holds many idle and slow clients on pearld's API while probing it, as a flood of careless or
hostile clients would (issue 16, item 4). Prints one JSON object.

Idle clients connect and send nothing; slow clients trickle a request a byte at a time and, when
pearld lets them go, come back. Meanwhile /healthz is asked `--probes` times on each listener,
one request at a time, and `pearlctl stats` runs once. Run it inside the namespace where the
TCP listener lives (`ip netns exec`).
"""
import argparse
import json
import resource
import selectors
import socket
import statistics
import subprocess
import threading
import time


def connect(target):
    if isinstance(target, str):
        s = socket.socket(socket.AF_UNIX)
    else:
        s = socket.socket(socket.AF_INET)
    s.settimeout(10)
    s.connect(target)
    return s


def ask_healthz(target):
    """One /healthz round trip: (seconds, status)."""
    start = time.monotonic()
    s = connect(target)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    finally:
        s.close()
    return time.monotonic() - start, int(reply.split(b" ", 2)[1]) if reply else 0


class Crowd:
    """Idle and slow clients on one listener."""

    SLOW_REQUEST = b"GET /v1/stats HTTP/1.1\r\nX-Slow: " + b"a" * 4000 + b"\r\n\r\n"

    def __init__(self, target, idle, slow):
        self.target = target
        self.idle = [connect(target) for _ in range(idle)]
        self.slow = {}
        self.sel = selectors.DefaultSelector()
        for _ in range(slow):
            self._add_slow()
        self.comebacks = 0

    def _add_slow(self):
        s = connect(self.target)
        s.setblocking(False)
        self.slow[s] = 0
        self.sel.register(s, selectors.EVENT_READ)

    def trickle(self):
        """Sends the next byte of every slow client; replaces those pearld let go."""
        for key, _ in self.sel.select(timeout=0):
            s = key.fileobj
            self.sel.unregister(s)
            del self.slow[s]
            s.close()
            self._add_slow()
            self.comebacks += 1
        for s, at in list(self.slow.items()):
            try:
                s.send(self.SLOW_REQUEST[at:at + 1])
                self.slow[s] = at + 1
            except OSError:
                pass

    def idle_still_open(self):
        """How many idle clients pearld has neither answered nor closed yet."""
        open_ = 0
        for s in self.idle:
            s.setblocking(False)
            try:
                s.recv(1, socket.MSG_PEEK)
            except BlockingIOError:
                open_ += 1
            except OSError:
                pass
        return open_

    def close(self):
        for s in self.idle + list(self.slow):
            s.close()


def percentiles(xs):
    xs = sorted(xs)
    return {"p50_ms": round(statistics.median(xs) * 1000, 2), "p99_ms": round(xs[min(len(xs) - 1, int(len(xs) * 0.99))] * 1000, 2),
            "max_ms": round(xs[-1] * 1000, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unix", required=True)
    ap.add_argument("--tcp", help="HOST:PORT of --api-tcp")
    ap.add_argument("--idle", type=int, default=1000, help="idle clients per listener")
    ap.add_argument("--slow", type=int, default=100, help="slow clients per listener")
    ap.add_argument("--probes", type=int, default=100, help="/healthz requests per listener")
    ap.add_argument("--pearlctl")
    ap.add_argument("--watch-idle", type=float, default=0,
                    help="then wait up to this long for pearld to let every idle and slow client go")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    targets = {"unix": args.unix}
    if args.tcp:
        host, port = args.tcp.rsplit(":", 1)
        targets["tcp"] = (host, int(port))
    crowds = {name: Crowd(t, args.idle, args.slow) for name, t in targets.items()}
    stop = threading.Event()

    def trickle():
        while not stop.wait(0.05):
            for c in crowds.values():
                c.trickle()

    trickler = threading.Thread(target=trickle)
    trickler.start()
    out = {"idle_per_listener": args.idle, "slow_per_listener": args.slow, "healthz": {}}
    try:
        time.sleep(0.5)
        for name, t in targets.items():
            latencies, statuses = [], set()
            for _ in range(args.probes):
                took, status = ask_healthz(t)
                latencies.append(took)
                statuses.add(status)
                time.sleep(0.01)
            out["healthz"][name] = {"statuses": sorted(statuses), **percentiles(latencies)}
        if args.pearlctl:
            start = time.monotonic()
            done = subprocess.run([args.pearlctl, "--socket", args.unix, "stats"], capture_output=True, text=True, timeout=30)
            out["pearlctl_stats"] = {"rc": done.returncode, "seconds": round(time.monotonic() - start, 3),
                                     "printed": bool(done.stdout.strip()), "stderr": done.stderr.strip()[:200]}
        if args.watch_idle:
            start = time.monotonic()
            while time.monotonic() - start < args.watch_idle:
                if all(c.idle_still_open() == 0 and c.comebacks >= args.slow for c in crowds.values()):
                    break
                time.sleep(0.2)
            out["idle_open_after"] = {name: c.idle_still_open() for name, c in crowds.items()}
            out["idle_closed_within_s"] = round(time.monotonic() - start, 2)
        out["slow_comebacks"] = {name: c.comebacks for name, c in crowds.items()}
    finally:
        stop.set()
        trickler.join()
        for c in crowds.values():
            c.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
