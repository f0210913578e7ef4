//! The configuration as users write it: the examples parse, and every kind of mistake is
//! refused whole with an error naming the field.

use pearl_control::{parse_config, CodeOption, Driver, FilterAction, VrKind};

const EXAMPLE: &str = include_str!("../../../../examples/two-vrs.yaml");

#[test]
fn the_example_parses_into_resolved_state() {
    let c = parse_config(EXAMPLE).unwrap();
    assert_eq!(c.workers, 1);
    assert_eq!(c.ports.len(), 4);
    assert_eq!(c.ports[0].driver, Driver::AfPacket);
    let red = &c.vrs[0];
    assert_eq!((red.name.as_str(), red.kind, red.code), ("red", VrKind::Fast, CodeOption::Ip));
    assert_eq!(red.interfaces[1].port, 1);
    assert_eq!(red.routes[0].interface, 1, "via 10.2.0.2 resolves to eth1");
    assert_eq!(red.routes[1].interface, 1);
    assert_eq!(red.neighbors[0].mac, [2, 0xaa, 0, 0, 0, 2]);
    assert_eq!(red.limits.rate_mbps, Some(1000));
    let blue = &c.vrs[1];
    assert_eq!(blue.matches.len(), 1);
    assert_eq!(blue.matches[0].priority, 200);
    assert_eq!(blue.queues.len(), 2);
    assert_eq!(blue.limits.fib_entries, 1 << 21, "defaults apply");
}

fn refused(yaml: &str) -> String {
    match parse_config(yaml) {
        Ok(_) => panic!("accepted:\n{yaml}"),
        Err(e) => e.to_string(),
    }
}

/// The example with one textual substitution.
fn example_with(from: &str, to: &str) -> String {
    assert!(EXAMPLE.contains(from), "{from:?} not in the example");
    EXAMPLE.replacen(from, to, 1)
}

#[test]
fn a_vrs_port_share_is_its_limit_or_else_its_queue_weights() {
    let c = parse_config(EXAMPLE).unwrap();
    assert_eq!((c.vrs[1].limits.share, c.vrs[1].port_share()), (None, 4), "blue's queues weigh 3 and 1");
    let c = parse_config(&example_with("rate_mbps: 1000,", "rate_mbps: 1000, share: 7,")).unwrap();
    assert_eq!((c.vrs[0].limits.share, c.vrs[0].port_share()), (Some(7), 7));
}

#[test]
fn an_af_xdp_port_may_receive_through_af_packet() {
    let config = parse_config(&example_with("driver: af_packet}", "driver: af_xdp, rx: af_packet}")).unwrap();
    assert_eq!((config.ports[0].driver, config.ports[0].rx), (Driver::AfXdp, Driver::AfPacket));
    let plain = parse_config(&example_with("driver: af_packet}", "driver: af_xdp}")).unwrap();
    assert_eq!(plain.ports[0].rx, Driver::AfXdp, "by default a port receives through its driver");
}

#[test]
fn only_a_port_that_names_neither_driver_nor_rx_is_driven_as_its_device_is_best_served() {
    let by = |from: &str| parse_config(&example_with("driver: af_packet}", from)).unwrap().ports[0].by_device;
    assert!(by("}"));
    assert!(by("rx_ring_frames: 512}"), "a ring for the PACKET rx the device may choose");
    assert!(!by("driver: af_xdp}") && !by("rx: af_packet}") && !by("driver: af_packet}"));
}

