//! `/v1/vrs/{name}/fib`: a fast-path VR's FIB as the workers read it, whatever put the routes
//! there (the configuration, or routed mirroring the VR's kernel: FRR, BIRD, `ip route`), and
//! the longest-prefix answer they give for an address. A page holds the tables' lock for one
//! bounded page (`Fib::page`), so reading a full table never stalls routed for long.

use crate::api_error::ApiError;
use crate::ctx::Ctx;
use crate::http::Response;
use crate::models::fib::{FibLookup, FibNextHop, FibPage, FibRoute};
use crate::router::Call;
use core::fmt::Display;
use core::str::FromStr;
use pearl_control::{mac_text, Config, IpPrefix, VrConfig};
use pearl_lookup::fib::{AddrBits, Fib, Prefix, PrefixError};
use pearl_tables::nexthop::{Adjacency, NextHop, NextHopTable};
use pearl_tables::VrTables;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Routes a page holds unless the query asks for fewer.
const PAGE: usize = 1000;

pub fn page(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let (config, vr, tables) = tables_of(ctx, call)?;
    let text = |n: &str| call.param(n).as_str().map(str::to_string);
    let (prefix, after) = (text("prefix"), text("after"));
    let v6 = match text("family").as_deref() {
        Some(f) => f == "v6",
        None => prefix.as_deref().or(after.as_deref()).is_some_and(|p| p.contains(':')),
    };
    let limit = call.param("limit").as_u64().map_or(PAGE, |l| l as usize);
    let tables = tables.lock().unwrap_or_else(|e| e.into_inner());
    let describe = Describe { config: &config, vr: &vr, next_hops: tables.next_hops() };
    let page = match v6 {
        false => family_page(&describe, tables.fib4(), prefix, after, limit)?,
        true => family_page(&describe, &tables.fib6, prefix, after, limit)?,
    };
    drop(tables);
    let (total, routes, next) = page;
    Ok(Response::json(200, &FibPage { vr: vr.name.clone(), family: if v6 { "v6" } else { "v4" }.into(), total, routes, next }))
}

pub fn lookup(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let (config, vr, tables) = tables_of(ctx, call)?;
    let text = call.param("address").as_str().ok_or_else(|| ApiError::bad_request("address", "give ?address=ADDRESS to look up"))?;
    let address: IpAddr = text.parse().map_err(|_| ApiError::bad_request("address", format!("{text:?} is not an IPv4 or IPv6 address")))?;
    let tables = tables.lock().unwrap_or_else(|e| e.into_inner());
    let describe = Describe { config: &config, vr: &vr, next_hops: tables.next_hops() };
    let route = tables.lookup(address).map(|nh| match address {
        IpAddr::V4(a) => {
            let p = longest(tables.fib4(), u32::from(a), nh);
            describe.route(p.to_string(), nh)
        }
        IpAddr::V6(a) => {
            let p = longest(&tables.fib6, u128::from(a), nh);
            describe.route(p.to_string(), nh)
        }
    });
    Ok(Response::json(200, &FibLookup { vr: vr.name.clone(), address: address.to_string(), route }))
}

/// The route behind the workers' answer `nh` for `address` in the tables of VR `vr` (a packet
/// trace's route stage), as the FIB view shows it; `None` for a VR without fast-path tables.
pub fn route_of(node: &crate::node::Node, config: &Config, vr: &VrConfig, address: IpAddr, nh: u32) -> Option<FibRoute> {
    let tables = node.dataplane.layout().tables.get(&vr.id).cloned()?;
    let tables = tables.lock().unwrap_or_else(|e| e.into_inner());
    let describe = Describe { config, vr, next_hops: tables.next_hops() };
    let prefix = match address {
        IpAddr::V4(a) => longest(tables.fib4(), u32::from(a), nh).to_string(),
        IpAddr::V6(a) => longest(&tables.fib6, u128::from(a), nh).to_string(),
    };
    Some(describe.route(prefix, nh))
}

/// The prefix the workers' answer `nh` for `addr` came from: the longest route holding
/// `addr`, looked up by length in the writer's copy (at most 129 exact lookups).
fn longest<A: AddrBits>(fib: &Fib<A>, addr: A, nh: u32) -> Prefix<A> {
    (0..=A::WIDTH).rev().map(|len| Prefix::containing(addr, len)).find(|p| fib.get(*p) == Some(nh)).unwrap_or(Prefix::containing(addr, 0))
}

