//! A VR namespace's links, addresses, static routes and neighbours, set through rtnetlink from
//! pearld itself. Running `ip -n NS` instead cost a fork and exec per VR, each copying pearld's
//! descriptor table (thousands of TAPs and sockets at scale) and `ip`'s own copy of the mount
//! table (a bind mount per VR): creating VR N took time in proportion to N.

use pearl_control::{mac_text, IpPrefix, Mac};
use std::ffi::CString;
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

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
pub fn apply(netns: &str, ops: &[Op]) -> Result<(), String> {
    if ops.is_empty() {
        return Ok(());
    }
    pearl_vrproc::in_netns(netns, || apply_here(ops)).map_err(|e| e.to_string())
}

/// Applies `ops` in order in the calling thread's namespace.
pub fn apply_here(ops: &[Op]) -> io::Result<()> {
    let rtnl = Rtnl::open()?;
    for op in ops {
        rtnl.request(op).map_err(|e| io::Error::new(e.kind(), format!("{op}: {e}")))?;
    }
    Ok(())
}

/// Whether namespace `netns` has a link named `dev`.
pub fn has_link(netns: &str, dev: &str) -> io::Result<bool> {
    pearl_vrproc::in_netns(netns, || Ok(ifindex(dev).is_ok()))
}

const RTM_NEWLINK: u16 = 16;
const RTM_NEWADDR: u16 = 20;
const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_NEWNEIGH: u16 = 28;
const RTM_DELNEIGH: u16 = 29;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_CREATE: u16 = 0x400;
const NLMSG_ERROR: u16 = 2;
const IFLA_ADDRESS: u16 = 1;
const IFLA_MTU: u16 = 4;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_F_NODAD: u8 = 0x02;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_VIA: u16 = 18;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;
const NUD_PERMANENT: u16 = 0x80;
const RT_TABLE_MAIN: u8 = 254;
const RTPROT_BOOT: u8 = 3;
const RT_SCOPE_NOWHERE: u8 = 255;
const RTN_UNICAST: u8 = 1;
const IFF_UP: u32 = 1;

struct Rtnl {
    fd: OwnedFd,
}

/// A request under construction: header, fixed part, attributes.
struct Message(Vec<u8>);

impl Message {
    fn new(kind: u16, flags: u16, fixed: &[u8]) -> Message {
        let mut b = vec![0u8; 16];
        b[4..6].copy_from_slice(&kind.to_ne_bytes());
        b[6..8].copy_from_slice(&(flags | NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        b[8..12].copy_from_slice(&1u32.to_ne_bytes());
        b.extend_from_slice(fixed);
        Message(b)
    }

    fn attr(mut self, kind: u16, data: &[u8]) -> Message {
        let len = 4 + data.len();
        self.0.extend_from_slice(&(len as u16).to_ne_bytes());
        self.0.extend_from_slice(&kind.to_ne_bytes());
        self.0.extend_from_slice(data);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self
    }

    fn done(mut self) -> Vec<u8> {
        let len = self.0.len() as u32;
        self.0[0..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

fn family(ip: IpAddr) -> u8 {
    if ip.is_ipv4() {
        libc::AF_INET as u8
    } else {
        libc::AF_INET6 as u8
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

impl Rtnl {
    fn open() -> io::Result<Rtnl> {
        // SAFETY: plain socket(2) call.
        let raw = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        Ok(Rtnl { fd: unsafe { OwnedFd::from_raw_fd(raw) } })
    }

    fn request(&self, op: &Op) -> io::Result<()> {
        let message = match *op {
            Op::LinkUp { dev, mac, mtu } => {
                let mut fixed = [0u8; 16];
                fixed[4..8].copy_from_slice(&ifindex(dev)?.to_ne_bytes());
                fixed[8..12].copy_from_slice(&IFF_UP.to_ne_bytes());
                fixed[12..16].copy_from_slice(&IFF_UP.to_ne_bytes());
                let mut m = Message::new(RTM_NEWLINK, 0, &fixed);
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
                Message::new(RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, &fixed).attr(IFA_LOCAL, &a).attr(IFA_ADDRESS, &a)
            }
            Op::NeighReplace { dev, ip, mac } => {
                neigh(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, dev, ip, NUD_PERMANENT)?.attr(NDA_LLADDR, &mac)
            }
            Op::NeighDel { dev, ip } => neigh(RTM_DELNEIGH, 0, dev, ip, 0)?,
            Op::RouteReplace { prefix, via, dev } => {
                let fixed = [family(prefix.addr), prefix.len, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, 0, RTN_UNICAST, 0, 0, 0, 0];
                let m = Message::new(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &fixed).attr(RTA_DST, &octets(prefix.addr));
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
                let fixed = [family(prefix.addr), prefix.len, 0, 0, RT_TABLE_MAIN, 0, RT_SCOPE_NOWHERE, 0, 0, 0, 0, 0];
                Message::new(RTM_DELROUTE, 0, &fixed).attr(RTA_DST, &octets(prefix.addr))
            }
        };
        self.send_and_check(&message.done())
    }

    /// Sends one request and reads the kernel's acknowledgement (an error code, 0 for success).
    fn send_and_check(&self, message: &[u8]) -> io::Result<()> {
        // SAFETY: sends `message` on our own socket (to the kernel: no address needed).
        if unsafe { libc::send(self.fd.as_raw_fd(), message.as_ptr().cast(), message.len(), 0) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: receives into our own buffer.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let n = n as usize;
            if n < 20 {
                return Err(io::Error::other("a short answer from the kernel"));
            }
            if u16::from_ne_bytes([buf[4], buf[5]]) != NLMSG_ERROR {
                continue;
            }
            let code = i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
            return if code == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(-code)) };
        }
    }
}

fn neigh(kind: u16, flags: u16, dev: &str, ip: IpAddr, state: u16) -> io::Result<Message> {
    let mut fixed = [0u8; 12];
    fixed[0] = family(ip);
    fixed[4..8].copy_from_slice(&ifindex(dev)?.to_ne_bytes());
    fixed[8..10].copy_from_slice(&state.to_ne_bytes());
    Ok(Message::new(kind, flags, &fixed).attr(NDA_DST, &octets(ip)))
}
