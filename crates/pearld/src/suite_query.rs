//! A VR's adjacencies and sessions, asked of its routing suite through the suite's own query
//! interface, as an operator would: `vtysh -N VR -c 'show … json'` for FRR (its JSON), `birdc
//! -s SOCKET show protocols` for BIRD (its table). Each query is bounded by `TIMEOUT`: a hung
//! daemon costs the prober that long, and never an API handler (see `sessions.rs`).

use crate::models::vr_health::Session;
use serde_json::Value;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(5);

/// What speaks for a VR's control plane, and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Speaker {
    Frr { vr: String, daemons: Vec<String> },
    Bird { socket: PathBuf },
}

/// Every session the speaker reports, and one line per query that failed.
pub fn ask(speaker: &Speaker) -> (Vec<Session>, Vec<String>) {
    let (mut sessions, mut errors) = (Vec::new(), Vec::new());
    match speaker {
        Speaker::Frr { vr, daemons } => {
            for (daemon, command, parse) in FRR_QUERIES {
                if !daemons.iter().any(|d| d == daemon) {
                    continue;
                }
                let out = run(Command::new("vtysh").args(["-N", vr, "-c", command]));
                match out.and_then(|text| serde_json::from_str(&text).map_err(|e| format!("not JSON ({e}): {}", first_line(&text)))) {
                    Ok(json) => sessions.extend(parse(&json)),
                    Err(e) => errors.push(format!("vtysh -c '{command}': {e}")),
                }
            }
        }
        Speaker::Bird { socket } => match run(Command::new("birdc").arg("-s").arg(socket).args(["show", "protocols"])) {
            Ok(text) => sessions.extend(bird_protocols(&text)),
            Err(e) => errors.push(format!("birdc -s {} show protocols: {e}", socket.display())),
        },
    }
    (sessions, errors)
}

type Parse = fn(&Value) -> Vec<Session>;

const FRR_QUERIES: [(&str, &str, Parse); 3] = [
    // `vrf all`: the VR's own VRFs too (FRR keys each VRF's answer by its name).
    ("ospfd", "show ip ospf vrf all neighbor json", ospf_neighbors),
    ("ospf6d", "show ipv6 ospf6 neighbor json", ospf6_neighbors),
    ("bgpd", "show bgp vrf all summary json", bgp_peers),
];

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A VRF's name as a session names it: none for the default VRF.
fn vrf_of(name: &str) -> Option<String> {
    (name != "default").then(|| name.to_string())
}

/// `{"VRF": {"vrfName": "VRF", "neighbors": {"ROUTER-ID": [{"nbrState": "Full/-", "ifaceName":
/// "eth0:10.1.0.1"}]}}}` (`vrf all`), or one VRF's `{"neighbors": …}`.
fn ospf_neighbors(json: &Value) -> Vec<Session> {
    if json.get("neighbors").is_some() {
        return ospf_vrf_neighbors(json, None);
    }
    let vrfs = json.as_object().into_iter().flatten();
    vrfs.flat_map(|(name, v)| ospf_vrf_neighbors(v, vrf_of(name))).collect()
}

fn ospf_vrf_neighbors(json: &Value, vrf: Option<String>) -> Vec<Session> {
    let Some(neighbors) = json.get("neighbors").and_then(Value::as_object) else { return Vec::new() };
    let mut out = Vec::new();
    for (id, entries) in neighbors {
        for e in entries.as_array().into_iter().flatten() {
            let state = text(e, "nbrState").or_else(|| text(e, "state")).unwrap_or_default();
            // FRR names the interface with our address on it: "eth0:10.1.0.1".
            let interface = text(e, "ifaceName").map(|i| i.split(':').next().unwrap_or_default().to_string());
            out.push(Session {
                protocol: "ospf".into(),
                peer: id.clone(),
                interface,
                vrf: vrf.clone(),
                up: state.starts_with("Full"),
                state,
                prefixes_received: None,
            });
        }
    }
    out
}

