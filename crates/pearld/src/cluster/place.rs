//! Where each VR of the cluster's nets runs: a `node:` named is where it runs (also while that
//! node is down: its links are then down); a `node: auto` VR is where the scheduler's
//! `/pearl/assign/NODE/NET/VR` puts it, and the scheduler (one node, elected) gives an auto VR
//! whose node is gone or was never chosen the live node with the most room: the fewest VRs
//! per worker of its capacity (the resource manager's figure), then the name.

use super::part::{wanted, Wanted};
use super::record::NodeRecord;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// (net, VR) → node.
pub type Placed = BTreeMap<(String, String), String>;

/// Where every VR is as the nets and the scheduler's assignments say, and the auto VRs that
/// need a (new) node: none chosen yet or only on nodes that are down.
pub fn resolve(
    nets: &BTreeMap<String, Value>,
    assigns: &[(String, String, String)],
    live: &HashMap<String, NodeRecord>,
) -> (Placed, Vec<(String, String)>) {
    let mut placed = Placed::new();
    let mut homeless = Vec::new();
    for (net, spec) in nets {
        for (vr, want) in wanted(spec) {
            let key = (net.clone(), vr.clone());
            match want {
                Wanted::Node(n) => {
                    placed.insert(key, n);
                }
                Wanted::Auto => {
                    let on: Vec<&String> = assigns.iter().filter(|(_, a, v)| *a == *net && *v == vr).map(|(n, _, _)| n).collect();
                    match on.iter().find(|n| live.contains_key(n.as_str())).or(on.first()) {
                        Some(n) if live.contains_key(n.as_str()) => {
                            placed.insert(key, (*n).clone());
                        }
                        Some(n) => {
                            placed.insert(key.clone(), (*n).clone());
                            homeless.push(key);
                        }
                        None => homeless.push(key),
                    }
                }
            }
        }
    }
    (placed, homeless)
}

/// The live node with the most room for one more VR, given what is placed.
pub fn choose(placed: &Placed, live: &HashMap<String, NodeRecord>) -> Option<String> {
    let load = |n: &str| placed.values().filter(|x| x.as_str() == n).count() as f64;
    let workers = |r: &NodeRecord| r.capacity["capacity"]["workers"].as_f64().unwrap_or(1.0).max(1.0);
    live.values()
        .map(|r| (load(&r.name) / workers(r), r.name.clone()))
        .min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::super::record::Underlay;
    use super::*;
    use serde_json::json;

    fn record(name: &str, workers: u64) -> NodeRecord {
        NodeRecord {
            name: name.into(),
            api: None,
            underlay: Underlay { device: "u".into(), address: "10.0.0.1".into(), mtu: 1500 },
            capacity: json!({"capacity": {"workers": workers}}),
            vrs: vec![],
            since: 0,
            lease: 1,
            lease_ttl: 5,
        }
    }

    #[test]
    fn an_auto_vr_of_a_dead_node_needs_a_new_one_and_gets_the_roomiest() {
        let nets: BTreeMap<String, Value> = [(
            "lab".to_string(),
            json!({"vrs": [{"name": "r1", "node": "n1"}, {"name": "r2", "node": "n2"}, {"name": "r3", "node": "auto"}, {"name": "r4"}]}),
        )]
        .into();
        let live: HashMap<String, NodeRecord> = [("n1".to_string(), record("n1", 1)), ("n3".to_string(), record("n3", 4))].into();
        let assigns = vec![("n2".to_string(), "lab".to_string(), "r3".to_string())];
        let (placed, homeless) = resolve(&nets, &assigns, &live);
        assert_eq!(placed[&("lab".into(), "r2".into())], "n2", "a named node stays, down or not");
        assert_eq!(placed[&("lab".into(), "r3".into())], "n2", "until moved, where it was");
        assert_eq!(homeless, [("lab".to_string(), "r3".to_string()), ("lab".to_string(), "r4".to_string())]);
        assert_eq!(choose(&placed, &live).as_deref(), Some("n3"), "n1 has a VR on its one worker; n3 none on four");
        let assigns =
            vec![("n2".to_string(), "lab".to_string(), "r3".to_string()), ("n1".to_string(), "lab".to_string(), "r3".to_string())];
        let (placed, homeless) = resolve(&nets, &assigns, &live);
        assert_eq!(placed[&("lab".into(), "r3".into())], "n1", "the live assignment wins");
        assert_eq!(homeless.len(), 1);
    }
}
