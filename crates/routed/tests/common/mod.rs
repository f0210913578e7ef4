//! A VR namespace for tests: TAP interfaces with MACs and addresses, the VR's tables, routed,
//! and lookups as a worker does them. Namespaces are named `rtd<pid><tag>` and deleted
//! however the test ends.

#![allow(dead_code, reason = "each test file uses its own part")]

mod tap;

use pearl_lookup::rcu::{RcuDomain, RcuReader};
use pearl_routed::{Options, Routed, RoutedInterface};
use pearl_tables::nexthop::{Adjacency, NextHop};
use pearl_tables::VrTables;
use pearl_wire::{Field, FlowKey};
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tap::open_tap;

pub const MACS: [[u8; 6]; 3] = [[2, 0, 0, 0, 1, 0], [2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 1, 2]];

pub fn ip(args: &str) -> Result<(), String> {
    let out = Command::new("ip").args(args.split_whitespace()).output().map_err(|e| format!("ip {args}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {args}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

pub fn must(args: &str) {
    ip(args).unwrap_or_else(|e| panic!("{e}"));
}

/// What a lookup found: nothing, "to the kernel", or an adjacency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Miss,
    Kernel,
    Adj(Adjacency),
}

pub struct Vr {
    pub name: String,
    pub domain: Arc<RcuDomain>,
    pub tables: Arc<Mutex<VrTables>>,
    pub routed: Option<Routed>,
    reader: RcuReader,
    // Declared last: the TAPs close (and vanish) before the namespace goes.
    _taps: Vec<OwnedFd>,
}

impl Vr {
    /// A namespace with TAPs `t0`, `t1`… (up, with MACS[i], `10.i.0.1/24` and `2001:db8:i::1/64`)
    /// and empty tables.
    pub fn new(tag: &str, taps: usize) -> Vr {
        let name = format!("rtd{}{tag}", std::process::id());
        let _ = ip(&format!("netns del {name}"));
        must(&format!("netns add {name}"));
        let guard = NetnsGuard(name.clone());
        must(&format!("-n {name} link set lo up"));
        let mut ports = Vec::new();
        for (i, m) in MACS.iter().enumerate().take(taps) {
            let t = format!("t{i}");
            ports.push(open_tap(&name, &t).unwrap());
            let mac = format!("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
            // No link-local address: its routes would appear seconds later and race the tests.
            must(&format!("-n {name} link set {t} address {mac} addrgenmode none"));
            must(&format!("-n {name} link set {t} up"));
            must(&format!("-n {name} addr add 10.{i}.0.1/24 dev {t}"));
            must(&format!("-n {name} addr add 2001:db8:{i}::1/64 dev {t} nodad"));
        }
        std::mem::forget(guard);
        let domain = RcuDomain::new();
        let tables = Arc::new(Mutex::new(VrTables::empty(&domain, 1 << 21)));
        let reader = domain.register();
        Vr { name, domain, tables, routed: None, reader, _taps: ports }
    }

    pub fn interfaces(&self, n: usize) -> Vec<RoutedInterface> {
        (0..n).map(|i| RoutedInterface { name: format!("t{i}"), port: i as u16, mac: MACS[i] }).collect()
    }

    pub fn start(&mut self, interfaces: usize) -> &Routed {
        self.start_with(interfaces, Options::default())
    }

    pub fn start_with(&mut self, interfaces: usize, options: Options) -> &Routed {
        let r = Routed::start_with(&self.name, self.interfaces(interfaces), Arc::clone(&self.tables), options).unwrap();
        self.routed.insert(r)
    }

    pub fn routed(&self) -> &Routed {
        self.routed.as_ref().expect("started")
    }

    /// `ip -n VR ARGS`.
    pub fn ip(&self, args: &str) {
        must(&format!("-n {} {args}", self.name));
    }

    /// What the fast path does with a packet of flow (`dst`, source port `sport`).
    pub fn lookup_flow(&mut self, dst: &str, sport: u16) -> Found {
        let dst: IpAddr = dst.parse().unwrap();
        let key = FlowKey::default()
            .with(Field::IpDst, pearl_wire::flow_key::ip_to_u128(dst))
            .with(Field::IpProto, 17)
            .with(Field::L4Src, u128::from(sport))
            .with(Field::L4Dst, 53);
        let (fib4, fib6, adjacencies) = {
            let t = self.tables.lock().unwrap();
            (t.fib4().view(), t.fib6.view(), Arc::clone(&t.adjacencies))
        };
        let g = self.reader.read();
        let nh = match dst {
            IpAddr::V4(a) => fib4.lookup(&g, u32::from(a)),
            IpAddr::V6(a) => fib6.lookup(&g, u128::from(a)),
        };
        let Some(nh) = nh else { return Found::Miss };
        let table = adjacencies.load(&g);
        match table.resolve(nh, &key) {
            Some(a) => Found::Adj(*a),
            None if table.get(nh) == Some(&NextHop::Kernel) => Found::Kernel,
            None => panic!("{dst}: next hop {nh} resolves to nothing: {:?}", table.get(nh)),
        }
    }

    pub fn lookup(&mut self, dst: &str) -> Found {
        self.lookup_flow(dst, 1000)
    }

    /// Waits up to 5 s for `dst` to resolve to `want`.
    pub fn expect(&mut self, dst: &str, want: Found) {
        self.expect_with(dst, |got| got == want);
    }

    /// Waits up to 5 s for what `dst` resolves to to pass `ok`.
    pub fn expect_with(&mut self, dst: &str, ok: impl Fn(Found) -> bool) {
        let start = Instant::now();
        loop {
            let got = self.lookup(dst);
            if ok(got) {
                return;
            }
            if start.elapsed() > Duration::from_secs(5) {
                panic!("{dst}: the fast path still has {got:?} (stats {:?})", self.routed.as_ref().map(Routed::stats));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits until the mirror has seen nothing new for 300 ms: the kernel adds some routes of
    /// a fresh link (IPv6 multicast, prefix routes) a moment after the link comes up.
    pub fn settle(&self) -> pearl_routed::RoutedStats {
        let mut last = self.routed().stats();
        let mut quiet = Instant::now();
        while quiet.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.routed().stats();
            if now.events != last.events {
                (last, quiet) = (now, Instant::now());
            }
        }
        last
    }

    /// Waits up to `secs` for `cond` on the stats.
    pub fn wait_stats(&self, secs: u64, cond: impl Fn(&pearl_routed::RoutedStats) -> bool) -> pearl_routed::RoutedStats {
        let start = Instant::now();
        loop {
            let s = self.routed().stats();
            if cond(&s) {
                return s;
            }
            assert!(start.elapsed() < Duration::from_secs(secs), "stats never got there: {s:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Vr {
    fn drop(&mut self) {
        drop(self.routed.take());
        let _ = ip(&format!("netns del {}", self.name));
    }
}

/// Deletes the namespace if setting it up fails half way.
struct NetnsGuard(String);

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        let _ = ip(&format!("netns del {}", self.0));
    }
}

pub fn forward(port: u16, dst: [u8; 6]) -> Found {
    Found::Adj(Adjacency::Forward { port, src: MACS[port as usize], dst })
}

pub fn glean(port: u16) -> Found {
    Found::Adj(Adjacency::Glean { port })
}

pub const LOCAL: Found = Found::Adj(Adjacency::Local);
