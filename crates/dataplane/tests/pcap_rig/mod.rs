//! A data plane between two pcap files, for tests that check the bytes it emits without root:
//! port 0 reads the frames written into `in`, port 1 writes what leaves into `out`. The files
//! are the test's (named by its tag and process) and go when the rig does.

use pearl_control::Config;
use pearl_dataplane::dataplane::{Dataplane, SlowPathStart};
use pearl_dataplane::packet::PacketPool;
use pearl_dataplane::port::{PcapPort, Port};
use pearl_dataplane::program::VrProgram;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

pub struct PcapRig {
    input: PathBuf,
    output: PathBuf,
}

impl PcapRig {
    /// Writes `frames` into the input file.
    pub fn new(tag: &str, frames: &[Vec<u8>]) -> PcapRig {
        let dir = std::env::temp_dir();
        let path = |n: &str| dir.join(format!("pearl-{tag}-{}-{n}.pcap", std::process::id()));
        let rig = PcapRig { input: path("in"), output: path("out") };
        let mut w = PcapPort::writer(&rig.input).unwrap();
        let mut pool = PacketPool::new(frames.len());
        let mut batch: Vec<_> = frames
            .iter()
            .map(|f| {
                let mut p = pool.take_for(f.len()).unwrap();
                p.fill(f);
                p
            })
            .collect();
        w.tx_batch(&mut batch, &mut pool).unwrap();
        rig
    }

    /// Starts the data plane on the two files, with `programs` attached; the slow-path ends
    /// are the caller's to keep while it runs.
    pub fn start(&self, config: &Config, programs: HashMap<u16, Arc<dyn VrProgram>>) -> (Dataplane, SlowPathStart) {
        Dataplane::start_programmed(config, programs, |p, _, _| -> Result<Box<dyn Port>, _> {
            Ok(Box::new(
                if p == 0 { PcapPort::open(Some(&self.input), false, None) } else { PcapPort::open(None, false, Some(&self.output)) }
                    .unwrap(),
            ))
        })
        .unwrap()
    }

    /// The frames written to the output file, in order.
    pub fn emitted(&self) -> Vec<Vec<u8>> {
        let mut out = PcapPort::reader(&self.output, false).unwrap();
        let mut pool = PacketPool::new(64);
        let mut batch = Vec::new();
        out.rx_batch(&mut pool, &mut batch, 64).unwrap();
        batch.iter().map(|p| p.data().to_vec()).collect()
    }
}

impl Drop for PcapRig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.input);
        let _ = std::fs::remove_file(&self.output);
    }
}