#[test]
fn errors_name_the_field() {
    let cases = [
        (
            example_with("02:00:00:00:02:00", "02:00:00:00:01:00"),
            "vrs[1].interfaces[0].mac: duplicate of vrs[0].interfaces[0].mac",
        ),
        (example_with("port: p3", "port: p9"), "vrs[1].interfaces[1].port: unknown port \"p9\""),
        (
            example_with("prefix: 198.51.100.0/24, via: 10.2.0.2}\n      - {prefix: \"2001", "prefix: 198.51.100.7/24, via: 10.2.0.2}\n      - {prefix: \"2001"),
            "vrs[0].routes[0].prefix: 198.51.100.7/24 has bits set beyond its length (did you mean 198.51.100.0/24?)",
        ),
        (example_with("kind: fast", "kind: plugin"), "vrs[0].plugin: a plugin VR needs its program"),
        (example_with("kind: fast", "kind: fast\n    plugin: {wasm: /dev/null}"), "vrs[0].plugin: only plugin VRs run plugins (this one is fast)"),
        (
            example_with("kind: fast", "kind: plugin\n    plugin: {wasm: /nonexistent/lab.wasm}"),
            "vrs[0].plugin.wasm: /nonexistent/lab.wasm: No such file or directory",
        ),
        (example_with("kind: fast", "kind: plugin\n    plugin: {process: [/nonexistent/fwd]}"), "vrs[0].plugin.process[0]: /nonexistent/fwd: No such file or directory"),
        (example_with("kind: fast", "kind: plugin\n    plugin: {process: [/etc/passwd]}"), "vrs[0].plugin.process[0]: /etc/passwd: not an executable file"),
        (example_with("kind: fast", "kind: plugin\n    plugin: {process: []}"), "vrs[0].plugin.process: give the executable"),
        (example_with("kind: fast", "kind: plugin\n    plugin: {process: [/bin/true], wasm: /dev/null}"), "vrs[0].plugin: a plugin is one of wasm:, process: and xdp:"),
        (example_with("kind: fast", "kind: plugin\n    plugin: {xdp: /etc/passwd}"), "vrs[0].plugin.xdp: /etc/passwd: not an ELF object"),
        (example_with("kind: fast", "kind: plugin\n    plugin: {xdp: /bin/true, tables: {t: 1}}"), "vrs[0].plugin.tables: an XDP program's state is its maps"),
        (example_with("kind: fast", "kind: plugin\n    plugin: {wasm: /dev/null, section: xdp}"), "vrs[0].plugin.section: names the program of an xdp: object"),
        (example_with("kind: fast", "kind: plugin\n    plugin: {wasm: /dev/null, cfg: 1}"), "vrs[0].plugin.cfg: unknown field"),
        (
            example_with("kind: fast", "kind: shared"),
            "vrs[0].interfaces[0].mac: a shared VR's MAC must encode its VR and interface as 02:LO:HI:00:00:IF (the id's low byte, then its high byte); here that is 02:00:00:00:00:00",
        ),
        (example_with("code: ip\n", "code: ipx\n"), "vrs[0].code: unknown code option \"ipx\""),
        (example_with("workers: 1", "workers: 0"), "workers: must be at least 1"),
        (example_with("workers: 1", "wrokers: 1"), "wrokers: unknown field"),
        (example_with("rate_mbps: 1000,", "rate_mpbs: 1000,"), "vrs[0].limits.rate_mpbs: unknown field"),
        (example_with("{name: p1, interface: pe1", "{name: p0, interface: pe1"), "ports[1].name: duplicate of ports[0].name"),
        (example_with("interface: pe1", "interface: pe0"), "ports[1].interface: pe0 is already driven by ports[0]"),
        (example_with("driver: af_packet}", "driver: dpdk}"), "ports[0].driver: unknown driver \"dpdk\""),
        (example_with("driver: af_packet}", "driver: af_packet, rx: af_xdp}"), "ports[0].rx: only af_xdp ports choose how they receive"),
        (example_with("driver: af_packet}", "driver: af_xdp, rx: tap}"), "ports[0].rx: unknown rx \"tap\" (af_xdp, af_packet)"),
        (example_with("driver: af_packet}", "driver: af_xdp, rx_ring_frames: 512}"), "ports[0].rx_ring_frames: only ports that receive on AF_PACKET"),
        (example_with("driver: af_packet}", "driver: af_packet, rx_ring_frames: 0}"), "ports[0].rx_ring_frames: must be positive"),
        (example_with("driver: af_packet}", "driver: af_packet, rx_ring_frames: 70000}"), "ports[0].rx_ring_frames"),
        (example_with("via: 10.2.0.2}", "via: 10.9.0.2}"), "vrs[0].routes[0].via: 10.9.0.2 is on none of the VR's interface subnets"),
        (example_with("mac: \"02:00:00:00:01:00\"", "mac: \"03:00:00:00:01:00\""), "vrs[0].interfaces[0].mac: must be a unicast address"),
        (example_with("mac: \"02:00:00:00:01:00\"", "mac: \"02:00:00:00:01\""), "vrs[0].interfaces[0].mac: \"02:00:00:00:01\" is not a MAC address"),
        (example_with("addresses: [10.1.0.1/24]", "addresses: [10.1.0.1/40]"), "vrs[1].interfaces[0].addresses[0]: \"10.1.0.1/40\": the length exceeds"),
        (example_with("{udp_dst: 4000, priority: 200}", "{udp_dst: 4000, queue: 2}"), "vrs[1].match[0].queue: the VR has 2 queue(s)"),
        (example_with("{udp_dst: 4000, priority: 200}", "{udp_dst: 70000}"), "vrs[1].match[0].udp_dst: does not fit the 16-bit l4_dst field"),
        (example_with("{udp_dst: 4000, priority: 200}", "{udp_dst: 53, ip_proto: 6}"), "vrs[1].match[0].udp_dst: contradicts another condition on ip_proto"),
        (example_with("{udp_dst: 4000, priority: 200}", "{priority: 5}"), "vrs[1].match[0]: a match rule needs at least one field"),
        (example_with("code: ipv4", "code: ipv6"), "vrs[1].routes[0].prefix: 198.51.100.0/24: this VR's code option does not route"),
        (example_with("name: blue", "name: red"), "vrs[1].name: duplicate of vrs[0].name"),
        (example_with("queues: [{weight: 1, length: 1024}]", "queues: [{weight: 0, length: 1024}]"), "vrs[0].queues[0].weight: must be positive"),
        (example_with("rate_mbps: 1000,", "rate_mbps: 1000, share: 0,"), "vrs[0].limits.share: must be positive"),
        ("vrs: {}\n".to_string(), "vrs: expected a list"),
        ("ports: [\n".to_string(), "YAML:"),
    ];
    for (yaml, want) in cases {
        let got = refused(&yaml);
        assert!(got.starts_with(want), "want {want:?}\n got {got:?}");
    }
}

