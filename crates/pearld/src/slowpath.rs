//! Starting the slow path: one netio thread per channel, serving the TAPs of the channel's VRs.

use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::TapPort;
use pearl_dataplane::slowpath::{Netio, NetioCounters, NetioInterface, NetioVr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct SlowPath {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// `[vr]`: the channel's counters and the VR's position in them.
    pub counters: Vec<(Arc<Vec<NetioCounters>>, usize)>,
}

impl SlowPath {
    /// Takes the data plane's channels; `taps[vr]` are each VR's TAPs in interface order.
    pub fn start(dataplane: &Dataplane, mut taps: Vec<Vec<TapPort>>) -> std::io::Result<SlowPath> {
        let stop = Arc::new(AtomicBool::new(false));
        let channels = std::mem::take(&mut *dataplane.slow_path.lock().expect("slow-path channels"));
        let mut counters = vec![None; dataplane.config.vrs.len()];
        let mut threads = Vec::new();
        for (c, channel) in channels.into_iter().enumerate() {
            let vrs = channel
                .vrs
                .iter()
                .map(|&v| NetioVr {
                    vr: v,
                    interfaces: std::mem::take(&mut taps[v as usize])
                        .into_iter()
                        .zip(&dataplane.config.vrs[v as usize].interfaces)
                        .map(|(tap, i)| NetioInterface { port: i.port as u16, tap })
                        .collect(),
                })
                .collect();
            let netio = Netio::new(channel.ends, vrs, channel.shared);
            for (k, &v) in channel.vrs.iter().enumerate() {
                counters[v as usize] = Some((Arc::clone(&netio.counters), k));
            }
            let stop = Arc::clone(&stop);
            threads.push(std::thread::Builder::new().name(format!("pearl-netio-{c}")).spawn(move || netio.run(stop))?);
        }
        let counters = counters.into_iter().map(|c| c.expect("every VR has a channel")).collect();
        Ok(SlowPath { stop, threads, counters })
    }

    /// Stops the threads; the TAPs close with them.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}
