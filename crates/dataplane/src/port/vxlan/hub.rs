//! The receive socket the vxlan ports of one worker share when they share a device, family,
//! local address and destination port, and the demultiplexing of its datagrams by (VNI, outer
//! source address) into each port's queue. A port's `rx_batch` drains the socket for all of
//! them, once per batch; the hub's lock is taken once per batch and only by one worker's ports
//! (hubs are per worker), so it is never contended.

use super::socket::{self, RawAddr};
use crate::packet::{Packet, PacketPool};
use crate::port::TunnelRefused as Refused;
use pearl_wire::vxlan::{self, VxlanPacket};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Datagrams taken from the socket per call.
pub const BATCH: usize = 64;
/// Frames a port's queue holds for it between its calls; beyond, they are dropped.
const QUEUE: usize = 4 * BATCH;

/// What identifies a hub.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HubKey {
    pub device: String,
    pub local: IpAddr,
    pub dst_port: u16,
    pub worker: usize,
}

pub struct Hub {
    pub key: HubKey,
    socket: OwnedFd,
    /// Send sockets, on distinct UDP source ports.
    pub senders: Vec<OwnedFd>,
    demux: Mutex<Demux>,
}

struct Demux {
    /// (VNI, outer source) → slot.
    tunnels: HashMap<(u32, IpAddr), usize>,
    /// By slot: frames waiting for the port; `None` for a slot free again.
    queues: Vec<Option<VecDeque<Packet>>>,
    refused: Vec<Refused>,
    names: Vec<libc::sockaddr_in6>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    taken: Vec<Packet>,
}

// SAFETY: the raw pointers in `iovs` and `hdrs` are scratch, rewritten before each use.
unsafe impl Send for Demux {}

fn hubs() -> &'static Mutex<HashMap<HubKey, Weak<Hub>>> {
    static HUBS: OnceLock<Mutex<HashMap<HubKey, Weak<Hub>>>> = OnceLock::new();
    HUBS.get_or_init(Default::default)
}

impl Hub {
    /// Joins (or opens) the hub of `key` as the port of tunnel (`vni`, `remote`); returns the
    /// hub and the port's slot in it.
    pub fn join(key: HubKey, vni: u32, remote: IpAddr) -> io::Result<(Arc<Hub>, usize)> {
        let mut all = hubs().lock().unwrap_or_else(|e| e.into_inner());
        let hub = match all.get(&key).and_then(Weak::upgrade) {
            Some(hub) => hub,
            None => {
                let socket = socket::receiver(&key.device, key.local, key.dst_port)?;
                let senders = socket::senders(&key.device, key.local)?;
                let hub = Arc::new(Hub { key: key.clone(), socket, senders, demux: Mutex::new(Demux::new()) });
                all.insert(key, Arc::downgrade(&hub));
                hub
            }
        };
        let mut d = hub.demux.lock().unwrap_or_else(|e| e.into_inner());
        if d.tunnels.contains_key(&(vni, remote)) {
            return Err(io::Error::new(io::ErrorKind::AddrInUse, format!("another port has the tunnel of VNI {vni} from {remote}")));
        }
        let slot = d.queues.iter().position(Option::is_none).unwrap_or(d.queues.len());
        if slot == d.queues.len() {
            d.queues.push(None);
            d.refused.push(Refused::default());
        }
        d.queues[slot] = Some(VecDeque::with_capacity(QUEUE));
        d.refused[slot] = Refused::default();
        d.tunnels.insert((vni, remote), slot);
        drop(d);
        Ok((hub, slot))
    }

    /// The port of `slot` leaves; the frames waiting for it are dropped.
    pub fn leave(&self, slot: usize) {
        let mut d = self.demux.lock().unwrap_or_else(|e| e.into_inner());
        d.tunnels.retain(|_, s| *s != slot);
        d.queues[slot] = None;
    }

    pub fn rx_fd(&self) -> i32 {
        self.socket.as_raw_fd()
    }

    pub fn refused(&self, slot: usize) -> Refused {
        self.demux.lock().unwrap_or_else(|e| e.into_inner()).refused[slot]
    }

    /// Up to `max` frames of the port of `slot` into `out`: first those waiting for it, then
    /// from the socket, queueing the other ports' and dropping (and counting) what is no
    /// port's.
    pub fn receive(&self, slot: usize, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let mut d = self.demux.lock().unwrap_or_else(|e| e.into_inner());
        let d = &mut *d;
        let mut n = 0;
        if let Some(q) = d.queues[slot].as_mut() {
            while n < max {
                let Some(p) = q.pop_front() else { break };
                out.push(p);
                n += 1;
            }
        }
        if n == max {
            return Ok(n);
        }
        while d.taken.len() < BATCH {
            let Some(p) = pool.take() else { break };
            d.taken.push(p);
        }
        let want = d.taken.len();
        if want == 0 {
            return Ok(n);
        }
        for (i, p) in d.taken.iter_mut().enumerate() {
            let b = p.buffer_mut();
            d.iovs[i] = libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.len() };
            d.hdrs[i].msg_hdr.msg_name = (&mut d.names[i] as *mut libc::sockaddr_in6).cast();
            d.hdrs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as u32;
            d.hdrs[i].msg_hdr.msg_iov = &mut d.iovs[i];
            d.hdrs[i].msg_hdr.msg_iovlen = 1;
            d.hdrs[i].msg_len = 0;
        }
        // SAFETY: `want` headers point at buffers and names that live until the call returns.
        let got =
            unsafe { libc::recvmmsg(self.socket.as_raw_fd(), d.hdrs.as_mut_ptr(), want as u32, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if got < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(n) } else { Err(e) };
        }
        let got = got as usize;
        // The first `got` buffers hold datagrams; the rest stay taken for the next call.
        let rest = d.taken.split_off(got);
        let received = std::mem::replace(&mut d.taken, rest);
        for (i, mut p) in received.into_iter().enumerate() {
            let len = d.hdrs[i].msg_len as usize;
            let truncated = d.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let header = VxlanPacket::new_checked(&p.buffer_mut()[..len]);
            let vni = match header {
                Ok(h) if !truncated && len >= vxlan::HEADER_LEN + 14 => h.vni(),
                _ => {
                    d.refused[slot].malformed += 1;
                    pool.give(p);
                    continue;
                }
            };
            let to = RawAddr::ip(&d.names[i]).and_then(|src| d.tunnels.get(&(vni, src)).copied());
            p.set_bounds(vxlan::HEADER_LEN, len - vxlan::HEADER_LEN);
            match to {
                Some(s) if s == slot && n < max => {
                    out.push(p);
                    n += 1;
                }
                Some(s) => match d.queues[s].as_mut() {
                    Some(q) if q.len() < QUEUE => q.push_back(p),
                    _ => {
                        d.refused[s].overflowed += 1;
                        pool.give(p);
                    }
                },
                None => {
                    d.refused[slot].unknown_vni += 1;
                    pool.give(p);
                }
            }
        }
        Ok(n)
    }
}

impl Demux {
    fn new() -> Demux {
        Demux {
            tunnels: HashMap::new(),
            queues: Vec::new(),
            refused: Vec::new(),
            // SAFETY: plain data; all zeroes is valid.
            names: vec![unsafe { std::mem::zeroed() }; BATCH],
            iovs: vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH],
            // SAFETY: as above.
            hdrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            taken: Vec::with_capacity(BATCH),
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let mut all = hubs().lock().unwrap_or_else(|e| e.into_inner());
        if all.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
            all.remove(&self.key);
        }
    }
}
