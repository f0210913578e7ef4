//! A route's destination: an address and a prefix length, validated on construction.

use super::addr::AddrBits;
use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix<A> {
    addr: A,
    len: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrefixError {
    /// The length exceeds the address width.
    LengthTooLong { len: u32, max: u32 },
    /// Bits beyond the prefix length are set (`10.0.0.1/24`): ambiguous, so refused.
    HostBitsSet { text: String },
    /// Not `ADDRESS/LENGTH` of the expected family.
    Syntax { text: String, why: &'static str },
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixError::LengthTooLong { len, max } => {
                write!(f, "prefix length {len} exceeds the address width {max}")
            }
            PrefixError::HostBitsSet { text } => {
                write!(f, "prefix {text} has bits set beyond its length")
            }
            PrefixError::Syntax { text, why } => write!(f, "prefix {text:?}: {why}"),
        }
    }
}

impl std::error::Error for PrefixError {}

impl<A: AddrBits> Prefix<A> {
    /// A prefix whose host bits are zero.
    pub fn new(addr: A, len: u32) -> Result<Prefix<A>, PrefixError> {
        if len > A::WIDTH {
            return Err(PrefixError::LengthTooLong { len, max: A::WIDTH });
        }
        if addr.network(len) != addr {
            return Err(PrefixError::HostBitsSet { text: format!("{addr:?}/{len}") });
        }
        Ok(Prefix { addr, len: len as u8 })
    }

    /// The prefix of length `len` containing `addr` (host bits cleared).
    pub fn containing(addr: A, len: u32) -> Prefix<A> {
        let len = len.min(A::WIDTH);
        Prefix { addr: addr.network(len), len: len as u8 }
    }

    pub fn addr(&self) -> A {
        self.addr
    }

    #[expect(clippy::len_without_is_empty, reason = "the prefix length, not a size: no prefix is empty")]
    pub fn len(&self) -> u32 {
        u32::from(self.len)
    }

    /// The last address inside the prefix.
    pub fn last(&self) -> A {
        self.addr.last(self.len())
    }
}

fn split(text: &str) -> Result<(&str, u32), PrefixError> {
    let syntax = |why| PrefixError::Syntax { text: text.to_string(), why };
    let (a, l) = text.trim().split_once('/').ok_or_else(|| syntax("missing /LENGTH"))?;
    let len = l.parse().map_err(|_| syntax("length is not a number"))?;
    Ok((a, len))
}

impl FromStr for Prefix<u32> {
    type Err = PrefixError;
    fn from_str(text: &str) -> Result<Self, PrefixError> {
        let (a, len) = split(text)?;
        let addr: Ipv4Addr = a.parse().map_err(|_| PrefixError::Syntax { text: text.to_string(), why: "not an IPv4 address" })?;
        Prefix::new(u32::from(addr), len).map_err(|e| with_text(e, text))
    }
}

impl FromStr for Prefix<u128> {
    type Err = PrefixError;
    fn from_str(text: &str) -> Result<Self, PrefixError> {
        let (a, len) = split(text)?;
        let addr: Ipv6Addr = a.parse().map_err(|_| PrefixError::Syntax { text: text.to_string(), why: "not an IPv6 address" })?;
        Prefix::new(u128::from(addr), len).map_err(|e| with_text(e, text))
    }
}

fn with_text(e: PrefixError, text: &str) -> PrefixError {
    match e {
        PrefixError::HostBitsSet { .. } => PrefixError::HostBitsSet { text: text.trim().to_string() },
        other => other,
    }
}

impl fmt::Display for Prefix<u32> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.len)
    }
}

impl fmt::Display for Prefix<u128> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv6Addr::from(self.addr), self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_with_the_reason() {
        let p: Prefix<u32> = "10.1.0.0/16".parse().unwrap();
        assert_eq!((p.addr(), p.len(), p.last()), (0x0a01_0000, 16, 0x0a01_ffff));
        assert_eq!(p.to_string(), "10.1.0.0/16");
        let q: Prefix<u128> = "2001:db8::/32".parse().unwrap();
        assert_eq!(q.to_string(), "2001:db8::/32");
        let e = "10.0.0.1/24".parse::<Prefix<u32>>().unwrap_err();
        assert_eq!(e.to_string(), "prefix 10.0.0.1/24 has bits set beyond its length");
        assert!(matches!("10.0.0.0/33".parse::<Prefix<u32>>(), Err(PrefixError::LengthTooLong { .. })));
        assert!(matches!("2001:db8::/24".parse::<Prefix<u32>>(), Err(PrefixError::Syntax { .. })));
        assert!(matches!("10.0.0.0".parse::<Prefix<u32>>(), Err(PrefixError::Syntax { .. })));
        assert_eq!(Prefix::containing(0x0a01_0203u32, 8).to_string(), "10.0.0.0/8");
    }
}
