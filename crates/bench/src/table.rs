//! Loading a route table file (gzip or plain, one prefix per line) and drawing lookup addresses
//! from it the way DPDK's FIB test does: a prefix, then random host bits.

use flate2::read::MultiGzDecoder;
use pearl_lookup::fib::{read_prefix_list, AddrBits, Prefix, PrefixList};
use rand::rngs::SmallRng;
use rand::Rng;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};

pub fn load(path: &str) -> Result<PrefixList, String> {
    let file = File::open(path).map_err(|e| format!("--table {path}: {e}"))?;
    let mut reader = BufReader::new(file);
    let gz = reader.fill_buf().map_err(|e| format!("--table {path}: {e}"))?.starts_with(&[0x1f, 0x8b]);
    let input: Box<dyn Read> = if gz { Box::new(MultiGzDecoder::new(reader)) } else { Box::new(reader) };
    read_prefix_list(BufReader::new(input)).map_err(|e| format!("--table {path}: {e}"))
}

/// A next hop for a prefix, spread over 256 ids like routes spread over a router's neighbours.
pub fn next_hop_of<A: AddrBits>(p: &Prefix<A>) -> u32 {
    let mut h = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(p, &mut h);
    (std::hash::Hasher::finish(&h) % 256) as u32
}

/// How lookup addresses pick their prefix.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// A prefix chosen uniformly at random for each address.
    Uniform,
    /// Prefixes in table order, round robin (what `dpdk-test-fib` does without `-t`): neighbouring
    /// lookups hit neighbouring entries, so caches help.
    Cyclic,
}

impl std::str::FromStr for Order {
    type Err = String;
    fn from_str(s: &str) -> Result<Order, String> {
        match s {
            "uniform" => Ok(Order::Uniform),
            "cyclic" => Ok(Order::Cyclic),
            _ => Err(format!("--order: expected uniform or cyclic, got {s:?}")),
        }
    }
}

/// What the benchmarks need of an address family beyond the FIB's own arithmetic.
pub trait BenchAddr: AddrBits {
    const FAMILY: &'static str;
    fn random_host(p: &Prefix<Self>, rng: &mut SmallRng) -> Self;
    fn text(self) -> String;
}

impl BenchAddr for u32 {
    const FAMILY: &'static str = "v4";
    fn random_host(p: &Prefix<u32>, rng: &mut SmallRng) -> u32 {
        p.addr() | (rng.gen::<u32>() & (p.last() ^ p.addr()))
    }
    fn text(self) -> String {
        std::net::Ipv4Addr::from(self).to_string()
    }
}

impl BenchAddr for u128 {
    const FAMILY: &'static str = "v6";
    fn random_host(p: &Prefix<u128>, rng: &mut SmallRng) -> u128 {
        p.addr() | (rng.gen::<u128>() & (p.last() ^ p.addr()))
    }
    fn text(self) -> String {
        std::net::Ipv6Addr::from(self).to_string()
    }
}

pub fn addresses<A: BenchAddr>(prefixes: &[Prefix<A>], n: usize, order: Order, rng: &mut SmallRng) -> Vec<A> {
    (0..n)
        .map(|i| {
            let p = match order {
                Order::Uniform => &prefixes[rng.gen_range(0..prefixes.len())],
                Order::Cyclic => &prefixes[i % prefixes.len()],
            };
            A::random_host(p, rng)
        })
        .collect()
}