#[test]
fn overlapping_rules_of_two_vrs_at_one_priority_are_refused() {
    let yaml = example_with("match: []", "match: [{udp_dst: 4000, priority: 200}]");
    let got = refused(&yaml);
    assert!(got.starts_with("vrs[1].match[0]: overlaps vrs[0].match[0] at the same priority 200"), "{got}");
    // At different priorities the order is defined, so both are fine.
    parse_config(&example_with("match: []", "match: [{udp_dst: 4000, priority: 300}]")).unwrap();
    // Disjoint at the same priority is fine too.
    parse_config(&example_with("match: []", "match: [{udp_dst: 4001, priority: 200}]")).unwrap();
}

#[test]
fn every_example_is_a_valid_configuration() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            pearl_control::parse_config_in(&text, &dir).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
        }
    }
    assert!(seen >= 2, "examples/ holds the runnable configurations");
}

#[test]
fn an_interface_has_an_mtu_and_a_urpf_mode() {
    let c = parse_config(EXAMPLE).unwrap();
    let eth1 = &c.vrs[0].interfaces[1];
    assert_eq!((eth1.mtu, eth1.urpf), (None, pearl_control::Urpf::Off), "defaults: the port's MTU, no uRPF");
    let text = example_with(
        r#"mac: "02:00:00:00:01:01", addresses: [10.2.0.1/24, "2001:db8:2::1/64"]}"#,
        r#"mac: "02:00:00:00:01:01", addresses: [10.2.0.1/24, "2001:db8:2::1/64"], mtu: 1400, urpf: strict}"#,
    );
    let c = parse_config(&text).unwrap();
    let eth1 = &c.vrs[0].interfaces[1];
    assert_eq!((eth1.mtu, eth1.urpf), (Some(1400), pearl_control::Urpf::Strict));
    let loose = parse_config(&example_with("addresses: [10.1.0.1/24]}", "addresses: [10.1.0.1/24], urpf: loose, mtu: 576}")).unwrap();
    assert_eq!((loose.vrs[1].interfaces[0].urpf, loose.vrs[1].interfaces[0].mtu), (pearl_control::Urpf::Loose, Some(576)));
}

