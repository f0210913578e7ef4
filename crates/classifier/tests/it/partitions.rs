//! Partitions, quotas, refusals and scale.

use pearl_classifier::{synth, Classifier, ClassifierError, Field, FlowKey, Rule, Verdict, VrId};

fn vid_rule(port: u16, mac: u128, vr: u16, priority: u32) -> Rule {
    let mask = FlowKey::default().with(Field::InPort, u128::MAX).with(Field::EthDst, u128::MAX);
    let value = FlowKey::default().with(Field::InPort, port.into()).with(Field::EthDst, mac);
    Rule { value, mask, priority, result: Verdict { vr: VrId(vr), rule: None, action: 0 } }
}

fn key(port: u16, mac: u128) -> FlowKey {
    FlowKey::default().with(Field::InPort, port.into()).with(Field::EthDst, mac).with(Field::EtherType, 0x0800)
}

#[test]
fn a_full_partition_refuses_rules_without_touching_others() {
    let mut c = Classifier::new();
    c.set_quota(VrId(1), 2).unwrap();
    c.set_quota(VrId(2), 1).unwrap();
    c.insert(vid_rule(0, 1, 1, 10)).unwrap();
    c.insert(vid_rule(0, 2, 1, 10)).unwrap();
    let err = c.insert(vid_rule(0, 3, 1, 10)).unwrap_err();
    assert_eq!(err, ClassifierError::QuotaExceeded { vr: VrId(1), quota: 2 });
    assert!(err.to_string().contains("VR 1"), "{err}");
    assert_eq!(c.lookup(&key(0, 3)), None, "a refused rule must not be installed");
    c.insert(vid_rule(0, 4, 2, 10)).unwrap();
    assert_eq!(c.partition_rules(VrId(1)).count(), 2);
    assert_eq!(c.len(), 3);
}

#[test]
fn quota_cannot_drop_below_usage_and_removal_frees_room() {
    let mut c = Classifier::new();
    let a = c.insert(vid_rule(0, 1, 7, 10)).unwrap();
    c.insert(vid_rule(0, 2, 7, 10)).unwrap();
    assert_eq!(c.set_quota(VrId(7), 1), Err(ClassifierError::QuotaBelowUsage { vr: VrId(7), quota: 1, used: 2 }));
    c.set_quota(VrId(7), 2).unwrap();
    assert!(c.insert(vid_rule(0, 3, 7, 10)).is_err());
    c.remove(a).unwrap();
    c.insert(vid_rule(0, 3, 7, 10)).unwrap();
    assert_eq!(c.quota(VrId(7)), Some(2));
}

#[test]
fn value_outside_mask_is_refused_by_field() {
    let mut c = Classifier::new();
    let mut rule = vid_rule(0, 1, 1, 10);
    rule.value.set(Field::L4Dst, 80);
    let err = c.insert(rule).unwrap_err();
    assert_eq!(err, ClassifierError::ValueOutsideMask { field: "l4_dst" });
    assert!(err.to_string().contains("l4_dst"));
    assert!(c.is_empty());
}

#[test]
fn same_priority_overlap_across_vrs_is_refused_naming_both() {
    let mut c = Classifier::new();
    let first = c.insert(vid_rule(0, 1, 1, 10)).unwrap();
    // Wildcarding the port still overlaps rule `first`.
    let mut broad = vid_rule(0, 1, 2, 10);
    broad.mask.set(Field::InPort, 0);
    broad.value.set(Field::InPort, 0);
    let err = c.insert(broad).unwrap_err();
    assert_eq!(err, ClassifierError::AmbiguousOverlap { vr: VrId(2), other: first, other_vr: VrId(1), priority: 10 });
    let text = err.to_string();
    assert!(text.contains("VR 2") && text.contains("VR 1") && text.contains("rule 0"), "{text}");
    // The same VR may tie with itself (the earlier rule wins), another priority is unambiguous.
    c.insert(Rule { result: Verdict { vr: VrId(1), rule: None, action: 9 }, ..broad }).unwrap();
    c.insert(Rule { priority: 11, ..broad }).unwrap();
    assert_eq!(c.lookup(&key(0, 1)).map(|(_, v)| v.vr), Some(VrId(2)));
    assert_eq!(c.lookup(&key(5, 1)).map(|(_, v)| v.vr), Some(VrId(2)));
}

#[test]
fn equal_priority_goes_to_the_earlier_rule() {
    let mut c = Classifier::new();
    let mut broad = vid_rule(0, 1, 1, 10);
    broad.mask.set(Field::InPort, 0);
    broad.value.set(Field::InPort, 0);
    let first = c.insert(Rule { result: Verdict { vr: VrId(1), rule: None, action: 1 }, ..broad }).unwrap();
    let second = c.insert(vid_rule(0, 1, 1, 10)).unwrap();
    assert_eq!(c.lookup(&key(0, 1)).map(|(id, _)| id), Some(first));
    c.remove(first).unwrap();
    assert_eq!(c.lookup(&key(0, 1)).map(|(id, _)| id), Some(second));
}

#[test]
fn removing_a_partition_removes_only_its_rules() {
    let mut c = Classifier::new();
    c.set_quota(VrId(1), 10).unwrap();
    for mac in 0..5 {
        c.insert(vid_rule(0, mac, 1, 10)).unwrap();
    }
    let kept = c.insert(vid_rule(0, 99, 2, 10)).unwrap();
    assert_eq!(c.remove_partition(VrId(1)), 5);
    assert_eq!(c.len(), 1);
    assert_eq!(c.quota(VrId(1)), None);
    assert_eq!(c.lookup(&key(0, 3)), None);
    assert_eq!(c.lookup(&key(0, 99)).map(|(id, _)| id), Some(kept));
    assert_eq!(c.vrs().collect::<Vec<_>>(), vec![VrId(2)]);
}

#[test]
fn unknown_rules_are_reported() {
    let mut c = Classifier::new();
    let id = c.insert(vid_rule(0, 1, 1, 10)).unwrap();
    c.remove(id).unwrap();
    assert_eq!(c.remove(id), Err(ClassifierError::UnknownRule(id)));
}

#[test]
fn shared_between_threads_and_cloned() {
    fn assert_send_sync_clone<T: Send + Sync + Clone>() {}
    assert_send_sync_clone::<Classifier>();
}

#[test]
fn holds_64k_rules_and_finds_each() {
    let rules = synth::rules(65_536, 7);
    let mut c = Classifier::new();
    let started = std::time::Instant::now();
    let ids: Vec<_> = rules.iter().map(|r| c.insert(*r).expect("synthetic rules insert")).collect();
    eprintln!("built 64K rules in {:?}, {} tables", started.elapsed(), c.table_count());
    assert_eq!(c.len(), 65_536);
    // A rule's own value matches it; the winner is it or something that outranks it.
    for (rule, id) in rules.iter().zip(&ids).step_by(7) {
        let (won, _) = c.lookup(&rule.value).expect("a rule's value matches it");
        let winner = c.rule(won).unwrap();
        assert!(winner.priority > rule.priority || won == *id || (winner.priority == rule.priority && won < *id));
    }
}
