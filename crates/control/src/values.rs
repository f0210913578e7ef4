//! Scalar values of the configuration (addresses, prefixes, MACs), each parsed with an error
//! that names the value and what it should look like.

use crate::error::ConfigError;
use crate::model::{IpPrefix, Mac};
use crate::node::Node;
use core::net::IpAddr;

pub(crate) fn ip(n: Node<'_>) -> Result<IpAddr, ConfigError> {
    let s = n.str()?;
    s.parse().map_err(|_| n.err(format!("{s:?} is not an IP address")))
}

fn max_len(a: IpAddr) -> u8 {
    if a.is_ipv4() {
        32
    } else {
        128
    }
}

/// `ADDRESS/LENGTH`, host bits allowed.
pub(crate) fn prefix(n: Node<'_>) -> Result<IpPrefix, ConfigError> {
    let s = n.str()?;
    let bad = |why: &str| n.err(format!("{s:?}: {why}"));
    let (a, l) = s.split_once('/').ok_or_else(|| bad("expected ADDRESS/LENGTH"))?;
    let addr: IpAddr = a.parse().map_err(|_| bad("not an IP address"))?;
    let len: u8 = l.parse().map_err(|_| bad("the length is not a number"))?;
    if len > max_len(addr) {
        return Err(bad("the length exceeds the address width"));
    }
    Ok(IpPrefix { addr, len })
}

pub(crate) fn mac(n: Node<'_>) -> Result<Mac, ConfigError> {
    let s = n.str()?;
    let parts: Vec<&str> = s.split(':').collect();
    let mut m = [0u8; 6];
    if parts.len() != 6 {
        return Err(n.err(format!("{s:?} is not a MAC address (aa:bb:cc:dd:ee:ff)")));
    }
    for (i, p) in parts.iter().enumerate() {
        m[i] = u8::from_str_radix(p, 16)
            .ok()
            .filter(|_| p.len() == 2)
            .ok_or_else(|| n.err(format!("{s:?} is not a MAC address (aa:bb:cc:dd:ee:ff)")))?;
    }
    Ok(m)
}
