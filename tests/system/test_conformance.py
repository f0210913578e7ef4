"""Differential conformance against the Linux router (issue 21), the bounded subset: the same
two-host topology around a Linux router namespace and around a pearld VR of every kind on
every port driver that runs on veth; every named case (tests/conformance/cases.py) and 300
seeded generated packets sent through each; what comes back to the sender and what reaches
the far host must match the Linux router's, byte for byte after normalisation, unless
tests/conformance/deviations.yaml lists the difference with its reason. The full run (10,000
generated packets, the ICMP rate-limit flood) is bench/conform.sh; docs/CONFORMANCE.md
explains both."""

import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from conformance import cases, engine, generator, packets, run  # noqa: E402

GENERATED = 300


@pytest.fixture(scope="module")
def plan():
    return run.plan(GENERATED, run.DEFAULT_SEED)[1]


@pytest.fixture(scope="module")
def reference(plan):
    return run.run_router(f"ct{os.getpid() % 1000}l", plan, log=print)


def test_cases_are_many_named_and_each_frame_names_its_case():
    assert len(cases.CASES) >= 100
    items = run.plan(0)[1]
    for it in items:
        for f in it.frames:
            keys = packets.frame_keys(f) + [packets.marker_key(f)]
            assert any(k and k[1] == it.tag for k in keys), f"{it.id}: a frame without its tag"


def test_the_generator_is_seeded_and_mutates():
    a = generator.generate(7, 200, 5000)
    b = generator.generate(7, 200, 5000)
    assert [g.frame for g in a] == [g.frame for g in b], "the same seed gives the same bytes"
    assert [g.frame for g in a] != [g.frame for g in generator.generate(8, 200, 5000)]
    assert len({g.desc.split()[1].split("=")[0] for g in a if len(g.desc.split()) > 1}) > 15, "many fields mutated"


# What a Linux router answers, as the harness sees it: a check that the oracle's topology is
# what the cases assume (routes, MTU, neighbours, link-local addresses).
ORACLE = {
    "icmp.v4.ttl1-udp": "A: ICMP 11/0 from 10.1.0.1 len 72 quote 44",
    "icmp.v4.net-unreach": "A: ICMP 3/0 from 10.1.0.1",
    "icmp.v4.admin-prohibited": "A: ICMP 3/13 from 10.1.0.1",
    "icmp.v4.host-unreach-route": "A: ICMP 3/1 from 10.1.0.1",
    "icmp.v4.host-unreach-arp": "A: ICMP 3/1 from 10.1.0.1",
    "icmp.v4.frag-needed": "A: ICMP 3/4 from 10.1.0.1 len 576 quote 548 mtu 1400",
    "icmp.v4.port-unreach-eth1": "A: ICMP 3/3 from 10.2.0.1",
    "icmp.v4.blackhole": "nothing",
    "icmp.v6.packet-too-big": "A: ICMPv6 2/0 from 2001:db8:1::1 len 1280 quote 1232 mtu 1400",
    "icmp.v6.admin-prohibited": "A: ICMPv6 1/1 from 2001:db8:1::1",
    "icmp.v6.addr-unreach-nd": "A: ICMPv6 1/3 from 2001:db8:1::1",
    "icmp.v6.redirect-hairpin": "A: ICMPv6 137/0 from fe80::ff:fe00:0",
    "echo.v6.link-local": "A: ICMPv6 129/0 from fe80::ff:fe00:0",
    "frag.v4.three-in-order": "B: forwarded (ttl 64→63) R.eth1→B ×3",
    "noerr.v4.ttl1-non-first-fragment": "nothing",
    "addr.v4.src-own-egress": "nothing",
    "ttl.v4.2": "B: forwarded (ttl 2→1) R.eth1→B",
    "ttl.v6.2": "B: forwarded (hlim 2→1) R.eth1→B",
}


def test_the_linux_router_answers_as_the_cases_assume(reference, plan):
    frames = {it.id: it.frames for it in plan}
    for cid, want in ORACLE.items():
        got = engine.answer(reference.obs.get(cid, []), frames[cid])
        assert got.startswith(want), f"{cid}: the Linux router answered {got!r}, expected {want!r}"
    assert not reference.notes, reference.notes


@pytest.mark.parametrize("kind,driver", run.FULL, ids=[f"{k}-{d}" for k, d in run.FULL])
def test_pearld_answers_as_the_linux_router(reference, plan, bin_dir, kind, driver):
    i = run.FULL.index((kind, driver))
    res = run.run_router(f"ct{os.getpid() % 1000}{i}", plan, log=print, router="pearld", kind=kind, driver=driver,
                         bin_dir=bin_dir)
    diffs = [d for d in engine.compare(plan, reference, res, run.load_deviations()) if not d.deviation]
    lines = [f"{d.case}: Linux {d.reference!r} / pearld {d.got!r}" + (f" [{'; '.join(d.details[:2])}]" if d.details else "")
             for d in diffs]
    assert not res.notes, res.notes
    assert not diffs, f"{len(diffs)} answers differ from the Linux router's (pearld {kind}/{driver}):\n" + "\n".join(lines)
