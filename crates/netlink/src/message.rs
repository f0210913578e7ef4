//! Netlink framing: messages in a buffer, attributes in a message, fixed headers. Every read is
//! bounds-checked; a malformed buffer yields a [`ParseError`] naming the part that is wrong.

use core::fmt;

/// `struct nlmsghdr`.
pub const HEADER_LEN: usize = 16;
/// `struct nlattr`.
const ATTR_HEADER_LEN: usize = 4;
/// Attribute type bits; the top two are the nested and byte-order flags.
const ATTR_TYPE_MASK: u16 = 0x3fff;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// `what` needs `need` bytes where only `have` are left.
    Truncated { what: &'static str, need: usize, have: usize },
    /// `what` has a length no valid value has.
    BadLength { what: &'static str, len: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated { what, need, have } => write!(f, "{what}: needs {need} bytes, {have} left"),
            ParseError::BadLength { what, len } => write!(f, "{what}: invalid length {len}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// One netlink message: its header fields and the bytes after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

/// The messages of a datagram, in order.
#[inline]
pub fn messages(buf: &[u8]) -> Messages<'_> {
    Messages { rest: buf }
}

pub struct Messages<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<Message<'a>, ParseError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let buf = self.rest;
        let parsed = (|| {
            let header = bytes(buf, 0, HEADER_LEN, "netlink header")?;
            let len = ne_u32(&header[0..4]) as usize;
            if len < HEADER_LEN {
                return Err(ParseError::BadLength { what: "netlink message", len });
            }
            let body = bytes(buf, 0, len, "netlink message")?;
            let m = Message {
                kind: ne_u16(&header[4..6]),
                flags: ne_u16(&header[6..8]),
                seq: ne_u32(&header[8..12]),
                payload: &body[HEADER_LEN..],
            };
            Ok((m, align4(len).min(buf.len())))
        })();
        match parsed {
            Ok((m, used)) => {
                self.rest = &buf[used..];
                Some(Ok(m))
            }
            Err(e) => {
                // Nothing after a malformed header can be framed: stop here.
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// The attributes (type, value) in `buf`, which starts at an attribute boundary.
#[inline]
pub fn attributes(buf: &[u8]) -> Attributes<'_> {
    Attributes { rest: buf }
}

pub struct Attributes<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Attributes<'a> {
    type Item = Result<(u16, &'a [u8]), ParseError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // Fewer bytes than a header can only be padding.
        if self.rest.len() < ATTR_HEADER_LEN {
            return None;
        }
        let buf = self.rest;
        let len = usize::from(ne_u16(&buf[0..2]));
        if len < ATTR_HEADER_LEN {
            self.rest = &[];
            return Some(Err(ParseError::BadLength { what: "attribute", len }));
        }
        match bytes(buf, 0, len, "attribute") {
            Ok(whole) => {
                self.rest = &buf[align4(len).min(buf.len())..];
                Some(Ok((ne_u16(&buf[2..4]) & ATTR_TYPE_MASK, &whole[ATTR_HEADER_LEN..])))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// The errno an `NLMSG_ERROR` message carries (0 for an acknowledgement).
#[inline]
pub fn error_code(payload: &[u8]) -> Result<i32, ParseError> {
    Ok(-(ne_u32(bytes(payload, 0, 4, "netlink error code")?) as i32))
}

/// `buf[at..at + len]`, or why not.
#[inline]
pub fn bytes<'a>(buf: &'a [u8], at: usize, len: usize, what: &'static str) -> Result<&'a [u8], ParseError> {
    buf.get(at..at + len).ok_or(ParseError::Truncated { what, need: at + len, have: buf.len() })
}

/// A `u32` attribute value.
#[inline]
pub fn attr_u32(value: &[u8], what: &'static str) -> Result<u32, ParseError> {
    match value.len() {
        4 => Ok(ne_u32(value)),
        len => Err(ParseError::BadLength { what, len }),
    }
}

#[inline]
pub fn ne_u16(b: &[u8]) -> u16 {
    u16::from_ne_bytes([b[0], b[1]])
}

#[inline]
pub fn ne_u32(b: &[u8]) -> u32 {
    u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
}

#[inline]
pub fn align4(n: usize) -> usize {
    (n + 3) & !3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_consecutive_messages_and_their_padding() {
        #[rustfmt::skip]
        let buf = [
            // len 20, type 3 (DONE), flags 2 (MULTI), seq 7, pid 0, 4 payload bytes
            20, 0, 0, 0, 3, 0, 2, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            // len 17, type 1: one payload byte, three padding bytes
            17, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0, 0, 0,
        ];
        let got: Vec<_> = messages(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].kind, got[0].flags, got[0].seq, got[0].payload.len()), (3, 2, 7, 4));
        assert_eq!((got[1].kind, got[1].seq, got[1].payload), (1, 8, &[0xaa][..]));
    }

    #[test]
    fn a_message_longer_than_the_buffer_is_refused_by_name() {
        let buf = [40, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let e = messages(&buf).next().unwrap().unwrap_err();
        assert_eq!(e, ParseError::Truncated { what: "netlink message", need: 40, have: 16 });
        assert_eq!(e.to_string(), "netlink message: needs 40 bytes, 16 left");
        let short = [8, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(messages(&short).next().unwrap(), Err(ParseError::BadLength { what: "netlink message", len: 8 }));
    }

    #[test]
    fn attributes_mask_the_flag_bits_and_skip_padding() {
        #[rustfmt::skip]
        let buf = [
            5, 0, 0x03, 0x80, b'x', 0, 0, 0, // nested flag set, 1 byte value, padded
            8, 0, 4, 0, 1, 0, 0, 0,
        ];
        let got: Vec<_> = attributes(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![(3, &b"x"[..]), (4, &[1, 0, 0, 0][..])]);
        assert_eq!(attr_u32(got[1].1, "oif"), Ok(1));
        assert_eq!(attr_u32(got[0].1, "oif"), Err(ParseError::BadLength { what: "oif", len: 1 }));
        let bad = [12, 0, 1, 0, 0, 0, 0, 0];
        assert!(matches!(attributes(&bad).next(), Some(Err(ParseError::Truncated { what: "attribute", .. }))));
    }

    #[test]
    fn error_messages_carry_a_negative_errno() {
        let payload = (-17i32).to_ne_bytes();
        assert_eq!(error_code(&payload), Ok(17));
    }
}
