//! The VR's routing table, as pearld's `route_v4` import answers it.

use crate::abi::{ROUTE_ANSWER_LEN, ROUTE_LOCAL, ROUTE_UNRESOLVED};
use crate::host::{pearl_route_v4, pearl_route_v4_batch, pearl_route_v6};

/// Where the VR's longest-prefix match sends an address.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Route {
    /// Out of VR interface `interface` to a neighbour whose MAC is `next_hop`; `source` is the
    /// interface's own MAC.
    Via {
        interface: u16,
        next_hop: [u8; 6],
        source: [u8; 6],
    },
    /// On a connected subnet whose neighbour is not resolved yet: hand the frame to the kernel.
    Unresolved,
    /// One of the VR's own addresses.
    Local,
    None,
}

/// The VR's route to IPv4 address `addr`.
pub fn route_v4(addr: u32) -> Route {
    let mut out = [0u8; 12];
    // Safety: pearld writes at most 12 bytes at `out`.
    decode(unsafe { pearl_route_v4(addr as i32, out.as_mut_ptr()) }, &out)
}

/// The VR's routes to each of `addrs` into `out` (as many as both hold), in calls whose table
/// lookups overlap: much faster than `route_v4` address by address.
pub fn route_v4_batch(addrs: &[u32], out: &mut [Route]) {
    // Fuel is charged for every byte a plugin clears: the answers' room is left as it is.
    const CHUNK: usize = 32;
    let mut answers = core::mem::MaybeUninit::<[u8; CHUNK * ROUTE_ANSWER_LEN]>::uninit();
    let n = addrs.len().min(out.len());
    for (addrs, out) in addrs[..n].chunks(CHUNK).zip(out[..n].chunks_mut(CHUNK)) {
        // Safety: pearld reads `addrs.len()` addresses and writes as many answers, which are
        // all that is read back.
        let answers = unsafe {
            pearl_route_v4_batch(addrs.as_ptr(), addrs.len() as i32, answers.as_mut_ptr().cast());
            core::slice::from_raw_parts(answers.as_ptr().cast::<u8>(), addrs.len() * ROUTE_ANSWER_LEN)
        };
        for (o, a) in out.iter_mut().zip(answers.chunks_exact(ROUTE_ANSWER_LEN)) {
            let code = i32::from_le_bytes([a[0], a[1], a[2], a[3]]);
            *o = decode(code, a[4..16].try_into().unwrap_or(&[0; 12]));
        }
    }
}

/// The VR's route to IPv6 address `addr`.
pub fn route_v6(addr: u128) -> Route {
    let (bytes, mut out) = (addr.to_be_bytes(), [0u8; 12]);
    // Safety: pearld reads 16 bytes at `bytes` and writes at most 12 at `out`.
    decode(unsafe { pearl_route_v6(bytes.as_ptr(), out.as_mut_ptr()) }, &out)
}

fn decode(r: i32, out: &[u8; 12]) -> Route {
    match r {
        i if i >= 0 => {
            let (mut next_hop, mut source) = ([0; 6], [0; 6]);
            next_hop.copy_from_slice(&out[..6]);
            source.copy_from_slice(&out[6..]);
            Route::Via { interface: i as u16, next_hop, source }
        }
        ROUTE_UNRESOLVED => Route::Unresolved,
        ROUTE_LOCAL => Route::Local,
        _ => Route::None,
    }
}
