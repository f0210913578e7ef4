//! Link and address messages: routed needs a link's index, name and up flag, and an address
//! message's family; pearld whether an XDP program is attached to a link.

use crate::consts::*;
use crate::message::{attr_u32, attributes, bytes, ne_u32, ParseError};

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

/// An XDP program attached to a link (`IFLA_XDP`), with its id when the kernel names one (one
/// program attached, or the first of the per-mode ids when several are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachedXdp {
    pub prog_id: Option<u32>,
}

/// The XDP program a link message reports attached, if any.
pub fn attached_xdp(payload: &[u8]) -> Result<Option<AttachedXdp>, ParseError> {
    bytes(payload, 0, IFINFOMSG_LEN, "ifinfomsg")?;
    for a in attributes(&payload[IFINFOMSG_LEN..]) {
        let (kind, value) = a?;
        if kind != IFLA_XDP {
            continue;
        }
        let (mut attached, mut single, mut per_mode) = (XDP_ATTACHED_NONE, None, None);
        for x in attributes(value) {
            let (kind, value) = x?;
            match kind {
                IFLA_XDP_ATTACHED => attached = *value.first().ok_or(ParseError::BadLength { what: "IFLA_XDP_ATTACHED", len: 0 })?,
                IFLA_XDP_PROG_ID => single = Some(attr_u32(value, "IFLA_XDP_PROG_ID")?),
                IFLA_XDP_DRV_PROG_ID | IFLA_XDP_SKB_PROG_ID | IFLA_XDP_HW_PROG_ID if per_mode.is_none() => {
                    per_mode = Some(attr_u32(value, "IFLA_XDP_*_PROG_ID")?)
                }
                _ => {}
            }
        }
        return Ok((attached != XDP_ATTACHED_NONE).then_some(AttachedXdp { prog_id: single.or(per_mode) }));
    }
    Ok(None)
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
        assert_eq!(attached_xdp(&buf), Ok(None), "no IFLA_XDP: nothing attached");
    }

    #[test]
    fn an_attached_xdp_program_and_its_id() {
        #[rustfmt::skip]
        let xdp = |attached: u8| vec![
            0, 0, 1, 0, 7, 0, 0, 0, 0x43, 0x10, 1, 0, 0, 0, 0, 0,
            20, 0, 43, 0x80,                                         // IFLA_XDP, nested
            5, 0, 2, 0, attached, 0, 0, 0,                           // IFLA_XDP_ATTACHED
            8, 0, 4, 0, 42, 0, 0, 0,                                 // IFLA_XDP_PROG_ID 42
        ];
        assert_eq!(attached_xdp(&xdp(1)), Ok(Some(AttachedXdp { prog_id: Some(42) })));
        assert_eq!(attached_xdp(&xdp(XDP_ATTACHED_NONE)), Ok(None));
        let mut truncated = xdp(1);
        truncated[28] = 7; // IFLA_XDP_PROG_ID with a 3-byte value
        assert!(attached_xdp(&truncated).is_err());
    }
}
