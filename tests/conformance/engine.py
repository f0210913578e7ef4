"""Sending a plan through a topology and collecting, per case, what came back to host A and
what reached host B; comparing two such runs.

A plan is built once and sent unchanged through every router: the same bytes, the same tags,
the same order. Frames go out in batches paced below the kernel's global ICMP limit (1000
errors/s, burst 50, shared by IPv4 and IPv6 in a namespace), with both hosts capturing
throughout; each captured frame is filed under the case its tag names.
"""

import collections
import fnmatch
import time
from dataclasses import dataclass, field

from . import packets
from .packets import describe, frame_keys, marker_key, normalise

TAG_BASE = 1024  # tags stay clear of well-known ports (TCP answers are keyed by port)


@dataclass
class Item:
    id: str
    group: str
    tag: int
    frames: list
    slow: bool = False
    desc: str = ""


@dataclass
class Obs:
    host: str
    frame: bytes
    partial: bool
    t: float

    def norm(self):
        """What is compared: host, normalised bytes, and whether an IPv4 header checksum the
        normalisation zeroed was right."""
        et, l3 = packets.l3_of(self.frame)
        ok = "" if et != 0x0800 or packets.ipv4_header_ok(l3) else " !ipcsum"
        ok += "" if packets.icmp_ok(self.frame) else " !icmpcsum"
        return f"{self.host} {normalise(self.frame, self.partial).hex()}{ok}"


@dataclass
class RunResult:
    router: str
    obs: dict = field(default_factory=lambda: collections.defaultdict(list))
    unmatched: list = field(default_factory=list)
    seconds: float = 0.0
    sent: int = 0
    snmp: dict = field(default_factory=dict)
    stats: dict = None
    notes: list = field(default_factory=list)


def build_plan(cases, generated=()):
    """Items for the named cases (tags from TAG_BASE) followed by the generated ones (whose
    tags the generator was given: see `next_tag`)."""
    items = []
    for i, c in enumerate(cases):
        tag = TAG_BASE + i
        items.append(Item(c.id, c.group, tag, c.frames(tag), c.slow, c.desc))
    for g in generated:
        items.append(Item(g.id, "generated", g.tag, [g.frame], False, g.desc))
    tags = [it.tag for it in items]
    assert len(set(tags)) == len(tags) and max(tags, default=0) < 65536, "tags are unique 16-bit values"
    return items


def next_tag(cases):
    return TAG_BASE + len(cases)


def registry(items):
    reg = {}
    for it in items:
        for kind in ("4", "6", "e", "t", "m"):
            reg[(kind, it.tag)] = it.id
    return reg


BACKGROUND_ICMP6 = {130, 131, 132, 133, 134, 135, 136, 143}


def background(frame):
    """What the hosts' and routers' kernels send on their own (ARP, ND, MLD, router
    solicitations): not an answer to any case."""
    et, l3 = packets.l3_of(frame)
    if et == 0x0806:
        return True
    if et == 0x86DD and len(l3) >= 41:
        nh, off = packets.v6_ext_walk(l3)
        if nh == 58 and off is not None and len(l3) > off and l3[off] in BACKGROUND_ICMP6:
            return True
    return False


def execute(topo, items, rate=600.0, batch_frames=1500, window=1.5, slow_window=5.0, log=print):
    """Sends `items` from host A through `topo`; returns a RunResult."""
    res = RunResult(topo.describe())
    reg = registry(items)
    cap = {"A": topo.capture("a"), "B": topo.capture("b")}
    sender = topo.sender()
    time.sleep(0.3)
    for c in cap.values():
        c.take()
    snmp0 = topo.snmp()
    start = time.monotonic()
    batches, cur, n = [], [], 0
    for it in items:
        if cur and n + len(it.frames) > batch_frames:
            batches.append(cur)
            cur, n = [], 0
        cur.append(it)
        n += len(it.frames)
    if cur:
        batches.append(cur)
    for b in batches:
        frames = [f for it in b for f in it.frames]
        sender.send(frames, rate=rate)
        res.sent += len(frames)
        time.sleep(slow_window if any(it.slow for it in b) else window)
    for host, c in cap.items():
        for t, frame, partial in c.take():
            o = Obs(host, frame, partial, t - start)
            if background(frame):
                continue
            keys = frame_keys(frame)
            mk = marker_key(frame)
            if mk:
                keys.append(mk)
            for k in keys:
                if k in reg:
                    res.obs[reg[k]].append(o)
                    break
            else:
                res.unmatched.append(o)
    res.seconds = time.monotonic() - start
    snmp1 = topo.snmp()
    res.snmp = {k: snmp1[k] - snmp0.get(k, 0) for k in snmp1 if snmp1[k] - snmp0.get(k, 0)}
    # (OutRateLimitHost also counts errors that had no route back: not a limit.)
    limited = res.snmp.get("IcmpOutRateLimitGlobal", 0)
    if limited:
        res.notes.append(f"the router's kernel held back {limited} ICMP messages at its global limit "
                         f"(icmp_msgs_per_sec): answers may be missing")
    if topo.router == "pearld":
        try:
            st = topo.stats()
            res.stats = {"vrs": [{k: v.get(k) for k in ("name", "kind", "forwarded_packets", "exceptions", "drops",
                                                          "slow_path") if k in v} for v in st.get("vrs", [])],
                         "ports": [{k: v.get(k) for k in ("name", "malformed") if k in v} for v in st.get("ports", [])]}
        except Exception as e:  # noqa: BLE001 - a dead pearld is a result too
            res.notes.append(f"stats unavailable: {e}")
        if topo.pearld.poll() is not None:
            res.notes.append(f"pearld exited with {topo.pearld.returncode} during the run")
    log(f"  {res.router}: {res.sent} frames in {res.seconds:.1f} s, "
        f"{sum(len(v) for v in res.obs.values())} answers filed, {len(res.unmatched)} unmatched")
    return res


