//! A change request (a link set up, an address, route or neighbour replaced or deleted): the
//! family's fixed header and its attributes, sent with [`crate::socket::NlSocket::change`],
//! which waits for the kernel's acknowledgement.

use crate::consts::NLM_F_ACK;
use crate::request::request;

/// `struct nlattr`.
const ATTR_HEADER_LEN: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    kind: u16,
    flags: u16,
    body: Vec<u8>,
}

impl Change {
    /// A request of message type `kind` (`RTM_NEW*`, `RTM_DEL*`) with `NLM_F_*` `flags`, its
    /// body starting with the family header `fixed` (`ifinfomsg`, `ifaddrmsg`, `rtmsg`, `ndmsg`).
    pub fn new(kind: u16, flags: u16, fixed: &[u8]) -> Change {
        Change { kind, flags, body: fixed.to_vec() }
    }

    /// Appends attribute `kind` holding `value`, padded to the 4-byte boundary the next needs.
    pub fn attr(mut self, kind: u16, value: &[u8]) -> Change {
        let len = ATTR_HEADER_LEN + value.len();
        self.body.extend_from_slice(&(len as u16).to_ne_bytes());
        self.body.extend_from_slice(&kind.to_ne_bytes());
        self.body.extend_from_slice(value);
        self.body.resize(self.body.len().next_multiple_of(4), 0);
        self
    }

    /// The datagram, asking for an acknowledgement so a refusal comes back as an errno.
    pub fn encode(&self, seq: u32) -> Vec<u8> {
        request(self.kind, self.flags | NLM_F_ACK, seq, &self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts::*;
    use crate::message::{attributes, messages};

    #[test]
    fn a_neighbour_change_frames_and_pads_its_attributes() {
        let fixed = [AF_INET, 0, 0, 0, 3, 0, 0, 0, 0x80, 0, 0, 0];
        let c = Change::new(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &fixed)
            .attr(NDA_DST, &[10, 0, 0, 2])
            .attr(NDA_LLADDR, &[2, 0, 0, 0, 0, 7]);
        let bytes = c.encode(5);
        let m = messages(&bytes).next().unwrap().unwrap();
        assert_eq!((m.kind, m.flags, m.seq), (RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, 5));
        assert_eq!(&m.payload[..12], &fixed);
        let attrs: Vec<_> = attributes(&m.payload[12..]).collect::<Result<_, _>>().unwrap();
        assert_eq!(attrs, vec![(NDA_DST, &[10, 0, 0, 2][..]), (NDA_LLADDR, &[2, 0, 0, 0, 0, 7][..])]);
        assert_eq!(bytes.len(), 16 + 12 + 8 + 12, "the 6-byte MAC is padded to 8");
    }
}
