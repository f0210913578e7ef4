//! What a VR's kernel dropped, by its own reasons, and what it forwarded: the IP and IPv6 MIB
//! counters of the VR's namespace (`/proc/net/snmp`, `/proc/net/snmp6`, under the names `nstat`
//! gives them). The fast path hands the kernel every packet it must judge (exceptions); the
//! kernel may drop it there (a source route not accepted, an unknown hop-by-hop option, a failed
//! reassembly), and these say so next to the fast path's own drop counters. A kernel VR's
//! kernel forwards all its traffic, which the fast path never counts as forwarded.

use crate::netns::enter;
use std::io;

/// The drop counters of `Ip:` in /proc/net/snmp, and their names as `nstat` shows them.
const IP: [(&str, &str); 8] = [
    ("InHdrErrors", "IpInHdrErrors"),
    ("InAddrErrors", "IpInAddrErrors"),
    ("InUnknownProtos", "IpInUnknownProtos"),
    ("InDiscards", "IpInDiscards"),
    ("OutDiscards", "IpOutDiscards"),
    ("OutNoRoutes", "IpOutNoRoutes"),
    ("ReasmFails", "IpReasmFails"),
    ("FragFails", "IpFragFails"),
];

/// The drop counters of /proc/net/snmp6.
const IP6: &[&str] = &[
    "Ip6InHdrErrors",
    "Ip6InTooBigErrors",
    "Ip6InNoRoutes",
    "Ip6InAddrErrors",
    "Ip6InUnknownProtos",
    "Ip6InTruncatedPkts",
    "Ip6InDiscards",
    "Ip6OutDiscards",
    "Ip6OutNoRoutes",
    "Ip6ReasmFails",
    "Ip6FragFails",
];

/// What one VR's kernel counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCounters {
    /// Every drop counter with its value, IPv4 first.
    pub drops: Vec<(&'static str, u64)>,
    /// IPv4 and IPv6 packets the kernel forwarded (`IpForwDatagrams` + `Ip6OutForwDatagrams`).
    pub forwarded_packets: u64,
}

/// Reads the drop and forwarding counters of each namespace in `netns` (names under /run/netns), in order, on
/// one thread that enters each in turn. Read when asked rather than kept open: two proc files
/// held per VR would be thousands of descriptors on a node of thousands of VRs.
pub fn kernel_counters(netns: &[&str]) -> Vec<io::Result<KernelCounters>> {
    if netns.is_empty() {
        return Vec::new();
    }
    std::thread::scope(|s| {
        s.spawn(|| netns.iter().map(|ns| read_in(ns)).collect())
            .join()
            .unwrap_or_else(|_| netns.iter().map(|_| Err(io::Error::other("reading kernel counters panicked"))).collect())
    })
}

/// Enters `netns` (this thread only) and reads its counters.
fn read_in(netns: &str) -> io::Result<KernelCounters> {
    enter(netns)?;
    // thread-self: /proc/self/net would show the process's namespace, not this thread's.
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/thread-self/net/{f}"))
            .map_err(|e| io::Error::new(e.kind(), format!("/run/netns/{netns}: /proc/net/{f}: {e}")))
    };
    let (v4, v6) = (read("snmp")?, read("snmp6")?);
    Ok(KernelCounters { drops: drops(&v4, &v6), forwarded_packets: forwarded(&v4, &v6) })
}

fn forwarded(v4: &str, v6: &str) -> u64 {
    let ip = ip_counters(v4).iter().find(|(n, _)| *n == "ForwDatagrams").map_or(0, |(_, v)| *v);
    ip + snmp6_value(v6, "Ip6OutForwDatagrams").unwrap_or(0)
}

fn snmp6_value(v6: &str, name: &str) -> Option<u64> {
    v6.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some(name)).then(|| w.next().and_then(|v| v.parse().ok())).flatten()
    })
}

/// Every drop counter with its value, IPv4 first, from the two files' text.
fn drops(v4: &str, v6: &str) -> Vec<(&'static str, u64)> {
    let mut out = Vec::with_capacity(IP.len() + IP6.len());
    let ip = ip_counters(v4);
    for (name, label) in IP {
        out.push((label, ip.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)));
    }
    for &name in IP6 {
        out.push((name, snmp6_value(v6, name).unwrap_or(0)));
    }
    out
}

/// The `Ip:` header line's names paired with the values line after it.
fn ip_counters(snmp: &str) -> Vec<(&str, u64)> {
    let mut lines = snmp.lines().filter(|l| l.starts_with("Ip: "));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else { return Vec::new() };
    names.split_whitespace().skip(1).zip(values.split_whitespace().skip(1)).filter_map(|(n, v)| Some((n, v.parse().ok()?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ip_lines_pair_names_with_values() {
        let snmp = "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors\nIp: 1 64 90 3 7\nIcmp: InMsgs\nIcmp: 4\n";
        assert_eq!(ip_counters(snmp), [("Forwarding", 1), ("DefaultTTL", 64), ("InReceives", 90), ("InHdrErrors", 3), ("InAddrErrors", 7)]);
    }

    #[test]
    fn forwarded_packets_add_the_ipv4_and_ipv6_forwarded_counts() {
        let snmp = "Ip: Forwarding DefaultTTL InReceives ForwDatagrams\nIp: 1 64 90 40\n";
        let snmp6 = "Ip6InReceives                   \t7\nIp6OutForwDatagrams             \t2\n";
        assert_eq!(forwarded(snmp, snmp6), 42);
        assert_eq!(forwarded(snmp, ""), 40, "a namespace without IPv6 forwarded IPv4 alone");
    }

    #[test]
    fn this_namespaces_counters_read_and_name_every_drop() {
        // The test's own namespace: entering another needs root and a named namespace.
        let (Ok(v4), Ok(v6)) = (std::fs::read_to_string("/proc/net/snmp"), std::fs::read_to_string("/proc/net/snmp6")) else { return };
        let drops = drops(&v4, &v6);
        assert_eq!(drops.len(), IP.len() + IP6.len());
        assert!(drops.iter().any(|(n, _)| *n == "IpInAddrErrors") && drops.iter().any(|(n, _)| *n == "Ip6InNoRoutes"));
    }

    #[test]
    fn a_namespace_that_is_not_there_is_an_error_naming_it() {
        let r = kernel_counters(&["pearl-no-such-namespace"]);
        let e = r[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("/run/netns/pearl-no-such-namespace"), "{e}");
    }
}
