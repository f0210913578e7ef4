//! Property tests: the classifier agrees with a linear scan over the installed rules, through
//! random insert/remove sequences over small field domains (so matches, overlaps and ties at
//! equal priority are frequent).

use pearl_classifier::{Classifier, ClassifierError, Field, FlowKey, Rule, RuleId, Verdict, VrId};
use pearl_wire::flow_key::{ip_to_u128, ipv4_prefix_mask};
use proptest::prelude::*;
use std::net::Ipv4Addr;

/// Installed rules in id order; the winner is the highest priority, then the lowest id.
#[derive(Default)]
struct LinearScan {
    rules: Vec<(RuleId, Rule)>,
}

impl LinearScan {
    fn lookup(&self, key: &FlowKey) -> Option<(RuleId, Verdict)> {
        self.rules
            .iter()
            .filter(|(_, r)| key.matches(&r.value, &r.mask))
            .max_by_key(|(id, r)| (r.priority, std::cmp::Reverse(*id)))
            .map(|(id, r)| (*id, r.result))
    }

    fn conflicts(&self, rule: &Rule) -> bool {
        self.rules.iter().any(|(_, r)| r.priority == rule.priority && r.result.vr != rule.result.vr && r.overlaps(rule))
    }
}

/// One EtherType of each traffic class (IPv4, IPv6, other), the last sharing IPv4's high byte.
const ETHERTYPES: [u128; 3] = [0x0800, 0x86dd, 0x0806];

fn v4(last: u8) -> u128 {
    ip_to_u128(Ipv4Addr::new(10, 0, 0, last).into())
}

/// A field match over a tiny domain: wildcard, or a value (exact or prefix).
fn small_field() -> impl Strategy<Value = Option<u8>> {
    prop_oneof![Just(None), (0u8..3).prop_map(Some)]
}

/// Destination MACs of the tiny domain, one of them multicast.
const MACS: [u128; 3] = [0x0200_0000_0100, 0x0200_0000_0101, 0x0100_5e00_0001];

fn rule() -> impl Strategy<Value = Rule> {
    prop_oneof![4 => any_rule(), 1 => interface_rule()]
}

/// The rule a data plane installs per VR interface: exact input port and destination MAC.
fn interface_rule() -> impl Strategy<Value = Rule> {
    (0u8..3, 0usize..3, 0u32..4, 0u16..3).prop_map(|(port, mac, priority, vr)| {
        let mask = FlowKey::default().with(Field::InPort, 0xffff).with(Field::EthDst, (1 << 48) - 1);
        let value = FlowKey::default().with(Field::InPort, port.into()).with(Field::EthDst, MACS[mac]);
        Rule { value, mask, priority, result: Verdict { vr: VrId(vr), rule: None, action: 0 } }
    })
}

fn any_rule() -> impl Strategy<Value = Rule> {
    (
        (small_field(), small_field()),
        small_field(),
        prop::option::of((0u8..8, prop::sample::select(vec![29u8, 30, 31, 32]))),
        prop::option::of((0u8..8, prop::sample::select(vec![24u8, 30, 32]))),
        small_field(),
        small_field(),
        small_field(),
        (0u32..4, 0u16..3, 0u32..100),
        any::<bool>(),
    )
        .prop_map(|((port, mac), ethertype, src, dst, proto, l4dst, opaque, (priority, vr, action), partial_ethertype)| {
            let mut value = FlowKey::default();
            let mut mask = FlowKey::default();
            if let Some(m) = mac {
                mask.set(Field::EthDst, (1 << 48) - 1);
                value.set(Field::EthDst, MACS[usize::from(m)]);
            }
            if let Some(e) = ethertype {
                // A partial EtherType mask spans traffic classes; an exact one selects one.
                let ethertype_mask = if partial_ethertype { 0xff00 } else { 0xffff };
                mask.set(Field::EtherType, ethertype_mask);
                value.set(Field::EtherType, ETHERTYPES[usize::from(e)] & ethertype_mask);
            }
            let mut exact = |field: Field, v: Option<u8>, base: u128| {
                if let Some(v) = v {
                    mask.set(field, u128::MAX);
                    value.set(field, base + u128::from(v));
                }
            };
            exact(Field::InPort, port, 0);
            exact(Field::IpProto, proto, 6);
            exact(Field::L4Dst, l4dst, 80);
            exact(Field::Opaque, opaque, 1 << 112);
            for (field, p) in [(Field::IpSrc, src), (Field::IpDst, dst)] {
                if let Some((last, len)) = p {
                    mask.set(field, ipv4_prefix_mask(len));
                    value.set(field, v4(last) & ipv4_prefix_mask(len));
                }
            }
            Rule { value, mask, priority, result: Verdict { vr: VrId(vr), rule: None, action } }
        })
}

