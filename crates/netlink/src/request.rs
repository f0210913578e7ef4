//! Building the requests routed sends: dumps of links, routes and neighbours; namespace ids.
//! The changes pearld sends are built in [`crate::change`].

use crate::consts::*;
use crate::message::HEADER_LEN;

/// What to dump, with the size of the family header the kernel expects after `nlmsghdr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dump {
    Links,
    Routes,
    Neighbours,
}

impl Dump {
    fn kind_and_header(self) -> (u16, usize) {
        match self {
            Dump::Links => (RTM_GETLINK, 16),       // ifinfomsg
            Dump::Routes => (RTM_GETROUTE, 12),     // rtmsg
            Dump::Neighbours => (RTM_GETNEIGH, 12), // ndmsg
        }
    }
}

/// A dump request for both address families (the family header all zero: `AF_UNSPEC`).
pub fn dump_request(what: Dump, seq: u32) -> Vec<u8> {
    let (kind, header) = what.kind_and_header();
    request(kind, NLM_F_DUMP, seq, &vec![AF_UNSPEC; header])
}

/// A request for the one link whose index is `ifindex` (`RTM_GETLINK`, answered by one
/// `RTM_NEWLINK`).
pub fn link_request(ifindex: u32, seq: u32) -> Vec<u8> {
    let mut ifinfomsg = [0u8; 16];
    ifinfomsg[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    request(RTM_GETLINK, 0, seq, &ifinfomsg)
}

/// A namespace-id request (`RTM_GETNSID` or `RTM_NEWNSID`) about the namespace open as `fd`,
/// with `nsid` when asking for one (`-1`: any free id).
pub fn nsid_request(kind: u16, flags: u16, seq: u32, fd: u32, nsid: Option<i32>) -> Vec<u8> {
    let mut body = vec![AF_UNSPEC, 0, 0, 0]; // struct rtgenmsg, padded
    push_attr(&mut body, NETNSA_FD, &fd.to_ne_bytes());
    if let Some(id) = nsid {
        push_attr(&mut body, NETNSA_NSID, &id.to_ne_bytes());
    }
    request(kind, flags, seq, &body)
}

pub(crate) fn request(kind: u16, flags: u16, seq: u32, body: &[u8]) -> Vec<u8> {
    let len = HEADER_LEN + body.len();
    let mut buf = Vec::with_capacity(len);
    buf.extend_from_slice(&(len as u32).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills in ours
    buf.extend_from_slice(body);
    buf
}

/// Appends a 4-byte-value attribute (every attribute these requests carry is one).
fn push_attr(body: &mut Vec<u8>, kind: u16, value: &[u8; 4]) {
    body.extend_from_slice(&8u16.to_ne_bytes());
    body.extend_from_slice(&kind.to_ne_bytes());
    body.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_dump_request() {
        #[rustfmt::skip]
        let want = [
            28, 0, 0, 0, 26, 0, 0x01, 0x03, 9, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(dump_request(Dump::Routes, 9), want);
        assert_eq!(dump_request(Dump::Links, 1).len(), 32);
    }

    #[test]
    fn a_namespace_id_request() {
        #[rustfmt::skip]
        let want = [
            36, 0, 0, 0, 88, 0, 0x05, 0, 2, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0,
            8, 0, 3, 0, 7, 0, 0, 0,
            8, 0, 1, 0, 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(nsid_request(RTM_NEWNSID, NLM_F_ACK, 2, 7, Some(-1)), want);
        assert_eq!(nsid_request(RTM_GETNSID, 0, 1, 7, None).len(), 28);
    }
}
