//! Addresses, prefixes and MACs of the configuration, each parsed with an error that names the
//! field and says what it should look like.

use crate::at::At;
use crate::error::ConfigError;
use crate::model::{IpPrefix, Mac};
use core::net::IpAddr;

pub(crate) fn ip(s: &str, at: At<'_>) -> Result<IpAddr, ConfigError> {
    s.parse().map_err(|_| at.err(format!("{s:?} is not an IP address")))
}

fn max_len(a: IpAddr) -> u8 {
    if a.is_ipv4() {
        32
    } else {
        128
    }
}

/// `ADDRESS/LENGTH`, host bits allowed.
pub(crate) fn prefix(s: &str, at: At<'_>) -> Result<IpPrefix, ConfigError> {
    let bad = |why: &str| at.err(format!("{s:?}: {why}"));
    let (a, l) = s.split_once('/').ok_or_else(|| bad("expected ADDRESS/LENGTH"))?;
    let addr: IpAddr = a.parse().map_err(|_| bad("not an IP address"))?;
    let len: u8 = l.parse().map_err(|_| bad("the length is not a number"))?;
    if len > max_len(addr) {
        return Err(bad("the length exceeds the address width"));
    }
    Ok(IpPrefix { addr, len })
}

/// A prefix with no bits set beyond its length (a route's destination, a leaked prefix).
pub(crate) fn network(s: &str, at: At<'_>) -> Result<IpPrefix, ConfigError> {
    let p = prefix(s, at)?;
    if p.network() != p {
        return Err(at.err(format!("{p} has bits set beyond its length (did you mean {}?)", p.network())));
    }
    Ok(p)
}

pub(crate) fn mac(s: &str, at: At<'_>) -> Result<Mac, ConfigError> {
    let bad = || at.err(format!("{s:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"));
    let parts: Vec<&str> = s.split(':').collect();
    let mut m = [0u8; 6];
    if parts.len() != 6 {
        return Err(bad());
    }
    for (i, p) in parts.iter().enumerate() {
        m[i] = u8::from_str_radix(p, 16).ok().filter(|_| p.len() == 2).ok_or_else(bad)?;
    }
    Ok(m)
}