fn key() -> impl Strategy<Value = FlowKey> {
    (0u8..3, 0u8..3, 0u8..8, 0u8..8, 0u8..3, 0u8..3, 0u8..3, 0usize..3).prop_map(|(port, et, src, dst, proto, l4, op, mac)| {
        FlowKey::default()
            .with(Field::InPort, port.into())
            .with(Field::EthDst, MACS[mac])
            .with(Field::EtherType, ETHERTYPES[usize::from(et)])
            .with(Field::IpSrc, v4(src))
            .with(Field::IpDst, v4(dst))
            .with(Field::IpProto, 6 + u128::from(proto))
            .with(Field::L4Dst, 80 + u128::from(l4))
            .with(Field::Opaque, (1 << 112) + u128::from(op))
    })
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Rule),
    /// Removes the installed rule at this index (modulo the count), if any.
    Remove(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(prop_oneof![3 => rule().prop_map(Op::Insert), 1 => any::<usize>().prop_map(Op::Remove)], 1..120)
}

fn check(classifier: &Classifier, reference: &LinearScan, keys: &[FlowKey]) -> Result<(), TestCaseError> {
    let mut batch = vec![None; keys.len()];
    classifier.lookup_batch(keys, &mut batch);
    // Small calls (a data-plane rx batch) take a narrower path: it must agree too.
    let mut small = vec![None; keys.len()];
    for (k, o) in keys.chunks(7).zip(small.chunks_mut(7)) {
        classifier.lookup_batch(k, o);
    }
    prop_assert_eq!(&small, &batch);
    for (key, got) in keys.iter().zip(batch) {
        let want = reference.lookup(key);
        prop_assert_eq!(classifier.lookup(key), want, "key {:x?}", key.words);
        prop_assert_eq!(got, want.map(|(_, v)| v));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn agrees_with_a_linear_scan(ops in ops(), keys in prop::collection::vec(key(), 40)) {
        let mut classifier = Classifier::new();
        let mut reference = LinearScan::default();
        for op in ops {
            match op {
                Op::Insert(rule) => {
                    let conflict = reference.conflicts(&rule);
                    match classifier.insert(rule) {
                        Ok(id) => {
                            prop_assert!(!conflict, "an ambiguous rule was accepted");
                            reference.rules.push((id, rule));
                        }
                        Err(ClassifierError::AmbiguousOverlap { .. }) => prop_assert!(conflict),
                        Err(e) => return Err(TestCaseError::fail(format!("unexpected {e}"))),
                    }
                }
                Op::Remove(i) if !reference.rules.is_empty() => {
                    let (id, rule) = reference.rules.remove(i % reference.rules.len());
                    prop_assert_eq!(classifier.remove(id), Ok(rule));
                }
                Op::Remove(_) => {}
            }
            prop_assert_eq!(classifier.len(), reference.rules.len());
        }
        // Keys drawn from the installed rules as well, so that most of them match something.
        let mut probes = keys.clone();
        for ((_, rule), noise) in reference.rules.iter().zip(keys.iter().cycle()) {
            probes.push(FlowKey { words: std::array::from_fn(|i| rule.value.words[i] | (noise.words[i] & !rule.mask.words[i])) });
        }
        check(&classifier, &reference, &probes)?;
        // Indexing the interface rules changes no verdict, and a change after it drops the
        // index rather than letting it go stale.
        classifier.index_interfaces();
        check(&classifier, &reference, &probes)?;
        // A clone is an independent snapshot (read-copy-update publishes clones).
        let snapshot = classifier.clone();
        let ids: Vec<RuleId> = reference.rules.iter().map(|(id, _)| *id).collect();
        for id in ids.iter().step_by(2) {
            classifier.remove(*id).unwrap();
        }
        check(&snapshot, &reference, &probes)?;
        reference.rules.retain(|(id, _)| ids.iter().step_by(2).all(|r| r != id));
        check(&classifier, &reference, &probes)?;
    }

    #[test]
    fn synthetic_sets_agree_with_a_linear_scan(seed in any::<u64>()) {
        let rules = pearl_classifier::synth::rules(600, seed);
        let mut classifier = Classifier::new();
        let mut reference = LinearScan::default();
        for rule in &rules {
            let id = classifier.insert(*rule).expect("synthetic sets insert cleanly");
            reference.rules.push((id, *rule));
        }
        let keys = pearl_classifier::synth::keys(&rules, 300, seed);
        check(&classifier, &reference, &keys)?;
    }
}
