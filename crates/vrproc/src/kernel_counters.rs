//! What a VR's kernel dropped, by its own reasons: the IP and IPv6 MIB counters of the VR's
//! namespace (`/proc/net/snmp`, `/proc/net/snmp6`, under the names `nstat` gives them). The fast
//! path hands the kernel every packet it must judge (exceptions); the kernel may drop it there
//! (a source route not accepted, an unknown hop-by-hop option, a failed reassembly), and these
//! say so next to the fast path's own drop counters.

use std::fs::File;
use std::io;
use crate::netns::in_netns;
use std::os::unix::fs::FileExt;

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

/// The two files, opened inside the VR's namespace: a proc file keeps the namespace it was
/// opened in, so reading them later needs no namespace switch.
pub struct KernelCounters {
    snmp: File,
    snmp6: File,
}

impl KernelCounters {
    /// Opens the counters of network namespace `netns` (a name under /run/netns).
    pub fn open(netns: &str) -> io::Result<KernelCounters> {
        in_netns(netns, || {
            // thread-self: /proc/self/net would show the process's namespace, not this thread's.
            let open = |f: &str| {
                File::open(format!("/proc/thread-self/net/{f}")).map_err(|e| io::Error::new(e.kind(), format!("/proc/net/{f}: {e}")))
            };
            Ok(KernelCounters { snmp: open("snmp")?, snmp6: open("snmp6")? })
        })
    }

    /// Every drop counter with its value, IPv4 first.
    pub fn drops(&self) -> io::Result<Vec<(&'static str, u64)>> {
        let (v4, v6) = (read_all(&self.snmp)?, read_all(&self.snmp6)?);
        let mut out = Vec::with_capacity(IP.len() + IP6.len());
        let ip = ip_counters(&v4);
        for (name, label) in IP {
            out.push((label, ip.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)));
        }
        for &name in IP6 {
            let v = v6.lines().find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(name)).then(|| w.next().and_then(|v| v.parse().ok())).flatten()
            });
            out.push((name, v.unwrap_or(0)));
        }
        Ok(out)
    }
}

fn read_all(f: &File) -> io::Result<String> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut len = 0;
    loop {
        let n = f.read_at(&mut buf[len..], len as u64)?;
        if n == 0 {
            break;
        }
        len += n;
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
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
    fn this_namespaces_counters_read_and_name_every_drop() {
        // The test's own namespace: only root may setns, so the files are opened directly.
        let (Ok(snmp), Ok(snmp6)) = (File::open("/proc/net/snmp"), File::open("/proc/net/snmp6")) else { return };
        let k = KernelCounters { snmp, snmp6 };
        let drops = k.drops().unwrap();
        assert_eq!(drops.len(), IP.len() + IP6.len());
        assert!(drops.iter().any(|(n, _)| *n == "IpInAddrErrors") && drops.iter().any(|(n, _)| *n == "Ip6InNoRoutes"));
    }
}