#[test]
fn a_bad_mtu_or_urpf_is_refused_naming_the_field() {
    let v6 = r#"mac: "02:00:00:00:01:01", addresses: [10.2.0.1/24, "2001:db8:2::1/64"]}"#;
    let e = refused(&example_with(v6, &v6.replace('}', ", mtu: 1200}")));
    assert!(e.contains("vrs[0].interfaces[1].mtu") && e.contains("1280"), "{e}");
    let e = refused(&example_with("addresses: [10.1.0.1/24]}", "addresses: [10.1.0.1/24], mtu: 60}"));
    assert!(e.contains("vrs[1].interfaces[0].mtu") && e.contains("68"), "{e}");
    let e = refused(&example_with("addresses: [10.1.0.1/24]}", "addresses: [10.1.0.1/24], mtu: 9001}"));
    assert!(e.contains("vrs[1].interfaces[0].mtu"), "{e}");
    let e = refused(&example_with("addresses: [10.1.0.1/24]}", "addresses: [10.1.0.1/24], urpf: sometimes}"));
    assert!(e.contains("vrs[1].interfaces[0].urpf") && e.contains("strict, loose, off"), "{e}");
}

#[test]
fn a_vr_accepts_source_routes_only_when_it_says_so() {
    let c = parse_config(EXAMPLE).unwrap();
    assert!(!c.vrs[0].accept_source_route, "off by default, as on Linux");
    let c = parse_config(&example_with("    code: ipv4\n", "    code: ipv4\n    accept_source_route: true\n")).unwrap();
    assert!(c.vrs[1].accept_source_route && !c.vrs[0].accept_source_route);
    let e = refused(&example_with("    code: ipv4\n", "    code: ipv4\n    accept_source_route: yes please\n"));
    assert!(e.contains("vrs[1].accept_source_route") && e.contains("true or false"), "{e}");
}

/// `n` VRs with one interface each; `ids[k]` states VR k's id where given.
fn vrs_doc(n: usize, ids: &[(usize, u16)]) -> String {
    let mut doc = String::from("ports:\n  - {name: p0, interface: veth0}\nvrs:\n");
    for k in 0..n {
        let mac = format!("02:00:{:02x}:{:02x}:01:00", k >> 8, k & 0xff);
        doc += &format!("  - name: v{k}\n    interfaces: [{{name: eth0, port: p0, mac: \"{mac}\"}}]\n");
        if let Some((_, id)) = ids.iter().find(|(at, _)| *at == k) {
            doc += &format!("    id: {id}\n");
        }
    }
    doc
}

#[test]
fn a_vr_without_an_id_takes_the_lowest_id_nobody_states() {
    // VR 3 states id 1, stated before the VRs that take theirs in order; VR 5 states 4.
    let c = parse_config(&vrs_doc(7, &[(3, 1), (5, 4)])).unwrap();
    let ids: Vec<u16> = c.vrs.iter().map(|v| v.id).collect();
    assert_eq!(ids, [0, 2, 3, 1, 5, 4, 6]);
}

#[test]
fn a_node_holds_8192_vrs_and_the_next_is_refused_naming_it() {
    let max = usize::from(pearl_control::MAX_VR_ID) + 1;
    let c = parse_config(&vrs_doc(max, &[(0, 8191)])).unwrap();
    assert_eq!(c.vrs.len(), 8192);
    assert_eq!(c.vrs[1].id, 0);
    assert_eq!(c.vrs[8191].id, 8190);
    let e = refused(&vrs_doc(max + 1, &[]));
    assert!(e.contains("vrs[8192]") && e.contains("no VR id left (at most 8192 VRs)"), "{e}");
}

const FILTER: &str = include_str!("../../../../examples/filter-vr.yaml");

