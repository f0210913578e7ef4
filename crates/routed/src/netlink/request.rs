//! Building the requests routed sends: dumps of links, routes and neighbours.

use super::consts::*;
use super::message::HEADER_LEN;

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
            Dump::Links => (RTM_GETLINK, 16),     // ifinfomsg
            Dump::Routes => (RTM_GETROUTE, 12),   // rtmsg
            Dump::Neighbours => (RTM_GETNEIGH, 12), // ndmsg
        }
    }
}

/// A dump request for both address families (the family header all zero: `AF_UNSPEC`).
pub fn dump_request(what: Dump, seq: u32) -> Vec<u8> {
    let (kind, header) = what.kind_and_header();
    let len = HEADER_LEN + header;
    let mut buf = Vec::with_capacity(len);
    buf.extend_from_slice(&(len as u32).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills in ours
    buf.resize(len, AF_UNSPEC);
    buf
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
}
