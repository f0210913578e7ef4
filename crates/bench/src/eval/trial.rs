//! One trial: a load offered for a fixed time by the e2e generator through one peer, every frame
//! counted. The peers share `pearl-bench e2e`'s veth topology and generator (one VR):
//! - `pearl-fast`: a pearld fast-path VR on the router CPU, its ports as pearld drives a veth
//!   best (receiving on a PACKET ring, sending through AF_XDP);
//! - `kernel`: the router namespace's own kernel, forwarding (ip_forward);
//! - `rig`: no router at all, the generator straight into a counter: the router namespace's i1
//!   counts the frames and its kernel discards them at once (addressed to another MAC, and not
//!   forwarding), the same cheapest drop as the sink's. Its result is the rig's own limit, what
//!   the generator and veth can carry: no router can be measured above it.
//!
//! Counting over the generator's whole run (not a window inside it) leaves nothing in flight
//! unaccounted: the sink is read before the generator starts and again once it has stopped and
//! the last frames had time to arrive. Frames a full tx ring refused count as lost (the rig lost
//! them), and so do the frames of a schedule the generator fell behind (a load nobody offered
//! must not count as forwarded).

use crate::e2e::{frames, pearld_config, pearld_in_mac, DRAIN, FCS};
use crate::generator::{Generator, Lane};
use crate::netns::{kernel_in_mac, Family, SinkCounters, Topology};
use crate::pearld_process::Pearld;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A schedule the generator kept within this share is taken as offered in full.
const SCHEDULE_SLACK: f64 = 0.01;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Peer {
    Rig,
    Kernel,
    PearlFast,
}

impl Peer {
    pub const ALL: [Peer; 3] = [Peer::PearlFast, Peer::Kernel, Peer::Rig];

    pub fn name(self) -> &'static str {
        match self {
            Peer::Rig => "rig",
            Peer::Kernel => "kernel",
            Peer::PearlFast => "pearl-fast",
        }
    }
}

/// The topology and the counters every trial reads.
pub struct Bed {
    topology: Topology,
    sink: SinkCounters,
    /// The router namespace's counters: the rig's frames end there.
    router: SinkCounters,
    pearld: std::path::PathBuf,
    prefix: String,
    gen_cpu: usize,
    router_cpu: usize,
}

/// A peer ready to forward frames of one size: pearld running, or the kernel forwarding.
pub struct Serving {
    peer: Peer,
    frames: Vec<Vec<u8>>,
    daemon: Option<Pearld>,
}

/// A trial's counts, as the report keeps them.
pub struct Record {
    pub load: f64,
    pub seconds: f64,
    pub offered: u64,
    pub accepted: u64,
    pub received: u64,
    pub lost: u64,
    /// /proc/loadavg's 1-minute figure when the trial ended: the machine's foreign load.
    pub loadavg: f64,
}

impl Record {
    pub fn loss_ratio(&self) -> f64 {
        if self.offered == 0 {
            1.0
        } else {
            self.lost as f64 / self.offered as f64
        }
    }

    pub fn json(&self) -> Value {
        json!({
            "load_pps": self.load, "seconds": crate::report::round3(self.seconds), "offered": self.offered,
            "accepted": self.accepted, "received": self.received, "lost": self.lost, "loadavg": self.loadavg,
        })
    }
}

const FAMILY: Family = Family::V4;

impl Bed {
    pub fn build(pearld: &Path, gen_cpu: usize, router_cpu: usize) -> Result<Bed, String> {
        let prefix = format!("ev{}", std::process::id());
        let topology = Topology::build(&prefix, 1, FAMILY)?;
        let sink = SinkCounters::open(&topology.sink)?;
        let router = SinkCounters::open(&topology.rtr)?;
        Ok(Bed { topology, sink, router, pearld: pearld.to_path_buf(), prefix, gen_cpu, router_cpu })
    }

    pub fn serve(&self, peer: Peer, size: usize) -> Result<Serving, String> {
        self.topology.kernel_forwarding(peer == Peer::Kernel)?;
        let daemon = match peer {
            Peer::PearlFast => {
                let config = pearld_config(FAMILY, 1, "af_xdp", "af_packet", "fast", &self.prefix, Path::new("."));
                Some(Pearld::start(&self.pearld, &self.topology.rtr, &config, "af_xdp", self.router_cpu, &self.prefix)?)
            }
            Peer::Kernel | Peer::Rig => None,
        };
        let mac = match peer {
            Peer::Kernel => kernel_in_mac(1),
            // Not i1's own MAC: the rig's frames are discarded right after i1 counted them.
            Peer::PearlFast | Peer::Rig => pearld_in_mac(1, "fast"),
        };
        Ok(Serving { peer, frames: frames(FAMILY, 1, mac, size - FCS), daemon })
    }

    pub fn trial(&mut self, serving: &Serving, load: f64, seconds: f64) -> Result<Record, String> {
        let count = |bed: &mut Bed| match serving.peer {
            Peer::Rig => bed.router.rx_packets_on("i", 1),
            Peer::Kernel | Peer::PearlFast => bed.sink.rx_packets(1),
        };
        let before = count(self)?;
        let lanes = vec![Lane { ifname: "g1".into(), frames: serving.frames.clone() }];
        let generator = Generator::start(&self.topology.gen, lanes, self.gen_cpu, Some(load))?;
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let totals = generator.stop()?;
        std::thread::sleep(DRAIN);
        let received = count(self)? - before;
        let scheduled = (load * totals.seconds) as u64;
        let offered = if (totals.offered as f64) < scheduled as f64 * (1.0 - SCHEDULE_SLACK) { scheduled } else { totals.offered };
        Ok(Record {
            load,
            seconds: totals.seconds,
            offered,
            accepted: totals.accepted,
            received,
            lost: offered.saturating_sub(received),
            loadavg: loadavg(),
        })
    }
}

impl Serving {
    /// Stops pearld (an error if it died meanwhile).
    pub fn finish(self) -> Result<(), String> {
        match self.daemon {
            Some(d) => d.stop(),
            None => Ok(()),
        }
    }
}

fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|t| t.split_whitespace().next()?.parse().ok()).unwrap_or(f64::NAN)
}