#[test]
fn a_filter_vrs_rules_say_where_frames_go() {
    let c = parse_config(FILTER).unwrap();
    let vr = &c.vrs[0];
    assert_eq!(vr.code, CodeOption::Filter);
    let actions: Vec<_> = vr.matches.iter().map(|m| m.action).collect();
    assert_eq!(
        actions,
        [
            Some(FilterAction::Out { interface: 1, mac: Some([2, 0xaa, 0, 0, 6, 2]) }),
            Some(FilterAction::Out { interface: 0, mac: Some([2, 0xaa, 0, 0, 5, 2]) }),
            Some(FilterAction::Slow),
            Some(FilterAction::Drop),
        ]
    );
    let plain = parse_config(EXAMPLE).unwrap();
    assert_eq!(plain.vrs[1].matches[0].action, None, "an IP router's rules only pick a queue");
}

#[test]
fn a_filter_rule_without_one_clear_action_is_refused_naming_it() {
    let filter_with = |from: &str, to: &str| {
        assert!(FILTER.contains(from), "{from:?} not in the example");
        FILTER.replacen(from, to, 1)
    };
    let cases = [
        (filter_with("out: e0, mac", "out: e9, mac"), "vrs[0].match[0].out", "no interface \"e9\""),
        (filter_with("udp_dst: 53, slow: true", "udp_dst: 53"), "vrs[0].match[2]", "needs an action"),
        (filter_with("slow: true", "slow: true, drop: true"), "vrs[0].match[2]", "one action"),
        (
            filter_with("{ip_proto: 1, drop: true", "{ip_proto: 1, drop: true, mac: \"02:00:00:00:00:01\""),
            "vrs[0].match[3].mac",
            "out: IFACE",
        ),
        (filter_with("code: filter", "code: sieve"), "vrs[0].code", "unknown code option"),
        (filter_with("kind: fast\n    code: filter", "kind: kernel\n    code: filter"), "vrs[0].code", "fast path"),
        (
            example_with("{udp_dst: 4000, priority: 200}", "{udp_dst: 4000, priority: 200, out: eth1}"),
            "vrs[1].match[0].out",
            "code: filter",
        ),
    ];
    for (yaml, path, text) in cases {
        let e = refused(&yaml);
        assert!(e.starts_with(path) && e.contains(text), "expected {path}: …{text}…, got {e}");
    }
}

/// A packet trace's filter: a match rule's conditions as the value/mask a flow key is held to,
/// the ports named as the configuration names them; priority and queue have no place there.
#[test]
fn a_filters_conditions_become_a_key_and_its_mask_and_refusals_name_the_field() {
    use pearl_control::grammar::MatchSpec;
    use pearl_control::match_key;
    use pearl_wire::flow_key::ip_to_u128;
    use pearl_wire::{Field, FlowKey};
    let config = parse_config("ports:\n  - {name: p0, interface: p0}\n  - {name: p1, interface: p1}\nvrs: []\n").unwrap();
    let spec: MatchSpec = serde_json::from_value(serde_json::json!({"ip_dst": "10.2.0.0/24", "ip_proto": 1, "in_port": "p1"})).unwrap();
    let (value, mask) = match_key(&spec, &config.ports).unwrap();
    let key = |dst: [u8; 4], port: u16| {
        let mut k = FlowKey::default();
        k.set(Field::EtherType, 0x0800);
        k.set(Field::IpDst, ip_to_u128(dst.into()));
        k.set(Field::IpProto, 1);
        k.set(Field::InPort, u128::from(port));
        k
    };
    assert!(key([10, 2, 0, 9], 1).matches(&value, &mask));
    assert!(!key([10, 3, 0, 9], 1).matches(&value, &mask), "outside the prefix");
    assert!(!key([10, 2, 0, 9], 0).matches(&value, &mask), "another port");
    for (bad, field) in
        [(serde_json::json!({"priority": 5, "ip_proto": 1}), "match.priority"), (serde_json::json!({"in_port": "p9"}), "match.in_port")]
    {
        let spec: MatchSpec = serde_json::from_value(bad).unwrap();
        assert_eq!(match_key(&spec, &config.ports).unwrap_err().path, field);
    }
}