# -- comparison ---------------------------------------------------------------------------------
def answer(obs, sent_frames):
    """A case's answer in words: each distinct thing seen, with a count."""
    if not obs:
        return "nothing"
    sent_l3 = packets.sent_packets(sent_frames)
    words = collections.Counter(f"{o.host}: {describe(o.frame, sent_l3)}{' (partial csum)' if o.partial else ''}"
                                for o in obs)
    return "; ".join(f"{w}" + (f" ×{c}" if c > 1 else "") for w, c in sorted(words.items()))


def field_diff(f1, f2, limit=6):
    """Where two frames differ, named by scapy's fields."""
    from scapy.all import Ether

    def flat(frame):
        out, p, i = {}, Ether(frame), 0
        while p is not None and p.name != "NoPayload" and i < 12:
            for fd in p.fields_desc:
                out[f"{p.name}.{fd.name}"] = repr(p.getfieldval(fd.name))
            p, i = p.payload if p.payload else None, i + 1
        return out

    try:
        a, b = flat(f1), flat(f2)
    except Exception:  # noqa: BLE001
        a, b = {}, {}
    diffs = [f"{k}: {a.get(k)} vs {b.get(k)}" for k in list(a) + [k for k in b if k not in a] if a.get(k) != b.get(k)]
    if not diffs and f1 != f2:
        i = next((i for i in range(min(len(f1), len(f2))) if f1[i] != f2[i]), min(len(f1), len(f2)))
        diffs = [f"byte {i}: {f1[i:i + 8].hex()} vs {f2[i:i + 8].hex()} (lengths {len(f1)}, {len(f2)})"]
    return diffs[:limit]


@dataclass
class Diff:
    case: str
    group: str
    router: str
    reference: str
    got: str
    details: list
    deviation: str = None


def compare(items, ref, other, deviations=()):
    """Each case whose normalised answers differ between the reference run and `other`."""
    out = []
    for it in items:
        r = sorted(o.norm() for o in ref.obs.get(it.id, []))
        o = sorted(x.norm() for x in other.obs.get(it.id, []))
        if r == o:
            continue
        ro, oo = ref.obs.get(it.id, []), other.obs.get(it.id, [])
        details = []
        if len(ro) == len(oo):
            for x, y in zip(sorted(ro, key=lambda q: q.norm()), sorted(oo, key=lambda q: q.norm())):
                if x.norm() != y.norm():
                    details += field_diff(normalise(x.frame, x.partial), normalise(y.frame, y.partial))
        d = Diff(it.id, it.group, other.router, answer(ro, it.frames), answer(oo, it.frames), details)
        d.deviation = deviation_for(deviations, d)
        out.append(d)
    ru = sorted(o.norm() for o in ref.unmatched)
    ou = sorted(o.norm() for o in other.unmatched)
    if ru != ou:
        extra = collections.Counter(ou) - collections.Counter(ru)
        missing = collections.Counter(ru) - collections.Counter(ou)
        if extra or missing:
            def words(c, run):
                frames = {o.norm(): o for o in run.unmatched}
                return "; ".join(f"{frames[k].host}: {describe(frames[k].frame)} [{frames[k].frame[:64].hex()}]"
                                 + (f" ×{v}" if v > 1 else "") for k, v in list(c.items())[:8]) or "nothing"
            d = Diff("unmatched", "unmatched", other.router, words(missing, ref), words(extra, other), [])
            d.deviation = deviation_for(deviations, d)
            out.append(d)
    return out


def deviation_for(deviations, d):
    kind, driver = (d.router.split(" [")[0].split("/") + ["", ""])[1:3]
    for dev in deviations:
        if fnmatch.fnmatch(d.case, dev["case"]) and fnmatch.fnmatch(kind, dev.get("kind", "*")) \
                and fnmatch.fnmatch(driver, dev.get("driver", "*")):
            return dev["reason"]
    return None


def stability(items, a, b):
    """Cases the oracle itself answers differently on two runs (to be left out)."""
    return {it.id for it in items
            if sorted(o.norm() for o in a.obs.get(it.id, [])) != sorted(o.norm() for o in b.obs.get(it.id, []))}
