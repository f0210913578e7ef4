//! A kernel route as routed keeps it: what it does with packets, reduced from the netlink
//! message to what decides the fast path's entry.

use core::net::IpAddr;
use pearl_netlink::consts::*;
use pearl_netlink::message::ParseError;
use pearl_netlink::route::RouteMsg;

/// The two tables the kernel's default rules consult, in their order: `local` first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Local,
    Main,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRoute {
    pub table: Table,
    pub tos: u8,
    pub metric: u32,
    pub target: Target,
}

/// What a route does with a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// One of the VR's own addresses (a local route).
    Local,
    /// Left to the kernel on purpose: unreachable, prohibit, blackhole, throw, multicast,
    /// broadcast and anycast routes, and unicast routes whose next hops are all dead. Broadcast
    /// and anycast addresses are delivered by the kernel but are not the VR's own: Linux
    /// forwards a packet from one (its own addresses only are martian sources).
    Kernel,
    /// A route the fast path cannot carry out (it is refused and its traffic goes to the
    /// kernel); says why.
    Unsupported(&'static str),
    One(Hop),
    /// Two or more next hops (equal-cost multipath).
    Multi(Box<[Hop]>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hop {
    pub ifindex: u32,
    pub gateway: Option<IpAddr>,
    pub weight: u16,
}

impl Hop {
    /// The same next hop, whatever its weight.
    pub fn same_place(&self, other: &Hop) -> bool {
        self.ifindex == other.ifindex && self.gateway == other.gateway
    }
}

impl KernelRoute {
    /// The route a message describes, or `None` for what routed does not follow (tables other
    /// than main and local, cached clones).
    pub fn from_msg(m: &RouteMsg<'_>) -> Result<Option<KernelRoute>, ParseError> {
        let table = match m.table {
            RT_TABLE_MAIN => Table::Main,
            RT_TABLE_LOCAL => Table::Local,
            _ => return Ok(None),
        };
        if m.flags & RTM_F_CLONED != 0 {
            return Ok(None);
        }
        let target = match m.kind {
            _ if m.src_len != 0 => Target::Unsupported("source-specific route"),
            _ if m.tos != 0 => Target::Unsupported("TOS-specific route"),
            RTN_LOCAL => Target::Local,
            RTN_BROADCAST | RTN_ANYCAST | RTN_UNREACHABLE | RTN_PROHIBIT | RTN_BLACKHOLE | RTN_THROW | RTN_MULTICAST => Target::Kernel,
            RTN_UNICAST if m.encap => Target::Unsupported("encapsulating route (lwtunnel)"),
            RTN_UNICAST => unicast(m)?,
            _ => Target::Unsupported("route type the fast path does not know (NAT, XRESOLVE)"),
        };
        Ok(Some(KernelRoute { table, tos: m.tos, metric: m.metric, target }))
    }

    /// Whether the route applies to all traffic to its prefix (not only some TOS or source).
    pub fn is_plain(&self) -> bool {
        self.tos == 0 && !matches!(self.target, Target::Unsupported("source-specific route"))
    }

    /// The order in which the kernel prefers routes to one prefix: local table first, then
    /// plain routes, then the lowest metric.
    pub fn rank(&self) -> (Table, bool, u32) {
        (self.table, !self.is_plain(), self.metric)
    }

    pub fn hops(&self) -> &[Hop] {
        match &self.target {
            Target::One(h) => core::slice::from_ref(h),
            Target::Multi(hops) => hops,
            _ => &[],
        }
    }
}

/// A target from the live next hops, in the kernel's order.
pub fn target_of(mut hops: Vec<Hop>) -> Target {
    match hops.len() {
        0 => Target::Kernel,
        1 => Target::One(hops.pop().expect("one hop")),
        _ => Target::Multi(hops.into_boxed_slice()),
    }
}

fn unicast(m: &RouteMsg<'_>) -> Result<Target, ParseError> {
    // Most routes have one next hop: keep it out of the heap.
    let (mut first, mut more, mut any) = (None, Vec::new(), false);
    for p in m.paths() {
        let p = p?;
        any = true;
        // A dead next hop's link is down; the kernel does not use it.
        if p.flags & RTNH_F_DEAD != 0 {
            continue;
        }
        let hop = Hop { ifindex: p.ifindex, gateway: p.gateway, weight: p.weight };
        match first {
            None => first = Some(hop),
            Some(_) => more.push(hop),
        }
    }
    Ok(match (first, any) {
        (_, false) if m.nh_id.is_some() => {
            Target::Unsupported("next-hop object without its next hops (net.ipv4.nexthop_compat_mode is off)")
        }
        (_, false) => Target::Unsupported("unicast route without a next hop"),
        (None, true) => Target::Kernel,
        (Some(h), _) if more.is_empty() => Target::One(h),
        (Some(h), _) => {
            more.insert(0, h);
            Target::Multi(more.into_boxed_slice())
        }
    })
}
