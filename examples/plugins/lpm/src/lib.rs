//! An IPv4 router in a plugin: each packet is routed by longest-prefix match in the VR's own
//! table (`route_v4`, which routed keeps in step with the VR's kernel), its TTL decremented
//! (checksum updated incrementally, RFC 1624) and its MACs rewritten. What a router's kernel
//! must answer (ARP, its own addresses, TTL expiry, no route, unresolved neighbours, options)
//! goes to the VR's kernel, which answers as Linux does. The batch's destinations are looked
//! up in one call (`route_v4_batch`), whose table lookups overlap.

use pearl_plugin_sdk::{plugin, route_v4_batch, Batch, Route};

plugin!(262144, process);

const ETHERTYPE_IPV4: u16 = 0x0800;

/// Frames looked up together: a receive batch's worth (a plugin is charged fuel for every
/// byte it initialises, so the arrays stay small).
const CHUNK: usize = 32;

pub fn process(batch: &mut Batch) {
    let mut first = 0;
    while first < batch.len() {
        let n = (batch.len() - first).min(CHUNK);
        let mut dsts = [0u32; CHUNK];
        let mut routes = [Route::None; CHUNK];
        for (k, dst) in dsts[..n].iter_mut().enumerate() {
            *dst = destination(batch.frame(first + k).data()).unwrap_or(0);
        }
        route_v4_batch(&dsts[..n], &mut routes[..n]);
        for k in 0..n {
            let mut frame = batch.frame(first + k);
            // 0.0.0.0 is no destination a router forwards to: it marks what goes to the kernel.
            match routes[k] {
                Route::Via { interface, next_hop, source } if dsts[k] != 0 && interface != frame.interface() => {
                    let f = frame.data_mut();
                    f[..6].copy_from_slice(&next_hop);
                    f[6..12].copy_from_slice(&source);
                    decrement_ttl(&mut f[14..34]);
                    frame.send(interface);
                }
                _ => frame.to_kernel(),
            }
        }
        first += n;
    }
}

/// The destination of an IPv4 packet this router forwards itself: unicast, no options, TTL
/// left to spend.
fn destination(f: &[u8]) -> Option<u32> {
    let routable = f.len() >= 34 && u16::from_be_bytes([f[12], f[13]]) == ETHERTYPE_IPV4 && f[14] == 0x45 && f[22] > 1 && f[0] & 1 == 0;
    routable.then(|| u32::from_be_bytes([f[30], f[31], f[32], f[33]]))
}

/// TTL − 1 and the header checksum adjusted for it (RFC 1624, eqn. 3).
fn decrement_ttl(ip: &mut [u8]) {
    ip[8] -= 1;
    let old = u16::from_be_bytes([ip[10], ip[11]]);
    let sum = u32::from(!old) + u32::from(!0x0100u16);
    let sum = (sum & 0xffff) + (sum >> 16);
    let new = !((sum & 0xffff) + (sum >> 16)) as u16;
    ip[10..12].copy_from_slice(&new.to_be_bytes());
}
