//! `driver: vxlan` ports: their tunnel is parsed, and every mistake is refused naming its field.

use pearl_control::{parse_config, Driver, VxlanConfig};

const EXAMPLE: &str = include_str!("../../../../examples/two-vrs.yaml");

/// The example with its first port (p0) turned into a vxlan port with tunnel `tunnel`, and a
/// second one p3 → `extra` when given.
fn with_tunnel(tunnel: &str) -> String {
    let from = "{name: p0, interface: pe0, driver: af_packet}";
    assert!(EXAMPLE.contains(from));
    EXAMPLE.replacen(from, &format!("{{name: p0, interface: u0, driver: vxlan, vxlan: {tunnel}}}"), 1)
}

fn refused(yaml: &str) -> String {
    parse_config(yaml).map(|_| panic!("accepted:\n{yaml}")).unwrap_err().to_string()
}

#[test]
fn a_vxlan_port_has_its_vni_remote_and_the_iana_port_by_default() {
    let c = parse_config(&with_tunnel("{vni: 100, remote: 10.9.0.2}")).unwrap();
    assert_eq!(c.ports[0].driver, Driver::Vxlan);
    let v = c.ports[0].vxlan.unwrap();
    assert_eq!(v, VxlanConfig { vni: 100, remote: "10.9.0.2".parse().unwrap(), local: None, dst_port: 4789 });
    assert_eq!(v.inner_mtu(1500), 1450);
    let c = parse_config(&with_tunnel("{vni: 16777215, remote: \"fd00::2\", local: \"fd00::1\", dst_port: 8472}")).unwrap();
    let v = c.ports[0].vxlan.unwrap();
    assert_eq!((v.vni, v.dst_port, v.local), (16_777_215, 8472, Some("fd00::1".parse().unwrap())));
    assert_eq!(v.inner_mtu(1500), 1430, "an IPv6 underlay costs 70 bytes");
}

#[test]
fn tunnels_may_share_an_underlay_but_not_their_ends() {
    let two = |second: &str| {
        with_tunnel("{vni: 100, remote: 10.9.0.2}").replacen(
            "{name: p1, interface: pe1, driver: af_packet}",
            &format!("{{name: p1, interface: u0, driver: vxlan, vxlan: {second}}}"),
            1,
        )
    };
    assert!(parse_config(&two("{vni: 101, remote: 10.9.0.2}")).is_ok(), "another VNI on the same underlay");
    assert!(parse_config(&two("{vni: 100, remote: 10.9.0.3}")).is_ok(), "another remote");
    let e = refused(&two("{vni: 100, remote: 10.9.0.2}"));
    assert!(e.starts_with("ports[1].vxlan: the same dst_port, remote and vni as ports[0].vxlan"), "{e}");
}

#[test]
fn a_bad_tunnel_is_refused_naming_the_field() {
    let cases = [
        ("{vni: 0, remote: 10.9.0.2}", "ports[0].vxlan.vni: must be positive"),
        ("{vni: 16777216, remote: 10.9.0.2}", "ports[0].vxlan.vni"),
        ("{vni: 1, remote: 10.9.0}", "ports[0].vxlan.remote: \"10.9.0\" is not an IPv4 or IPv6 address"),
        ("{vni: 1, remote: 0.0.0.0}", "ports[0].vxlan.remote: 0.0.0.0 cannot be a tunnel's far end"),
        ("{vni: 1, remote: 10.9.0.2, local: \"fd00::1\"}", "ports[0].vxlan.local: fd00::1 is not of the family of remote 10.9.0.2"),
        ("{vni: 1, remote: 10.9.0.2, dst_port: 0}", "ports[0].vxlan.dst_port: must be positive"),
        ("{vni: 1, remote: 10.9.0.2, dst_port: 65536}", "ports[0].vxlan.dst_port"),
        ("{vni: 1, remote: 10.9.0.2, ttl: 3}", "ports[0].vxlan"),
        ("{remote: 10.9.0.2}", "ports[0].vxlan"),
    ];
    for (tunnel, want) in cases {
        let got = refused(&with_tunnel(tunnel));
        assert!(got.starts_with(want), "want {want:?}\n got {got:?}");
    }
    let bare = EXAMPLE.replacen("{name: p0, interface: pe0, driver: af_packet}", "{name: p0, interface: u0, driver: vxlan}", 1);
    assert!(refused(&bare).starts_with("ports[0].vxlan: a vxlan port needs its tunnel"));
    let stray = EXAMPLE.replacen("driver: af_packet}", "driver: af_packet, vxlan: {vni: 1, remote: 10.9.0.2}}", 1);
    assert!(refused(&stray).starts_with("ports[0].vxlan: only ports with driver: vxlan have a tunnel"));
}
