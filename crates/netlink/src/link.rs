//! Link and address messages: routed needs a link's index, name and up flag, and an address
//! message's family.

use crate::consts::*;
use crate::message::{attributes, bytes, ne_u32, ParseError};

/// `struct ifinfomsg`.
const IFINFOMSG_LEN: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkMsg<'a> {
    pub ifindex: u32,
    pub up: bool,
    pub name: Option<&'a str>,
}

impl<'a> LinkMsg<'a> {
    #[inline]
    pub fn parse(payload: &'a [u8]) -> Result<LinkMsg<'a>, ParseError> {
        let h = bytes(payload, 0, IFINFOMSG_LEN, "ifinfomsg")?;
        let mut name = None;
        for a in attributes(&payload[IFINFOMSG_LEN..]) {
            let (kind, value) = a?;
            if kind == IFLA_IFNAME {
                let value = value.split(|&b| b == 0).next().unwrap_or_default();
                name = Some(
                    core::str::from_utf8(value).map_err(|_| ParseError::BadLength { what: "IFLA_IFNAME (not UTF-8)", len: value.len() })?,
                );
            }
        }
        Ok(LinkMsg { ifindex: ne_u32(&h[4..8]), up: ne_u32(&h[8..12]) & IFF_UP != 0, name })
    }
}

/// The family of an address message (`struct ifaddrmsg`).
#[inline]
pub fn address_family(payload: &[u8]) -> Result<u8, ParseError> {
    Ok(bytes(payload, 0, 1, "ifaddrmsg")?[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_with_its_name() {
        #[rustfmt::skip]
        let buf = [
            0, 0, 1, 0, 7, 0, 0, 0, 0x43, 0x10, 1, 0, 0, 0, 0, 0,  // ifindex 7, flags UP|…
            10, 0, 3, 0, b't', b'a', b'p', b'0', 0, 0, 0, 0,       // IFLA_IFNAME "tap0\0"
        ];
        assert_eq!(LinkMsg::parse(&buf), Ok(LinkMsg { ifindex: 7, up: true, name: Some("tap0") }));
        assert!(matches!(LinkMsg::parse(&buf[..10]), Err(ParseError::Truncated { what: "ifinfomsg", .. })));
        assert_eq!(address_family(&[10, 64, 0, 0]), Ok(AF_INET6));
    }
}
