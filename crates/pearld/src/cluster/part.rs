//! A node's part of a net placed over the cluster: the VRs placed on it, the links between two
//! of them as wires (as on one node), and each link to a VR on another node as a `vxlan` port
//! towards that node's underlay address, the VNI the link was given. The part is a net entry
//! and ports, a function of the net, where its VRs are, the nodes' underlays and the VNIs
//! alone: the same inputs give the same part, so an unchanged part lands as no change.

use super::record::Underlay;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

/// Where a net's VR is to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Wanted {
    Node(String),
    /// The scheduler places it (also when no `node:` is given).
    Auto,
}

/// The `node:` of each of the net's VRs, in order.
pub fn wanted(spec: &Value) -> Vec<(String, Wanted)> {
    spec["vrs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v["name"].as_str()?.to_string();
            let want = match v["node"].as_str() {
                Some(n) if n != "auto" => Wanted::Node(n.to_string()),
                _ => Wanted::Auto,
            };
            Some((name, want))
        })
        .collect()
}

/// The net's `node:` keys checked (a node's name or `auto`), each error at its field.
pub fn check_nodes(net: &str, spec: &Value) -> Result<(), pearl_control::ConfigError> {
    for (i, v) in spec["vrs"].as_array().into_iter().flatten().enumerate() {
        let Some(n) = v.get("node") else { continue };
        let ok = n
            .as_str()
            .is_some_and(|s| !s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
        if !ok {
            return Err(pearl_control::ConfigError::at(
                format!("nets.{net}.vrs[{i}].node"),
                format!("{n}: expected a node's name (letters, digits, '-', '_', '.') or auto"),
            ));
        }
    }
    Ok(())
}

/// The net without its `node:` keys: what one node would make of it whole.
pub fn without_nodes(spec: &Value) -> Value {
    let mut s = spec.clone();
    for v in s["vrs"].as_array_mut().into_iter().flatten() {
        if let Some(o) = v.as_object_mut() {
            o.remove("node");
        }
    }
    s
}

/// A link's name in the store: its two ends as written, `red/eth1|blue/eth0`.
pub fn link_key(link: &Value) -> String {
    format!("{}|{}", link["a"].as_str().unwrap_or_default(), link["b"].as_str().unwrap_or_default())
}

fn end_vr(end: &str) -> (&str, &str) {
    end.split_once('/').unwrap_or((end, ""))
}

/// The node of each VR and host of the net, where known: a host is where the VR it links to is.
fn nodes_of(spec: &Value, vr_node: &HashMap<String, String>) -> HashMap<String, String> {
    let mut at = vr_node.clone();
    let hosts: Vec<&str> = spec["hosts"].as_array().into_iter().flatten().filter_map(|h| h["name"].as_str()).collect();
    for l in spec["links"].as_array().into_iter().flatten() {
        let (a, _) = end_vr(l["a"].as_str().unwrap_or_default());
        let (b, _) = end_vr(l["b"].as_str().unwrap_or_default());
        for (x, y) in [(a, b), (b, a)] {
            if hosts.contains(&x) {
                if let Some(n) = vr_node.get(y) {
                    at.insert(x.to_string(), n.clone());
                }
            }
        }
    }
    at
}

/// The links whose ends are on two different nodes: (key, node of a, node of b).
pub fn cross_links(spec: &Value, vr_node: &HashMap<String, String>) -> Vec<(String, String, String)> {
    let at = nodes_of(spec, vr_node);
    spec["links"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| {
            let a = at.get(end_vr(l["a"].as_str()?).0)?;
            let b = at.get(end_vr(l["b"].as_str()?).0)?;
            (a != b).then(|| (link_key(l), a.clone(), b.clone()))
        })
        .collect()
}

/// One end of a cross-node link on this node.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossEnd {
    pub link: String,
    pub vr: String,
    pub interface: String,
    pub port: String,
    pub remote: String,
    pub vni: u32,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Part {
    /// The net entry this node lands (None: none of its VRs is here).
    pub spec: Option<Value>,
    /// The vxlan ports of its cross-node ends.
    pub ports: Vec<Value>,
    pub cross: Vec<CrossEnd>,
    /// What is not known yet (a VNI, a node's underlay, where a VR is): the part waits.
    pub missing: Vec<String>,
}

/// What is known of the cluster when a part is computed.
pub struct Known<'a> {
    pub me: &'a str,
    pub vr_node: &'a HashMap<String, String>,
    pub underlays: &'a HashMap<String, Underlay>,
    pub vnis: &'a HashMap<String, u32>,
}

