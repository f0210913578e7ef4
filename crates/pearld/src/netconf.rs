//! A VR namespace's links, addresses, static routes and neighbours, set through rtnetlink from
//! pearld itself. Running `ip -n NS` instead cost a fork and exec per VR, each copying pearld's
//! descriptor table (thousands of TAPs and sockets at scale) and `ip`'s own copy of the mount
//! table (a bind mount per VR): creating VR N took time in proportion to N.

use pearl_control::{mac_text, IpPrefix, Mac};
use pearl_netlink::change::Change;
use pearl_netlink::consts::*;
use pearl_netlink::socket::NlSocket;
use std::ffi::CString;
use std::io;
use std::net::IpAddr;

/// One change, spelt as `ip` would (the error names it so).
pub enum Op<'a> {
    /// `link set DEV [address MAC mtu MTU] up`
    LinkUp { dev: &'a str, mac: Option<Mac>, mtu: Option<u32> },
    /// `addr replace PREFIX dev DEV [nodad]`
    AddrReplace { dev: &'a str, addr: IpPrefix },
    /// `neigh replace IP lladdr MAC dev DEV nud permanent`
    NeighReplace { dev: &'a str, ip: IpAddr, mac: Mac },
    /// `neigh del IP dev DEV`
    NeighDel { dev: &'a str, ip: IpAddr },
    /// `route replace PREFIX via GW dev DEV`
    RouteReplace { prefix: IpPrefix, via: IpAddr, dev: &'a str },
    /// `route del PREFIX`
    RouteDel { prefix: IpPrefix },
}

impl std::fmt::Display for Op<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::LinkUp { dev, mac: Some(m), mtu: Some(mtu) } => write!(f, "link set dev {dev} address {} mtu {mtu} up", mac_text(*m)),
            Op::LinkUp { dev, .. } => write!(f, "link set dev {dev} up"),
            Op::AddrReplace { dev, addr } => write!(f, "addr replace {addr} dev {dev}"),
            Op::NeighReplace { dev, ip, mac } => write!(f, "neigh replace {ip} lladdr {} dev {dev} nud permanent", mac_text(*mac)),
            Op::NeighDel { dev, ip } => write!(f, "neigh del {ip} dev {dev}"),
            Op::RouteReplace { prefix, via, dev } => write!(f, "route replace {prefix} via {via} dev {dev}"),
            Op::RouteDel { prefix } => write!(f, "route del {prefix}"),
        }
    }
}

/// Applies `ops` in order inside namespace `netns`; stops at the first the kernel refuses.
pub fn apply(netns: &str, ops: &[Op]) -> io::Result<()> {
    if ops.is_empty() {
        return Ok(());
    }
    pearl_vrproc::in_netns(netns, || apply_here(ops))
}

/// Applies `ops` in order in the calling thread's namespace.
pub fn apply_here(ops: &[Op]) -> io::Result<()> {
    let mut rtnl = NlSocket::open(0, 0, false)?;
    for op in ops {
        change(op).and_then(|c| rtnl.change(&c)).map_err(|e| io::Error::new(e.kind(), format!("{op}: {e}")))?;
    }
    Ok(())
}

/// Whether namespace `netns` has a link named `dev`.
pub fn has_link(netns: &str, dev: &str) -> io::Result<bool> {
    pearl_vrproc::in_netns(netns, || Ok(ifindex(dev).is_ok()))
}

fn family(ip: IpAddr) -> u8 {
    if ip.is_ipv4() {
        AF_INET
    } else {
        AF_INET6
    }
}

fn octets(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

pub fn ifindex(dev: &str) -> io::Result<u32> {
    let name = CString::new(dev).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a device name holds a NUL byte"))?;
    // SAFETY: a valid NUL-terminated name.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(io::Error::new(io::ErrorKind::NotFound, format!("no device {dev}"))),
        i => Ok(i),
    }
}

/// The request that makes `op`.
fn change(op: &Op) -> io::Result<Change> {
    Ok(match *op {
        Op::LinkUp { dev, mac, mtu } => {
            let mut fixed = [0u8; 16];
            fixed[4..8].copy_from_slice(&ifindex(dev)?.to_ne_bytes());
            fixed[8..12].copy_from_slice(&IFF_UP.to_ne_bytes());
            fixed[12..16].copy_from_slice(&IFF_UP.to_ne_bytes());
            let mut m = Change::new(RTM_NEWLINK, 0, &fixed);
            if let Some(mac) = mac {
                m = m.attr(IFLA_ADDRESS, &mac);
            }
            if let Some(mtu) = mtu {
                m = m.attr(IFLA_MTU, &mtu.to_ne_bytes());
            }
            m
        }
        Op::AddrReplace { dev, addr } => {
            let nodad = if addr.addr.is_ipv6() { IFA_F_NODAD } else { 0 };
            let mut fixed = [family(addr.addr), addr.len, nodad, 0, 0, 0, 0, 0];
            fixed[4..8].copy_from_slice(&ifindex(dev)?.to_ne_bytes());
            let a = octets(addr.addr);
            Change::new(RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, &fixed).attr(IFA_LOCAL, &a).attr(IFA_ADDRESS, &a)
        }
        Op::NeighReplace { dev, ip, mac } => {
            neigh(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, dev, ip, NUD_PERMANENT)?.attr(NDA_LLADDR, &mac)
        }
        Op::NeighDel { dev, ip } => neigh(RTM_DELNEIGH, 0, dev, ip, 0)?,
        Op::RouteReplace { prefix, via, dev } => {
            let fixed = [family(prefix.addr), prefix.len, 0, 0, RT_TABLE_MAIN as u8, RTPROT_BOOT, 0, RTN_UNICAST, 0, 0, 0, 0];
            let m = Change::new(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &fixed).attr(RTA_DST, &octets(prefix.addr));
            let m = if via.is_ipv4() == prefix.addr.is_ipv4() {
                m.attr(RTA_GATEWAY, &octets(via))
            } else {
                let mut v = u16::from(family(via)).to_ne_bytes().to_vec();
                v.extend(octets(via));
                m.attr(RTA_VIA, &v)
            };
            m.attr(RTA_OIF, &ifindex(dev)?.to_ne_bytes())
        }
        Op::RouteDel { prefix } => {
            let fixed = [family(prefix.addr), prefix.len, 0, 0, RT_TABLE_MAIN as u8, 0, RT_SCOPE_NOWHERE, 0, 0, 0, 0, 0];
            Change::new(RTM_DELROUTE, 0, &fixed).attr(RTA_DST, &octets(prefix.addr))
        }
    })
}

fn neigh(kind: u16, flags: u16, dev: &str, ip: IpAddr, state: u16) -> io::Result<Change> {
    let mut fixed = [0u8; 12];
    fixed[0] = family(ip);
    fixed[4..8].copy_from_slice(&ifindex(dev)?.to_ne_bytes());
    fixed[8..10].copy_from_slice(&state.to_ne_bytes());
    Ok(Change::new(kind, flags, &fixed).attr(NDA_DST, &octets(ip)))
}
