//! `nat:` of a VR: transport ports it reserves on a node address (SPP's external port
//! reservations). Its TCP and UDP traffic out of the interface holding that address is
//! source-NATed into the range in the fast path, and traffic back to the address and a port of
//! the range is steered to the VR whatever else would claim it.
//!
//! ```yaml
//! nat: {address: 203.0.113.1, ports: 20000-20999}     # interface: the one on 203.0.113.1's subnet
//! ```

use crate::at::At;
use crate::error::ConfigError;
use crate::grammar::NatSpec;
use crate::model::{InterfaceConfig, NatConfig, VrConfig};
use core::net::IpAddr;
use std::sync::Arc;

pub(crate) fn parse_nat(n: &NatSpec, at: At<'_>, interfaces: &[InterfaceConfig]) -> Result<NatConfig, ConfigError> {
    let address_at = at.key("address");
    let address = match crate::values::ip(&n.address, address_at)? {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(_) => return Err(address_at.err("NAT is for IPv4 (an IPv6 VR routes its own addresses)")),
    };
    let text = n.ports.text();
    let (a, b) = text.split_once('-').unwrap_or((&text, &text));
    let port = |s: &str| s.trim().parse::<u16>().ok().filter(|&v| v >= 1024);
    let (first, last) = match (port(a), port(b)) {
        (Some(a), Some(b)) if a <= b => (a, b),
        _ => return Err(at.key("ports").err(format!("{text:?} is not a range FIRST-LAST of ports 1024-65535"))),
    };
    let interface = match &n.interface {
        Some(name) => interfaces
            .iter()
            .position(|f| &f.name == name)
            .ok_or_else(|| at.key("interface").err(format!("no interface {name:?} in this VR")))?,
        None => interfaces.iter().position(|f| f.addresses.iter().any(|a| a.contains(IpAddr::V4(address)))).ok_or_else(|| {
            address_at.err(format!("{address} is on none of the VR's interface subnets (name the outside one with nat.interface)"))
        })?,
    };
    Ok(NatConfig { address, first, last, interface })
}

/// Once every VR is known: reservations on one address do not overlap, and NAT state lives in
/// the one worker that sees both directions of a flow.
pub(crate) fn check_nat(vrs: &[Arc<VrConfig>], workers: usize) -> Result<(), ConfigError> {
    let reserved: Vec<(usize, &NatConfig)> = vrs.iter().enumerate().filter_map(|(v, vr)| vr.nat.as_ref().map(|n| (v, n))).collect();
    for (k, &(v, nat)) in reserved.iter().enumerate() {
        if workers > 1 {
            return Err(ConfigError::at(
                format!("vrs[{v}].nat"),
                format!("NAT keeps its mappings in one worker; it needs workers: 1 (this configuration has {workers})"),
            ));
        }
        for &(w, other) in &reserved[..k] {
            if reservations_overlap(nat, other) {
                return Err(ConfigError::at(
                    format!("vrs[{v}].nat.ports"),
                    format!("{}-{} overlaps vrs[{w}].nat.ports ({}-{}) on {}", nat.first, nat.last, other.first, other.last, nat.address),
                ));
            }
        }
    }
    Ok(())
}

/// The reservation as the configuration writes it.
/// Whether two reservations share a port of one address.
pub(crate) fn reservations_overlap(a: &NatConfig, b: &NatConfig) -> bool {
    a.address == b.address && a.first <= b.last && b.first <= a.last
}

pub fn nat_ports_text(nat: &NatConfig) -> String {
    format!("{}-{}", nat.first, nat.last)
}

#[cfg(test)]
mod tests {
    use crate::parse_config;

    fn two(red: &str, blue: &str, workers: u32) -> String {
        format!(
            "workers: {workers}
ports: [{{name: p0, interface: pe0}}, {{name: p1, interface: pe1}}, {{name: up, interface: up0}}]
vrs:
  - name: red
    interfaces:
      - {{name: eth0, port: p0, mac: '02:00:00:00:01:00', addresses: [10.0.0.1/24]}}
      - {{name: eth1, port: up, mac: '02:00:00:00:01:01', addresses: [203.0.113.1/24]}}
    nat: {red}
  - name: blue
    interfaces:
      - {{name: eth0, port: p1, mac: '02:00:00:00:02:00', addresses: [10.0.0.1/24]}}
      - {{name: eth1, port: up, mac: '02:00:00:00:02:01', addresses: [203.0.113.1/24]}}
    nat: {blue}
"
        )
    }

    #[test]
    fn reservations_are_read_and_may_not_overlap() {
        let c = parse_config(&two("{address: 203.0.113.1, ports: 20000-20999}", "{address: 203.0.113.1, ports: 21000-21999}", 1)).unwrap();
        let n = c.vrs[0].nat.unwrap();
        assert_eq!((n.address.to_string(), n.first, n.last, n.interface), ("203.0.113.1".to_string(), 20000, 20999, 1));
        for (red, blue, workers, want) in [
            (
                "{address: 203.0.113.1, ports: 20000-20999}",
                "{address: 203.0.113.1, ports: 20500-21499}",
                1,
                "vrs[1].nat.ports: 20500-21499 overlaps vrs[0].nat.ports (20000-20999) on 203.0.113.1",
            ),
            (
                "{address: 203.0.113.1, ports: 20000-20999}",
                "{address: 203.0.113.1, ports: 21000-21999}",
                2,
                "vrs[0].nat: NAT keeps its mappings in one worker",
            ),
            (
                "{address: 203.0.113.1, ports: 2000-1000}",
                "{address: 203.0.113.1, ports: 21000}",
                1,
                "vrs[0].nat.ports: \"2000-1000\" is not a range",
            ),
            (
                "{address: 203.0.113.1, ports: 80-90}",
                "{address: 203.0.113.1, ports: 21000}",
                1,
                "vrs[0].nat.ports: \"80-90\" is not a range FIRST-LAST of ports 1024-65535",
            ),
            (
                "{address: 198.51.100.1, ports: 20000-20999}",
                "{address: 203.0.113.1, ports: 21000}",
                1,
                "vrs[0].nat.address: 198.51.100.1 is on none of the VR's interface subnets",
            ),
            (
                "{address: '2001:db8::1', ports: 20000-20999}",
                "{address: 203.0.113.1, ports: 21000}",
                1,
                "vrs[0].nat.address: NAT is for IPv4",
            ),
            (
                "{address: 203.0.113.1, ports: 20000-20999, interface: eth7}",
                "{address: 203.0.113.1, ports: 21000}",
                1,
                "vrs[0].nat.interface: no interface \"eth7\"",
            ),
        ] {
            let got = parse_config(&two(red, blue, workers)).expect_err(want).to_string();
            assert!(got.starts_with(want), "want {want:?}\n got {got:?}");
        }
    }
}
