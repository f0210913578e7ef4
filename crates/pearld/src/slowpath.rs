//! The slow path's threads: one netio thread per channel, serving the TAPs of the channel's
//! VRs. When a change replaces a channel, its thread hands the TAPs back and they wait here
//! ("parked") for the channel that serves them next.

use pearl_dataplane::dataplane::ChannelChange;
use pearl_dataplane::plan::ChannelId;
use pearl_dataplane::slowpath::{Netio, NetioCounters, NetioInterface, NetioVr};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

#[derive(Default)]
pub struct SlowPath {
    threads: BTreeMap<ChannelId, (Arc<AtomicBool>, JoinHandle<Vec<NetioVr>>)>,
    /// VR id → its TAPs, while no thread serves them.
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

    /// Stops the threads of removed channels and starts those of added ones.
    pub fn apply(&mut self, change: ChannelChange) -> std::io::Result<()> {
        for id in change.removed {
            if let Some((stop, thread)) = self.threads.remove(&id) {
                stop.store(true, Ordering::Relaxed);
                for vr in thread.join().unwrap_or_default() {
                    self.parked.insert(vr.vr, vr.interfaces);
                }
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
                })
                .collect();
            let netio = Netio { ends: channel.ends, vrs, shared: channel.shared };
            let stop = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&stop);
            let thread = std::thread::Builder::new().name(format!("pearl-netio-{}", channel.id)).spawn(move || netio.run(flag))?;
            self.threads.insert(channel.id, (stop, thread));
        }
        Ok(())
    }

    /// Forgets a removed VR: its TAPs close (their devices vanish with them).
    pub fn forget(&mut self, vr: u16) {
        self.parked.remove(&vr);
        self.counters.remove(&vr);
    }

    /// Stops every thread; the TAPs close with them.
    pub fn stop(&mut self) {
        for (_, (stop, _)) in self.threads.iter() {
            stop.store(true, Ordering::Relaxed);
        }
        for (_, (_, thread)) in std::mem::take(&mut self.threads) {
            let _ = thread.join();
        }
        self.parked.clear();
    }
}
