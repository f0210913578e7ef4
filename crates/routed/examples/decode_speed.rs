//! How long routed takes to decode and apply one route message of a dump, over a synthetic
//! million-route IPv4 table (200 routes a datagram, as the kernel packs a dump): the figure to
//! compare when the netlink codec changes, since a full BGP table is read at every start and
//! resync. Best of 7 passes; run it alternating with the build it is compared with.
//!
//!   cargo run --release -p pearl-routed --example decode_speed

use pearl_netlink::consts::*;
use std::time::Instant;

const ROUTES_PER_DATAGRAM: u32 = 200;
const DATAGRAMS: u32 = 5000;

/// The dump's `RTM_NEWROUTE` for the `i`-th /24, via one of eight gateways on ifindex 3.
fn route(i: u32) -> Vec<u8> {
    // struct rtmsg: AF_INET, /24, main table, protocol 4 (static), universe scope, unicast.
    let mut body = vec![AF_INET, 24, 0, 0, RT_TABLE_MAIN as u8, 4, 0, RTN_UNICAST, 0, 0, 0, 0];
    let mut attr = |kind: u16, v: &[u8]| {
        body.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
        body.extend_from_slice(&kind.to_ne_bytes());
        body.extend_from_slice(v);
    };
    attr(RTA_TABLE, &RT_TABLE_MAIN.to_ne_bytes());
    attr(RTA_DST, &(i << 8).to_be_bytes());
    attr(RTA_PRIORITY, &20u32.to_ne_bytes());
    attr(RTA_GATEWAY, &[10, 0, 0, 1 + (i % 8) as u8]);
    attr(RTA_OIF, &3u32.to_ne_bytes());
    let mut m = Vec::new();
    m.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    m.extend_from_slice(&RTM_NEWROUTE.to_ne_bytes());
    m.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
    m.extend_from_slice(&1u32.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&body);
    m
}

fn main() {
    let datagrams: Vec<Vec<u8>> =
        (0..DATAGRAMS).map(|d| (0..ROUTES_PER_DATAGRAM).flat_map(|j| route(d * ROUTES_PER_DATAGRAM + j)).collect()).collect();
    let total = (DATAGRAMS * ROUTES_PER_DATAGRAM) as usize;
    let mut best = f64::MAX;
    for _ in 0..7 {
        let t = Instant::now();
        let applied: usize = datagrams.iter().map(|d| pearl_routed::fuzzing::apply_netlink_datagram(d, true)).sum();
        assert_eq!(applied, total, "every route message decodes");
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / total as f64);
    }
    println!("best of 7: {best:.1} ns per route message (decode + apply, {total} routes)");
}
