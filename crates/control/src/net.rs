//! A virtual network (`nets:`) as what it adds to the document: its VRs as entries of `vrs:`,
//! whose interfaces on a link are given the port that link makes, and those ports in `ports:`
//! (a pair of wire ports between two VRs; an AF_PACKET port on a veth made for a host). What
//! the document gains from a net is a function of the net alone, so a changed net is the old
//! one's entries taken out and the new one's put in, and a net destroyed takes out exactly
//! what it put in. Hosts and veths, which are no document entries, are in its [`NetPlan`] for
//! pearld to make.

use crate::at::At;
use crate::error::ConfigError;
use crate::fields::name_like;
use crate::grammar::{self, LinkStateSpec, NetSpec};
use crate::values::{mac, prefix};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// What a net is made of, as pearld makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NetPlan {
    pub name: String,
    /// Its VRs' entries, as `vrs:` holds them.
    pub vrs: Vec<Value>,
    /// The ports its links make, as `ports:` holds them.
    pub ports: Vec<Value>,
    pub hosts: Vec<HostPlan>,
    pub links: Vec<LinkPlan>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostPlan {
    pub name: String,
    /// Its namespace: `NET-HOST`.
    pub netns: String,
    pub interfaces: Vec<HostInterface>,
    /// (destination or `default`, next hop).
    pub routes: Vec<(String, String)>,
    pub command: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostInterface {
    pub name: String,
    pub mac: Option<String>,
    pub addresses: Vec<String>,
    pub mtu: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LinkPlan {
    /// `A-B`, the nodes it joins (what `pearlctl link set` names it by).
    pub name: String,
    pub ends: [LinkEnd; 2],
    pub up: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LinkEnd {
    /// A VR's interface; `port` is the port the link made for it.
    Vr { vr: String, interface: String, port: String },
    /// A host's interface, the end of a veth in the host's namespace.
    Host { netns: String, interface: String },
}

impl LinkEnd {
    /// The device of a veth that is this end: in pearld's namespace for a VR (its port's
    /// interface), in its namespace for a host.
    pub fn veth(&self) -> (Option<&str>, &str) {
        match self {
            LinkEnd::Vr { port, .. } => (None, port),
            LinkEnd::Host { netns, interface } => (Some(netns), interface),
        }
    }
}

impl LinkPlan {
    /// Whether a veth carries it (a host at one end); a wire otherwise.
    pub fn is_veth(&self) -> bool {
        self.ends.iter().any(|e| matches!(e, LinkEnd::Host { .. }))
    }
}

/// The nets of `doc`, planned (each was validated when it was applied).
pub fn net_plans(doc: &Value) -> Result<Vec<NetPlan>, ConfigError> {
    let Some(nets) = doc.get("nets").and_then(Value::as_object) else { return Ok(Vec::new()) };
    nets.iter().map(|(name, spec)| plan_net(name, spec)).collect()
}

/// `doc` with net `name` as `spec` says (or without it, for `None`): the old net's entries
/// taken out, the new one's put in. Returns the new document, to be validated whole (an error
/// in it said at the net's field with [`blame`]), and the net's plan.
pub fn document_with_net(doc: &Value, name: &str, spec: Option<&Value>) -> Result<(Value, Option<NetPlan>), ConfigError> {
    let mut doc = doc.clone();
    if let Some(old) = doc.get("nets").and_then(|n| n.get(name)) {
        let old = plan_net(name, old)?;
        take_out(&mut doc, &old);
    }
    let plan = spec.map(|s| plan_net(name, s)).transpose()?;
    let nets = doc.as_object_mut().expect("a document is a mapping").entry("nets").or_insert_with(|| json!({}));
    let Some(nets_map) = nets.as_object_mut() else { return Err(ConfigError::at("nets", "expected a mapping")) };
    match (&plan, spec) {
        (Some(p), Some(s)) => {
            let mut s = s.clone();
            if let Some(o) = s.as_object_mut() {
                o.remove("name");
            }
            nets_map.insert(name.to_string(), s);
            put_in(&mut doc, p);
        }
        _ => {
            nets_map.remove(name);
            if nets_map.is_empty() {
                doc.as_object_mut().expect("a mapping").remove("nets");
            }
        }
    }
    Ok((doc, plan))
}

fn take_out(doc: &mut Value, plan: &NetPlan) {
    let names = |entries: &[Value]| entries.iter().map(|e| e["name"].clone()).collect::<Vec<_>>();
    for (key, made) in [("vrs", names(&plan.vrs)), ("ports", names(&plan.ports))] {
        if let Some(list) = doc.get_mut(key).and_then(Value::as_array_mut) {
            list.retain(|e| !made.contains(&e["name"]));
        }
    }
}

fn put_in(doc: &mut Value, plan: &NetPlan) {
    for (key, made) in [("vrs", &plan.vrs), ("ports", &plan.ports)] {
        let list = doc.as_object_mut().expect("a mapping").entry(key).or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut() {
            list.extend(made.iter().cloned());
        }
    }
}

/// An error at `vrs[K]...` or `ports[K]...` of `doc`, where K is an entry `plan` made, said at
/// the net's VR or link that made it.
pub fn blame(e: ConfigError, doc: &Value, plan: &NetPlan) -> ConfigError {
    let net = format!("nets.{}", plan.name);
    for (key, made, said) in [("vrs", &plan.vrs, "vrs"), ("ports", &plan.ports, "links")] {
        let Some(rest) = e.path.strip_prefix(key).and_then(|r| r.strip_prefix('[')) else { continue };
        let Some((k, tail)) = rest.split_once(']') else { continue };
        let Some(entry) = k.parse::<usize>().ok().and_then(|k| doc[key].get(k)) else { continue };
        let Some(j) = made.iter().position(|m| m["name"] == entry["name"]) else { continue };
        let j = if key == "ports" { j / 2 } else { j };
        let tail = if key == "ports" { "" } else { tail };
        return ConfigError::at(format!("{net}.{said}[{j}]{tail}"), e.message);
    }
    e
}

/// The plan of net `name` from its entry `spec`, every reference checked.
pub fn plan_net(name: &str, spec: &Value) -> Result<NetPlan, ConfigError> {
    let nets = At::Root;
    let nets = nets.key("nets");
    let at = nets.key(name);
    name_like(name, 8, at)?;
    let net: NetSpec = grammar::read(spec, at)?;
    if net.name.as_deref().is_some_and(|n| n != name) {
        return Err(at.key("name").err(format!("{:?} is not the net's name {name:?}", net.name.unwrap_or_default())));
    }
    // Node name → (index in vrs or hosts, is a VR, its interfaces).
    let mut nodes: HashMap<String, (bool, usize, Vec<String>)> = HashMap::new();
    let mut vrs: Vec<Value> = net.vrs.clone().unwrap_or_default();
    let vrs_at = at.key("vrs");
    for (i, vr) in vrs.iter().enumerate() {
        let at = vrs_at.index(i);
        let Some(vr_name) = vr.get("name").and_then(Value::as_str) else { return Err(at.key("name").err("is required")) };
        if vr.get("node").is_some() {
            return Err(at.key("node").err("places a VR on a node of a cluster; this node is in none (pearld --cluster URL --node NAME)"));
        }
        let ifs =
            vr.get("interfaces").and_then(Value::as_array).map(|l| l.iter().filter_map(|i| i["name"].as_str().map(String::from)).collect());
        if nodes.insert(vr_name.to_string(), (true, i, ifs.unwrap_or_default())).is_some() {
            return Err(at.key("name").err(format!("{vr_name:?} names another VR of the net")));
        }
    }
    let mut hosts = Vec::new();
    let hosts_at = at.key("hosts");
    for (i, h) in net.hosts.iter().flatten().enumerate() {
        let at = hosts_at.index(i);
        name_like(&h.name, 12, at.key("name"))?;
        let ifs_at = at.key("interfaces");
        let mut interfaces = Vec::new();
        for (j, hi) in h.interfaces.iter().flatten().enumerate() {
            let at = ifs_at.index(j);
            name_like(&hi.name, 15, at.key("name"))?;
            if let Some(m) = &hi.mac {
                mac(m, at.key("mac"))?;
            }
            let addrs_at = at.key("addresses");
            for (k, a) in hi.addresses.iter().flatten().enumerate() {
                prefix(a, addrs_at.index(k))?;
            }
            if interfaces.iter().any(|x: &HostInterface| x.name == hi.name) {
                return Err(at.key("name").err(format!("{:?} names another interface of the host", hi.name)));
            }
            interfaces.push(HostInterface {
                name: hi.name.clone(),
                mac: hi.mac.clone(),
                addresses: hi.addresses.clone().unwrap_or_default(),
                mtu: None,
            });
        }
        let routes = h.routes.iter().flatten().map(|r| (r.to.clone(), r.via.clone())).collect();
        let names = interfaces.iter().map(|i| i.name.clone()).collect();
        if nodes.insert(h.name.clone(), (false, i, names)).is_some() {
            return Err(at.key("name").err(format!("{:?} names a VR or another host of the net", h.name)));
        }
        hosts.push(HostPlan { name: h.name.clone(), netns: format!("{name}-{}", h.name), interfaces, routes, command: h.command.clone() });
    }
    let mut ports = Vec::new();
    let mut links = Vec::new();
    let mut linked: HashMap<(String, String), usize> = HashMap::new();
    let links_at = at.key("links");
    for (l, link) in net.links.iter().flatten().enumerate() {
        let at = links_at.index(l);
        let mut ends = Vec::new();
        for (key, end) in [("a", &link.a), ("b", &link.b)] {
            let at = at.key(key);
            let Some((node, interface)) = end.split_once('/') else {
                return Err(at.err(format!("{end:?}: expected NODE/INTERFACE (red/eth0)")));
            };
            let Some((is_vr, i, ifs)) = nodes.get(node) else { return Err(at.err(format!("no VR or host {node:?}"))) };
            if !ifs.iter().any(|x| x == interface) {
                return Err(at.err(format!("{node:?} has no interface {interface:?}")));
            }
            if let Some(other) = linked.insert((node.to_string(), interface.to_string()), l) {
                return Err(at.err(format!("{end} is on links[{other}] already")));
            }
            ends.push(if *is_vr {
                LinkEnd::Vr { vr: node.to_string(), interface: interface.to_string(), port: port_name(name, node, interface, 'w') }
            } else {
                LinkEnd::Host { netns: hosts[*i].netns.clone(), interface: interface.to_string() }
            });
        }
        let ends: [LinkEnd; 2] = ends.try_into().expect("two ends");
        let mtu = match link.mtu {
            Some(m) if !(68..=9000).contains(&m) => return Err(at.key("mtu").err(format!("{m} is out of range 68..=9000"))),
            m => m,
        };
        let veth = ends.iter().any(|e| matches!(e, LinkEnd::Host { .. }));
        let mut ends = ends;
        for e in &mut ends {
            if let (LinkEnd::Vr { vr, interface, port }, true) = (e, veth) {
                *port = port_name(name, vr, interface, 'v');
            }
        }
        let node_of = |e: &LinkEnd| match e {
            LinkEnd::Vr { vr, .. } => vr.clone(),
            LinkEnd::Host { netns, .. } => netns.strip_prefix(&format!("{name}-")).unwrap_or(netns).to_string(),
        };
        for (e, other) in [(&ends[0], &ends[1]), (&ends[1], &ends[0])] {
            match e {
                LinkEnd::Vr { vr, interface, port } => {
                    let (driver, peer) = if veth { ("af_packet", port.clone()) } else { ("wire", other.veth().1.to_string()) };
                    ports.push(json!({"name": port, "interface": peer, "driver": driver}));
                    let (_, i, _) = nodes[vr];
                    if let Some(entry) =
                        vrs[i]["interfaces"].as_array_mut().and_then(|l| l.iter_mut().find(|x| x["name"] == interface.as_str()))
                    {
                        set_end(entry, port, link.impair.as_ref(), mtu);
                    }
                }
                LinkEnd::Host { netns, interface } => {
                    let h = hosts.iter_mut().find(|h| &h.netns == netns).expect("planned");
                    if let Some(hi) = h.interfaces.iter_mut().find(|x| &x.name == interface) {
                        hi.mtu = mtu.map(|m| m as u32);
                    }
                }
            }
        }
        links.push(LinkPlan {
            name: format!("{}-{}", node_of(&ends[0]), node_of(&ends[1])),
            ends,
            up: link.state != Some(LinkStateSpec::Down),
        });
    }
    for (i, vr) in vrs.iter().enumerate() {
        for (j, iface) in vr["interfaces"].as_array().into_iter().flatten().enumerate() {
            if iface.get("port").is_none() {
                return Err(vrs_at.index(i).key("interfaces").index(j).key("port").err("is required, unless a link has the interface"));
            }
        }
    }
    Ok(NetPlan { name: name.to_string(), vrs, ports, hosts, links })
}

/// A VR interface as its link makes it: on the link's port, with the link's impairments and MTU.
fn set_end(entry: &mut Value, port: &str, impair: Option<&grammar::ImpairSpec>, mtu: Option<i64>) {
    let Some(o) = entry.as_object_mut() else { return };
    o.insert("port".into(), json!(port));
    if let Some(i) = impair {
        o.insert("impair".into(), serde_json::to_value(i).expect("an impairment serialises"));
    }
    if let Some(m) = mtu {
        o.insert("mtu".into(), json!(m));
    }
    strip_nulls(o);
}

/// Serialised `Option`s left out, as a hand-written entry would have them.
fn strip_nulls(o: &mut Map<String, Value>) {
    for v in o.values_mut() {
        if let Some(inner) = v.as_object_mut() {
            inner.retain(|_, x| !x.is_null());
        }
    }
}

/// The port (and device) name of a link's end: a letter, then a hash of where it is, so that
/// it fits a device name's 15 bytes and is the same on every apply.
fn port_name(net: &str, node: &str, interface: &str, kind: char) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in format!("{net}/{node}/{interface}").bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("p{kind}{h:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::config_from_document;
    use std::path::Path;

    /// As pearld applies a net: planned, then the document validated whole.
    fn document_with_net(doc: &Value, name: &str, spec: Option<&Value>, base_dir: &Path) -> Result<(Value, Option<NetPlan>), ConfigError> {
        let (doc, plan) = super::document_with_net(doc, name, spec)?;
        match (config_from_document(&doc, base_dir), &plan) {
            (Err(e), Some(p)) => Err(blame(e, &doc, p)),
            (Err(e), None) => Err(e),
            (Ok(_), _) => Ok((doc, plan)),
        }
    }

    fn lab() -> Value {
        let vr = |name: &str, n: u8| {
            json!({"name": name, "interfaces": [
                {"name": "eth0", "mac": format!("02:00:00:00:{n:02x}:00"), "addresses": [format!("10.0.{n}.1/24")]},
                {"name": "eth1", "mac": format!("02:00:00:00:{n:02x}:01"), "addresses": [format!("10.1.{n}.1/24")]}]})
        };
        json!({"vrs": [vr("red", 1), vr("blue", 2)],
               "hosts": [{"name": "h1", "interfaces": [{"name": "eth0", "addresses": ["10.0.1.2/24"]}],
                          "routes": [{"to": "default", "via": "10.0.1.1"}]}],
               "links": [{"a": "red/eth1", "b": "blue/eth1", "mtu": 1400, "state": "down"},
                         {"a": "h1/eth0", "b": "red/eth0"}, {"a": "blue/eth0", "b": "red/eth1"}]})
    }

    #[test]
    fn a_bad_link_is_refused_naming_its_field() {
        let mut spec = lab();
        spec["links"][2] = json!({"a": "blue/eth0", "b": "x/eth0"});
        let e = document_with_net(&json!({}), "lab", Some(&spec), Path::new("/")).unwrap_err();
        assert_eq!(e.to_string(), "nets.lab.links[2].b: no VR or host \"x\"");
        let e = document_with_net(&json!({}), "lab", Some(&lab()), Path::new("/")).unwrap_err();
        assert_eq!(e.to_string(), "nets.lab.links[2].b: red/eth1 is on links[0] already");
    }

    #[test]
    fn a_net_adds_its_vrs_and_ports_and_destroying_it_takes_out_exactly_those() {
        let mut spec = lab();
        spec["links"].as_array_mut().unwrap().pop();
        spec["vrs"][1]["interfaces"][0]["port"] = json!("p0");
        let before = json!({"ports": [{"name": "p0", "interface": "lo", "driver": "af_packet"}], "vrs": []});
        let (doc, plan) = document_with_net(&before, "lab", Some(&spec), Path::new("/")).unwrap();
        let plan = plan.unwrap();
        assert_eq!(doc["vrs"].as_array().unwrap().len(), 2);
        // A wire pair for red-blue, one AF_PACKET port for the host's veth.
        let drivers: Vec<&str> = doc["ports"].as_array().unwrap().iter().map(|p| p["driver"].as_str().unwrap()).collect();
        assert_eq!(drivers, ["af_packet", "wire", "wire", "af_packet"]);
        assert_eq!(doc["vrs"][0]["interfaces"][1]["mtu"], 1400, "the link's MTU on both ends");
        assert_eq!(plan.links[0].name, "red-blue");
        assert!(!plan.links[0].up);
        assert_eq!(plan.hosts[0].netns, "lab-h1");
        let config = config_from_document(&doc, Path::new("/")).unwrap();
        assert_eq!(config.vrs.len(), 2);
        let (again, _) = document_with_net(&doc, "lab", Some(&spec), Path::new("/")).unwrap();
        assert_eq!(again, doc, "applying the same net again changes nothing");
        let (gone, none) = document_with_net(&doc, "lab", None, Path::new("/")).unwrap();
        assert_eq!(none, None);
        assert_eq!(gone, before);
    }

    #[test]
    fn a_node_outside_a_cluster_is_refused_at_its_field() {
        let mut spec = lab();
        spec["vrs"][1]["node"] = json!("n2");
        let e = plan_net("lab", &spec).unwrap_err();
        assert!(e.to_string().starts_with("nets.lab.vrs[1].node: places a VR on a node of a cluster"), "{e}");
    }

    #[test]
    fn an_error_in_a_net_vr_is_named_at_the_net() {
        let mut spec = lab();
        spec["links"].as_array_mut().unwrap().pop();
        spec["vrs"][1]["interfaces"][0]["port"] = json!("p0");
        spec["vrs"][1]["interfaces"][0]["mtu"] = json!(20);
        let doc = json!({"ports": [{"name": "p0", "interface": "lo", "driver": "af_packet"}]});
        let e = document_with_net(&doc, "lab", Some(&spec), Path::new("/")).unwrap_err();
        assert!(e.path.starts_with("nets.lab.vrs[1].interfaces[0].mtu"), "{e}");
    }
}