/// This node's part of net `net`.
pub fn part(net: &str, spec: &Value, k: &Known<'_>) -> Part {
    let at = nodes_of(spec, k.vr_node);
    let here = |x: &str| at.get(x).is_some_and(|n| n == k.me);
    let mut out = Part::default();
    let mut local = without_nodes(spec);
    let vrs: Vec<Value> =
        local["vrs"].as_array().cloned().unwrap_or_default().into_iter().filter(|v| here(v["name"].as_str().unwrap_or_default())).collect();
    if vrs.is_empty() {
        return out;
    }
    let mut vrs = vrs;
    let mut links = Vec::new();
    for l in spec["links"].as_array().into_iter().flatten() {
        let (ea, eb) = (l["a"].as_str().unwrap_or_default(), l["b"].as_str().unwrap_or_default());
        let ((a, _), (b, _)) = (end_vr(ea), end_vr(eb));
        match (here(a), here(b)) {
            (true, true) => links.push(l.clone()),
            (false, false) => {}
            (mine_a, _) => {
                let (mine, other) = if mine_a { (ea, b) } else { (eb, a) };
                let (vr, interface) = end_vr(mine);
                let key = link_key(l);
                let Some(remote) = at.get(other) else {
                    out.missing.push(format!("where {other} runs"));
                    continue;
                };
                let Some(far) = k.underlays.get(remote) else {
                    out.missing.push(format!("node {remote}'s underlay"));
                    continue;
                };
                let (Some(me), Some(&vni)) = (k.underlays.get(k.me), k.vnis.get(&key)) else {
                    out.missing.push(format!("the VNI of link {key}"));
                    continue;
                };
                let port = port_name(net, vr, interface);
                out.ports.push(json!({"name": port, "interface": me.device, "driver": "vxlan",
                                      "vxlan": {"vni": vni, "remote": far.address, "local": me.address}}));
                if let Some(entry) = vrs
                    .iter_mut()
                    .find(|v| v["name"] == vr)
                    .and_then(|v| v["interfaces"].as_array_mut())
                    .and_then(|l| l.iter_mut().find(|i| i["name"] == interface))
                {
                    entry["port"] = json!(port);
                    if let Some(m) = l.get("mtu") {
                        entry["mtu"] = m.clone();
                    }
                }
                out.cross.push(CrossEnd { link: key, vr: vr.into(), interface: interface.into(), port, remote: remote.clone(), vni });
            }
        }
    }
    let hosts: Vec<Value> = local["hosts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|h| here(h["name"].as_str().unwrap_or_default()))
        .collect();
    let o = local.as_object_mut().expect("a net is a mapping");
    o.remove("name");
    o.insert("vrs".into(), Value::Array(vrs));
    for (key, list) in [("links", links), ("hosts", hosts)] {
        if list.is_empty() {
            o.remove(key);
        } else {
            o.insert(key.into(), Value::Array(list));
        }
    }
    out.spec = Some(local);
    out
}

/// The ports a landed part made: those its interfaces name that are tunnels (`px…`).
pub fn tunnel_ports(spec: &Value) -> BTreeSet<String> {
    spec["vrs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|v| v["interfaces"].as_array().cloned().unwrap_or_default())
        .filter_map(|i| i["port"].as_str().filter(|p| p.starts_with("px")).map(String::from))
        .collect()
}

/// A tunnel end's port name: `px`, then a hash of where it is (a device name's 15 bytes).
fn port_name(net: &str, vr: &str, interface: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in format!("{net}/{vr}/{interface}").bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("px{h:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three VRs in a line, r1 with a host, over nodes n1 n2 n3.
    fn line() -> Value {
        let vr = |name: &str, node: &str, n: u8| {
            json!({"name": name, "node": node, "interfaces": [
                {"name": "eth0", "addresses": [format!("10.{n}.0.1/24")]},
                {"name": "eth1", "addresses": [format!("10.{n}.1.1/24")]}]})
        };
        json!({"vrs": [vr("r1", "n1", 1), vr("r2", "n2", 2), vr("r3", "auto", 3)],
               "hosts": [{"name": "h1", "interfaces": [{"name": "eth0", "addresses": ["10.1.0.2/24"]}]}],
               "links": [{"a": "h1/eth0", "b": "r1/eth0"}, {"a": "r1/eth1", "b": "r2/eth0"}, {"a": "r2/eth1", "b": "r3/eth0", "mtu": 1400}]})
    }

    fn underlays() -> HashMap<String, Underlay> {
        (1..=3).map(|i| (format!("n{i}"), Underlay { device: format!("u{i}"), address: format!("10.9.0.{i}"), mtu: 1500 })).collect()
    }

    fn placed(r3: &str) -> HashMap<String, String> {
        [("r1", "n1"), ("r2", "n2"), ("r3", r3)].into_iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn a_cross_node_link_is_a_vxlan_port_at_each_end_with_the_same_vni() {
        let spec = line();
        let (vr_node, under) = (placed("n3"), underlays());
        let vnis: HashMap<String, u32> = [("r1/eth1|r2/eth0".to_string(), 7), ("r2/eth1|r3/eth0".to_string(), 8)].into();
        assert_eq!(cross_links(&spec, &vr_node).len(), 2, "h1-r1 is on n1 with r1");
        let k = |me| Known { me, vr_node: &vr_node, underlays: &under, vnis: &vnis };
        let n1 = part("lab", &spec, &k("n1"));
        let local = n1.spec.clone().unwrap();
        assert_eq!(local["vrs"].as_array().unwrap().len(), 1);
        assert_eq!(local["hosts"][0]["name"], "h1", "the host goes with its VR");
        assert_eq!(local["links"].as_array().unwrap().len(), 1, "h1-r1 stays a local link");
        assert!(local["vrs"][0].get("node").is_none());
        assert_eq!(
            n1.ports,
            vec![json!({"name": n1.cross[0].port, "interface": "u1", "driver": "vxlan",
                                         "vxlan": {"vni": 7, "remote": "10.9.0.2", "local": "10.9.0.1"}})]
        );
        assert_eq!(local["vrs"][0]["interfaces"][1]["port"], n1.cross[0].port.as_str());
        let n2 = part("lab", &spec, &k("n2"));
        let vnis_at_n2: Vec<u32> = n2.ports.iter().map(|p| p["vxlan"]["vni"].as_u64().unwrap() as u32).collect();
        assert_eq!(vnis_at_n2, [7, 8]);
        assert_eq!(n2.ports[0]["vxlan"]["remote"], "10.9.0.1");
        assert_eq!(n2.spec.as_ref().unwrap()["vrs"][0]["interfaces"][1]["mtu"], 1400, "the link's MTU at the tunnel end");
        assert!(n2.spec.as_ref().unwrap().get("links").is_none());
        assert_eq!(part("lab", &spec, &k("n1")), n1, "the same inputs, the same part");
        assert_eq!(tunnel_ports(n2.spec.as_ref().unwrap()).len(), 2);
    }

    #[test]
    fn a_vr_placed_elsewhere_moves_the_tunnel_and_a_part_waits_for_what_it_lacks() {
        let spec = line();
        let under = underlays();
        let vnis: HashMap<String, u32> = [("r1/eth1|r2/eth0".to_string(), 7)].into();
        let moved = placed("n1");
        let n2 = part("lab", &spec, &Known { me: "n2", vr_node: &moved, underlays: &under, vnis: &vnis });
        assert_eq!(n2.missing, ["the VNI of link r2/eth1|r3/eth0"]);
        let mut vr_node = placed("n1");
        vr_node.remove("r3");
        let n2 = part("lab", &spec, &Known { me: "n2", vr_node: &vr_node, underlays: &under, vnis: &vnis });
        assert_eq!(n2.missing, ["where r3 runs"]);
        let n3 = part("lab", &spec, &Known { me: "n3", vr_node: &moved, underlays: &under, vnis: &vnis });
        assert_eq!(n3, Part::default(), "nothing of the net on n3");
    }

    #[test]
    fn a_bad_node_is_refused_at_its_field() {
        let mut spec = line();
        spec["vrs"][1]["node"] = json!("a b");
        let e = check_nodes("lab", &spec).unwrap_err();
        assert_eq!(e.path, "nets.lab.vrs[1].node");
        assert!(check_nodes("lab", &line()).is_ok());
        assert_eq!(wanted(&line())[2], ("r3".to_string(), Wanted::Auto));
    }
}
