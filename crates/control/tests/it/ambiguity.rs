//! Rules of two VRs at one priority that a frame could match both of are refused, and the
//! pair named is the first a scan over every pair of VRs in document order meets: the
//! grouping by priority that makes thousands of rule-less VRs cheap must not change which.

use pearl_control::parse_config;
use proptest::prelude::*;

/// A rule `{ip_dst: 10.net.0.0/16}` or, with `net` None, `{ip_dst: 10.0.0.0/8}`, at `priority`.
type Rule = (Option<u8>, u32);

fn overlap(a: &Rule, b: &Rule) -> bool {
    match (a.0, b.0) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// The definition: every pair of VRs, every pair of their rules, first in document order.
fn first_ambiguous(vrs: &[Vec<Rule>]) -> Option<(usize, usize, usize, usize)> {
    for (i, a) in vrs.iter().enumerate() {
        for (j, b) in vrs.iter().enumerate().skip(i + 1) {
            for (ri, ra) in a.iter().enumerate() {
                for (rj, rb) in b.iter().enumerate() {
                    if ra.1 == rb.1 && overlap(ra, rb) {
                        return Some((i, j, ri, rj));
                    }
                }
            }
        }
    }
    None
}

fn document(vrs: &[Vec<Rule>]) -> String {
    let mut doc = String::from("ports:\n  - {name: p0, interface: veth0}\nvrs:\n");
    for (k, rules) in vrs.iter().enumerate() {
        doc += &format!("  - name: v{k}\n    interfaces: [{{name: eth0, port: p0, mac: \"02:00:00:{k:02x}:01:00\"}}]\n    match:\n");
        for (net, priority) in rules {
            let dst = net.map_or("10.0.0.0/8".to_string(), |n| format!("10.{n}.0.0/16"));
            doc += &format!("      - {{ip_dst: {dst}, priority: {priority}}}\n");
        }
        if rules.is_empty() {
            doc.truncate(doc.len() - "    match:\n".len());
        }
    }
    doc
}

proptest! {
    #[test]
    fn the_pair_refused_is_the_first_in_document_order(
        vrs in prop::collection::vec(prop::collection::vec((prop::option::weighted(0.9, 0u8..6), 1u32..4), 0..4), 1..12)
    ) {
        let result = parse_config(&document(&vrs));
        match first_ambiguous(&vrs) {
            None => prop_assert!(result.is_ok(), "{:?}", result.err()),
            Some((i, j, ri, rj)) => {
                let e = result.expect_err("ambiguous rules accepted").to_string();
                prop_assert!(e.starts_with(&format!("vrs[{j}].match[{rj}]: overlaps vrs[{i}].match[{ri}] ")), "{e}");
            }
        }
    }
}
