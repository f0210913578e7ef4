//! The slow path: the netio reactor serves the TAPs of every VR on one thread. When a change
//! replaces a channel, the reactor hands its TAPs back and they wait here ("parked") for the
//! channel that serves them next.

use pearl_dataplane::dataplane::{ChannelChange, SlowPathStart};
use pearl_dataplane::slowpath::ChannelId;
use pearl_dataplane::slowpath::{Netio, NetioCounters, NetioInterface, NetioReactor, NetioVr};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Default)]
pub struct SlowPath {
    reactor: Option<NetioReactor>,
    /// The channels the reactor serves.
    served: BTreeSet<ChannelId>,
    /// VR id → its TAPs, while no channel serves them.
    parked: BTreeMap<u16, Vec<NetioInterface>>,
    /// VR id → its counters, for as long as the VR exists.
    pub counters: BTreeMap<u16, Arc<NetioCounters>>,
}

impl SlowPath {
    /// Hands over a new VR's TAPs (in interface order).
    pub fn park(&mut self, vr: u16, interfaces: Vec<NetioInterface>) {
        self.parked.insert(vr, interfaces);
        self.counters.insert(vr, Arc::default());
    }

    /// Starts the reactor with the data plane's first channels.
    pub fn start(&mut self, start: SlowPathStart) -> std::io::Result<()> {
        self.reactor = Some(NetioReactor::start(start.inject)?);
        self.apply(ChannelChange { added: start.channels, ..ChannelChange::default() });
        Ok(())
    }

    /// Stops serving removed channels and serves added ones.
    pub fn apply(&mut self, change: ChannelChange) {
        let Some(reactor) = &self.reactor else { return };
        for id in change.removed {
            self.served.remove(&id);
            for vr in reactor.remove(id) {
                self.parked.insert(vr.vr, vr.interfaces);
            }
        }
        for channel in change.added {
            let vrs = channel
                .vrs
                .iter()
                .map(|&v| NetioVr {
                    vr: v,
                    interfaces: self.parked.remove(&v).unwrap_or_default(),
                    counters: Arc::clone(self.counters.entry(v).or_default()),
                    resolver: Default::default(),
                })
                .collect();
            self.served.insert(channel.id);
            reactor.add(Netio::new(channel.id, channel.ends, vrs, channel.shared));
        }
    }

    /// Forgets a removed VR; returns its TAPs, for the caller to close (their devices vanish
    /// with the last descriptor).
    pub fn forget(&mut self, vr: u16) -> Vec<NetioInterface> {
        self.counters.remove(&vr);
        self.parked.remove(&vr).unwrap_or_default()
    }

    /// Stops the reactor; every VR's TAPs are parked again, for `forget`.
    pub fn stop(&mut self) {
        if let Some(reactor) = self.reactor.take() {
            for id in std::mem::take(&mut self.served) {
                for vr in reactor.remove(id) {
                    self.parked.insert(vr.vr, vr.interfaces);
                }
            }
        }
    }
}