/// `{"neighbors": [{"neighborId": "…", "state": "Full", "interfaceName": "eth0"}]}`
fn ospf6_neighbors(json: &Value) -> Vec<Session> {
    let entries = json.get("neighbors").and_then(Value::as_array).into_iter().flatten();
    entries
        .map(|e| {
            let state = text(e, "state").unwrap_or_default();
            Session {
                protocol: "ospf6".into(),
                peer: text(e, "neighborId").unwrap_or_default(),
                interface: text(e, "interfaceName"),
                vrf: None,
                up: state.starts_with("Full"),
                state,
                prefixes_received: None,
            }
        })
        .collect()
}

/// `{"VRF": {"ipv4Unicast": {"peers": {"10.1.0.2": {"state": "Established", "pfxRcd": 3}}},
/// "ipv6Unicast": …}}` (`vrf all`), or one VRF's families: a peer of both families is one session.
fn bgp_peers(json: &Value) -> Vec<Session> {
    let mut out: Vec<Session> = Vec::new();
    for (name, v) in json.as_object().into_iter().flatten() {
        if v.get("peers").is_some() {
            bgp_family(v, None, &mut out);
        } else {
            for family in v.as_object().into_iter().flat_map(|o| o.values()) {
                bgp_family(family, vrf_of(name), &mut out);
            }
        }
    }
    out
}

fn bgp_family(family: &Value, vrf: Option<String>, out: &mut Vec<Session>) {
    for (peer, p) in family.get("peers").and_then(Value::as_object).into_iter().flatten() {
        let state = text(p, "state").unwrap_or_default();
        let received = p.get("pfxRcd").and_then(Value::as_u64);
        match out.iter_mut().find(|s| s.peer == *peer && s.vrf == vrf) {
            Some(s) => s.prefixes_received = Some(s.prefixes_received.unwrap_or(0) + received.unwrap_or(0)),
            None => out.push(Session {
                protocol: "bgp".into(),
                peer: peer.clone(),
                interface: None,
                vrf: vrf.clone(),
                up: state == "Established",
                state,
                prefixes_received: received,
            }),
        }
    }
}

/// BIRD protocols that hold sessions with neighbours; `device`, `direct`, `kernel`, `static`
/// have none.
const BIRD_SPEAKERS: [&str; 5] = ["bgp", "ospf", "rip", "babel", "bfd"];

/// `birdc show protocols`: "Name Proto Table State Since Info" under a banner; a BGP
/// protocol's Info is its session state.
fn bird_protocols(text: &str) -> Vec<Session> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [name, proto, _table, state, ..] = f[..] else { continue };
        let protocol = proto.to_ascii_lowercase();
        if !BIRD_SPEAKERS.contains(&protocol.as_str()) {
            continue;
        }
        // Info follows Since (a time, or a date and a time); BGP's starts with its FSM state.
        let info = f.iter().skip(4).find(|w| w.chars().next().is_some_and(char::is_alphabetic)).copied();
        let (state, up) = match (protocol.as_str(), info) {
            ("bgp", Some(info)) => (info.to_string(), info == "Established"),
            _ => (state.to_string(), state == "up"),
        };
        out.push(Session { protocol, peer: name.to_string(), interface: None, vrf: None, state, up, prefixes_received: None });
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("(no output)").trim()
}