type FamilyPage = (usize, Vec<FibRoute>, Option<String>);

fn family_page<A: AddrBits>(
    describe: &Describe,
    fib: &Fib<A>,
    prefix: Option<String>,
    after: Option<String>,
    limit: usize,
) -> Result<FamilyPage, ApiError>
where
    Prefix<A>: Display + FromStr<Err = PrefixError>,
{
    let parse = |field: &str, text: Option<String>| -> Result<Option<Prefix<A>>, ApiError> {
        text.map(|t| t.parse::<Prefix<A>>().map_err(|e| ApiError::bad_request(field, format!("{t:?}: {e}")))).transpose()
    };
    let (within, after) = (parse("prefix", prefix)?, parse("after", after)?);
    let page = fib.page(after, within, limit);
    let next = (page.len() == limit).then(|| page.last().map(|(p, _)| p.to_string())).flatten();
    let routes = page.into_iter().map(|(p, nh)| describe.route(p.to_string(), nh)).collect();
    Ok((fib.len(), routes, next))
}

/// The configuration's form of a prefix the FIB printed, to compare with its routes.
fn prefix_of(text: &str) -> Option<IpPrefix> {
    let (a, l) = text.split_once('/')?;
    Some(IpPrefix { addr: a.parse().ok()?, len: l.parse().ok()? })
}

/// Names what the tables hold by index (ports, next-hop ids) as the configuration calls them.
struct Describe<'a> {
    config: &'a Config,
    vr: &'a VrConfig,
    next_hops: &'a NextHopTable,
}

impl Describe<'_> {
    fn route(&self, text: String, nh: u32) -> FibRoute {
        let prefix = prefix_of(&text);
        let ids: Vec<u32> = match self.next_hops.get(nh) {
            Some(&NextHop::Group { first, len }) => self.next_hops.members(first, len).to_vec(),
            _ => vec![nh],
        };
        let next_hops: Vec<FibNextHop> = ids.iter().map(|&id| self.next_hop(self.next_hops.get(id))).collect();
        FibRoute { prefix: text, origin: self.origin(prefix, &next_hops).into(), next_hops }
    }

    fn origin(&self, prefix: Option<IpPrefix>, next_hops: &[FibNextHop]) -> &'static str {
        let Some(p) = prefix else { return "kernel" };
        if next_hops.iter().any(|n| n.kind == "local") {
            "local"
        } else if self.vr.interfaces.iter().flat_map(|i| &i.addresses).any(|a| a.network() == p) {
            "connected"
        } else if self.vr.routes.iter().any(|r| r.prefix == p) {
            "static"
        } else {
            "kernel"
        }
    }

    fn next_hop(&self, entry: Option<&NextHop>) -> FibNextHop {
        let on = |port: u16| {
            let interface = self.vr.interfaces.iter().find(|i| i.port == usize::from(port)).map(|i| i.name.clone());
            (interface, self.config.ports.get(usize::from(port)).map(|p| p.name.clone()))
        };
        let hop = |kind: &str, resolved, (interface, port), mac| FibNextHop { kind: kind.into(), resolved, interface, port, mac };
        match entry {
            Some(NextHop::One(Adjacency::Forward { port, dst, .. })) => hop("forward", true, on(*port), Some(mac_text(*dst))),
            Some(NextHop::One(Adjacency::Glean { port })) => hop("glean", false, on(*port), None),
            Some(NextHop::One(Adjacency::Local)) => hop("local", true, (None, None), None),
            Some(NextHop::Group { .. } | NextHop::Kernel) | None => hop("kernel", false, (None, None), None),
        }
    }
}

type Tables = (Arc<Config>, Arc<VrConfig>, Arc<Mutex<VrTables>>);

fn tables_of(ctx: &Ctx, call: &Call) -> Result<Tables, ApiError> {
    let name = call.param("name").as_str().unwrap_or_default();
    let (config, vr) = ctx.node.vr_named(name).ok_or_else(|| ApiError::not_found("name", format!("no VR named {name:?}")))?;
    let tables = ctx.node.dataplane.layout().tables.get(&vr.id).cloned().ok_or_else(|| {
        ApiError::not_found("name", format!("VR {name:?} is a {} VR: it has no fast-path FIB (its kernel forwards)", vr.kind.name()))
    })?;
    Ok((config, vr, tables))
}
