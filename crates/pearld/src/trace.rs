//! `POST /v1/vrs/{name}/trace`: the next packets of one VR followed through the pipeline
//! (pearl-dataplane's `trace/`), each as its stages in words and as fields, with its frame.

use crate::api_error::ApiError;
use crate::fib::route_of;
use crate::models::fib::FibRoute;
use crate::node::Node;
use pearl_control::grammar::MatchSpec;
use pearl_control::{mac_text, match_key, Config, PluginModule, VrConfig};
use pearl_dataplane::program::Decision;
use pearl_dataplane::trace::{Outcome, TraceSpec, Traced, Tx, AWAIT_TX_NS, MAX_COUNT};
use pearl_wire::{Field, FlowKey};
use serde_json::{json, Value};
use std::fmt::Write;
use std::net::IpAddr;
use std::time::{Duration, Instant};

pub const MAX_SECONDS: u64 = 60;

pub struct Request<'a> {
    pub vr: &'a str,
    pub count: u64,
    /// A classifier rule's conditions, as in the VR's `match:` list.
    pub filter: Option<&'a Value>,
    /// A port's name.
    pub port: Option<&'a str>,
    pub seconds: u64,
}

/// Traces until `count` packets or `seconds`; answers what it saw (maybe fewer).
pub fn trace(node: &Node, req: &Request) -> Result<Value, ApiError> {
    let (config, vr) = node.vr_named(req.vr).ok_or_else(|| ApiError::not_found("name", format!("no VR named {:?}", req.vr)))?;
    if req.count == 0 || req.count > MAX_COUNT as u64 {
        return Err(ApiError::bad_request("count", format!("give 1 to {MAX_COUNT} packets")));
    }
    if req.seconds == 0 || req.seconds > MAX_SECONDS {
        return Err(ApiError::bad_request("seconds", format!("give 1 to {MAX_SECONDS} seconds")));
    }
    let port = match req.port {
        None => None,
        Some(name) => Some(config.ports.iter().position(|p| p.name == name).ok_or_else(|| {
            let names: Vec<&str> = config.ports.iter().map(|p| p.name.as_str()).collect();
            ApiError::not_found("port", format!("no port {name:?} (the node has {})", names.join(", ")))
        })? as u16),
    };
    let filter = match req.filter {
        None => None,
        Some(v) => {
            let spec: MatchSpec = serde_json::from_value(v.clone()).map_err(|e| ApiError::bad_request("match", e.to_string()))?;
            Some(match_key(&spec, &config.ports).map_err(|e| ApiError::bad_request(&e.path, e.message))?)
        }
    };
    let spec = TraceSpec { vr: vr.id, port, filter, count: req.count as usize };
    let reader = node.dataplane.trace_start(spec);
    let deadline = Instant::now() + Duration::from_secs(req.seconds);
    let mut got: Vec<Traced> = Vec::new();
    while got.len() < spec.count && Instant::now() < deadline {
        let before = got.len();
        got.extend(reader.records.try_iter());
        if got.len() == before {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    node.dataplane.trace_stop(reader.id);
    got.sort_by_key(|t| t.record.time_ns);
    let packets: Vec<Value> = got.iter().map(|t| packet(node, &config, &vr, t)).collect();
    Ok(json!({"vr": vr.name, "count": packets.len(), "packets": packets}))
}

/// One packet: its stages in words (`text`, one line each), and the same as fields.
fn packet(node: &Node, config: &Config, vr: &VrConfig, t: &Traced) -> Value {
    let r = &t.record;
    let port_name = |p: u16| config.ports.get(usize::from(p)).map_or(format!("#{p}"), |c| c.name.clone());
    let vr_name = |id: u16| config.vrs.iter().find(|v| v.id == id).map_or(format!("#{id}"), |v| v.name.clone());
    let mut text = vec![format!("rx       port {}, {} bytes, worker {}", port_name(r.in_port), r.len, r.worker)];
    text.push(match r.malformed {
        Some(reason) => format!("extract  malformed: {reason}"),
        None => format!("extract  {}", r.key.map_or("not classified".into(), |k| headers(&k))),
    });
    if let Some(v) = r.verdict {
        let rule = v.rule.map_or("its interface MAC".to_string(), |i| format!("match rule {i}"));
        text.push(format!("classify VR {} by {rule}, queue {}", vr_name(v.vr), v.queue));
    }
    if let Some(d) = r.program {
        text.push(format!("program  {}: {}", program_of(vr), decision(d, &port_name)));
    }
    let mut route = Value::Null;
    if let Some((d, table)) = r.routed {
        let line = match (d, r.key.and_then(|k| ip(k.get(Field::EtherType) as u16, k.get(Field::IpDst)))) {
            (Decision::Forward { nh }, Some(addr)) => {
                let routed_by = config.vrs.iter().find(|v| v.id == table).map_or(vr, |v| &**v);
                let fib = route_of(node, config, routed_by, addr, nh);
                let line = fib.as_ref().map_or(format!("route    {addr}: next hop {nh}"), |f| route_line(addr, f, (vr, routed_by)));
                route = fib.map(|f| serde_json::to_value(f).unwrap_or_default()).unwrap_or_default();
                Some(line)
            }
            // The lookup or source stage changed the program's decision (a miss, a refused source).
            (d, _) if r.program != Some(d) => Some(format!("route    {}", decision(d, &port_name))),
            _ => None,
        };
        text.extend(line);
    }
    if r.offloaded {
        text.push("offload  offered to the kernel: the flow's next frames are forwarded there, in its receive path".into());
    }
    let outcome = match r.outcome {
        Some(Outcome::Out { port, queue, dst }) => {
            text.push(format!("output   port {} queue {queue}, to {}", port_name(port), mac_text(dst)));
            json!({"kind": "out", "port": port_name(port), "queue": queue, "mac": mac_text(dst)})
        }
        Some(Outcome::Refused { port, queue }) => {
            text.push(format!("drop     port {} queue {queue} full (queue_drops)", port_name(port)));
            json!({"kind": "refused", "port": port_name(port), "queue": queue, "reason": "queue_drops"})
        }
        Some(Outcome::Kernel(e)) => {
            text.push(format!("kernel   to VR {}'s kernel through its TAP ({})", vr.name, e.name()));
            json!({"kind": "kernel", "reason": e.name()})
        }
        Some(Outcome::Dropped(d)) => {
            text.push(format!("drop     {}", d.name()));
            json!({"kind": "dropped", "reason": d.name()})
        }
        Some(Outcome::Unclaimed { multicast }) => {
            let what = if multicast { "multicast: copies to the port's VRs" } else { "unicast: dropped (unclaimed)" };
            text.push(format!("drop     no VR claimed it, {what}"));
            json!({"kind": "unclaimed", "reason": "unclaimed", "multicast": multicast})
        }
        Some(Outcome::Malformed) => {
            text.push(format!("drop     malformed ({})", r.malformed.unwrap_or("malformed")));
            json!({"kind": "malformed", "reason": r.malformed})
        }
        None => Value::Null,
    };
    let tx = r.tx.map(|tx| {
        let (line, value) = tx_result(tx);
        text.push(format!("tx       {line}"));
        value
    });
    let hex: String = t.frame().iter().map(|b| format!("{b:02x}")).collect();
    json!({
        "time_ns": r.time_ns,
        "worker": r.worker,
        "port": port_name(r.in_port),
        "len": r.len,
        "malformed": r.malformed,
        "vr": r.verdict.map(|v| vr_name(v.vr)),
        "rule": r.verdict.and_then(|v| v.rule),
        "queue": r.verdict.map(|v| v.queue),
        "program": r.program.map(|d| decision(d, &port_name)),
        "decision": r.routed.map(|(d, _)| decision(d, &port_name)),
        "route": route,
        "offloaded": r.offloaded,
        "outcome": outcome,
        "tx": tx,
        "text": text,
        "frame": hex,
    })
}

/// What the port did with a queued packet, in words and as fields.
fn tx_result(tx: Tx) -> (String, Value) {
    match tx {
        Tx::Sent => ("sent: the port took it".into(), json!({"result": "sent"})),
        Tx::PortRefused { taken, handed } => (
            format!("refused by the port: it took {taken} of its batch's {handed} frames (tx_errors)"),
            json!({"result": "refused", "reason": "tx_errors", "taken": taken, "handed": handed}),
        ),
        Tx::Partly { taken, handed } => (
            format!("its batch, finished in software, was taken {taken} of {handed} frames: this one's fate is not told"),
            json!({"result": "partly", "taken": taken, "handed": handed}),
        ),
        Tx::PortGone => ("dropped: the port's interface is gone (tx_errors)".into(), json!({"result": "dropped", "reason": "port_gone"})),
        Tx::NotSeen => (
            format!("not transmitted within {} ms: held by a shaper or an impairment, or lost there", AWAIT_TX_NS / 1_000_000),
            json!({"result": "not_seen"}),
        ),
    }
}

/// The route stage in words: the prefix that answered, its origin and next hops.
fn route_line(addr: IpAddr, fib: &FibRoute, (vr, routed_by): (&VrConfig, &VrConfig)) -> String {
    let mut s = format!("route    {addr} by {} ({})", fib.prefix, fib.origin);
    for h in &fib.next_hops {
        let _ = write!(s, ", next hop {}", h.kind);
        for part in [h.interface.as_ref(), h.mac.as_ref()].into_iter().flatten() {
            let _ = write!(s, " {part}");
        }
        if let Some(p) = &h.port {
            let _ = write!(s, " (port {p})");
        }
    }
    if routed_by.id != vr.id {
        let _ = write!(s, ", leaked from VR {}", routed_by.name);
    }
    s
}

/// The program that decided: a plugin's module, or the built-in program of the VR's kind.
fn program_of(vr: &VrConfig) -> String {
    match vr.plugin.as_ref().map(|p| &p.module) {
        Some(PluginModule::Wasm { path, .. }) => format!("plugin wasm {}", path.display()),
        Some(PluginModule::Process { argv }) => format!("plugin process {}", argv.first().map_or("", String::as_str)),
        Some(PluginModule::Xdp { path, .. }) => format!("plugin xdp {}", path.display()),
        None => format!("{} {:?}", vr.kind.name(), vr.code).to_lowercase(),
    }
}

fn decision(d: Decision, port_name: &dyn Fn(u16) -> String) -> String {
    match d {
        Decision::Forward { nh } => format!("forward by next hop {nh}"),
        Decision::Lookup => "route by destination".into(),
        Decision::Send { port } => format!("send out of port {}", port_name(port)),
        Decision::Copies { interfaces, slow } => {
            format!("copies out of interfaces {interfaces:#x}{}", if slow { " and to the kernel" } else { "" })
        }
        Decision::Slow(e) => format!("to the kernel ({})", e.name()),
        Decision::Drop(d) => format!("drop ({})", d.name()),
    }
}

/// The frame's headers in a few words.
fn headers(k: &FlowKey) -> String {
    let ether = k.get(Field::EtherType) as u16;
    let (src, dst) = (ip(ether, k.get(Field::IpSrc)), ip(ether, k.get(Field::IpDst)));
    match (src, dst) {
        (Some(s), Some(d)) => {
            let proto = k.get(Field::IpProto) as u8;
            let l4 = match proto {
                6 | 17 => format!(" {} {} → {}", if proto == 6 { "tcp" } else { "udp" }, k.get(Field::L4Src), k.get(Field::L4Dst)),
                1 | 58 => " icmp".into(),
                p => format!(" proto {p}"),
            };
            format!("{s} → {d}{l4}, eth {} → {}", mac_text(k.eth_src()), mac_text(k.eth_dst()))
        }
        _ => format!("ethertype {ether:#06x}, eth {} → {}", mac_text(k.eth_src()), mac_text(k.eth_dst())),
    }
}

fn ip(ethertype: u16, v: u128) -> Option<IpAddr> {
    match ethertype {
        0x0800 => Some(IpAddr::from((v as u32).to_be_bytes())),
        0x86dd => Some(IpAddr::from(v.to_be_bytes())),
        _ => None,
    }
}