/// Its standard output, or why not: a failure to start, a non-zero exit, `TIMEOUT` passed.
fn run(command: &mut Command) -> Result<String, String> {
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().map_err(|e| format!("not started: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let deadline = Instant::now() + TIMEOUT;
    let mut out = Vec::new();
    let read = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fd = libc::pollfd { fd: stdout.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut fd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if ready == 0 {
            break Err(format!("no answer within {} s", TIMEOUT.as_secs()));
        }
        let mut chunk = [0u8; 8192];
        match stdout.read(&mut chunk) {
            Ok(0) => break Ok(()),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e.to_string()),
        }
    };
    if read.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    read?;
    let text = String::from_utf8_lossy(&out).into_owned();
    match status.success() {
        true => Ok(text),
        false => Err(format!("{status}: {}", first_line(&text))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ospf_neighbours_are_up_when_full_and_name_the_interface_without_our_address() {
        let got = ospf_neighbors(&json!({"neighbors": {
            "10.1.0.2": [{"nbrState": "Full/-", "ifaceName": "eth0:10.1.0.1"}],
            "10.3.0.2": [{"nbrState": "Init/DROther", "ifaceName": "eth1:10.3.0.1"}],
        }}));
        let seen: Vec<_> = got.iter().map(|s| (s.peer.as_str(), s.interface.as_deref(), s.state.as_str(), s.up)).collect();
        assert_eq!(seen, [("10.1.0.2", Some("eth0"), "Full/-", true), ("10.3.0.2", Some("eth1"), "Init/DROther", false)]);
    }

    #[test]
    fn a_bgp_peer_of_two_families_is_one_session_with_both_families_prefixes() {
        let got = bgp_peers(&json!({
            "ipv4Unicast": {"peers": {"10.1.0.2": {"state": "Established", "pfxRcd": 3}, "10.9.0.2": {"state": "Active"}}},
            "ipv6Unicast": {"peers": {"10.1.0.2": {"state": "Established", "pfxRcd": 2}}},
        }));
        let seen: Vec<_> = got.iter().map(|s| (s.peer.as_str(), s.up, s.prefixes_received)).collect();
        assert_eq!(seen, [("10.1.0.2", true, Some(5)), ("10.9.0.2", false, None)]);
    }

    #[test]
    fn vrf_all_answers_name_each_sessions_vrf_but_the_default_one() {
        let ospf = ospf_neighbors(&json!({
            "default": {"vrfName": "default", "vrfId": 0, "neighbors": {"10.1.0.2": [{"nbrState": "Full/-", "ifaceName": "eth0:10.1.0.1"}]}},
            "blue": {"vrfName": "blue", "vrfId": 7, "neighbors": {"10.7.0.2": [{"nbrState": "Full/-", "ifaceName": "eth2:10.7.0.1"}]}},
        }));
        let seen: Vec<_> = ospf.iter().map(|s| (s.peer.as_str(), s.interface.as_deref(), s.vrf.as_deref())).collect();
        assert_eq!(seen, [("10.7.0.2", Some("eth2"), Some("blue")), ("10.1.0.2", Some("eth0"), None)]);
        let bgp = bgp_peers(&json!({
            "default": {"ipv4Unicast": {"peers": {"10.1.0.2": {"state": "Established", "pfxRcd": 3}}}},
            "blue": {"ipv4Unicast": {"peers": {"10.1.0.2": {"state": "Active"}}}, "ipv6Unicast": {"peers": {"10.1.0.2": {"state": "Active"}}}},
        }));
        let seen: Vec<_> = bgp.iter().map(|s| (s.peer.as_str(), s.vrf.as_deref(), s.up, s.prefixes_received)).collect();
        assert_eq!(seen, [("10.1.0.2", Some("blue"), false, Some(0)), ("10.1.0.2", None, true, Some(3))]);
    }

    #[test]
    fn bird_lists_its_speaking_protocols_with_a_bgp_sessions_own_state() {
        let text = "BIRD 2.0.12 ready.\n\
            Name       Proto      Table      State  Since         Info\n\
            device1    Device     ---        up     05:51:02.113  \n\
            frr        BGP        ---        up     05:51:04.870  Established   \n\
            down       BGP        ---        start  2026-12-02 05:51:02  Active        Socket: Connection refused\n\
            ospf1      OSPF       master4    up     05:51:02.113  Running\n";
        let seen: Vec<_> =
            bird_protocols(text).iter().map(|s| (s.protocol.clone(), s.peer.clone(), s.state.clone(), s.up)).collect::<Vec<_>>();
        let want = [("bgp", "frr", "Established", true), ("bgp", "down", "Active", false), ("ospf", "ospf1", "up", true)];
        let want: Vec<_> = want.iter().map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), *d)).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_query_that_hangs_is_cut_off_and_named() {
        let t = Instant::now();
        let got = run(Command::new("sleep").arg("30"));
        assert!(t.elapsed() < TIMEOUT + Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(got, Err("no answer within 5 s".to_string()));
        assert_eq!(run(Command::new("sh").args(["-c", "echo '% no such daemon'; exit 1"])), Err("exit status: 1: % no such daemon".into()));
    }
}
