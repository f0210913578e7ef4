//! A running PEARL node: the VRs' namespaces, the data plane, and the slow path between them.
//! Built whole or not at all; taken down in the reverse order.

use crate::slowpath::SlowPath;
use crate::vmm::VrSpace;
use crate::ports;
use pearl_control::Config;
use pearl_dataplane::dataplane::Dataplane;

pub struct Node {
    pub dataplane: Dataplane,
    pub slow_path: SlowPath,
    spaces: Vec<VrSpace>,
}

impl Node {
    pub fn start(config: &Config) -> Result<Node, String> {
        let mut spaces = Vec::new();
        let mut taps = Vec::new();
        for vr in &config.vrs {
            match VrSpace::create(vr) {
                Ok((space, t)) => {
                    spaces.push(space);
                    taps.push(t);
                }
                Err(e) => {
                    drop(taps);
                    spaces.into_iter().for_each(VrSpace::remove);
                    return Err(e);
                }
            }
        }
        let dataplane = match Dataplane::start(config, |p, w| ports::open(config, p, w)) {
            Ok(d) => d,
            Err(e) => {
                drop(taps);
                spaces.into_iter().for_each(VrSpace::remove);
                return Err(e.to_string());
            }
        };
        let slow_path = match SlowPath::start(&dataplane, taps) {
            Ok(s) => s,
            Err(e) => {
                dataplane.stop();
                spaces.into_iter().for_each(VrSpace::remove);
                return Err(format!("starting the slow path: {e}"));
            }
        };
        Ok(Node { dataplane, slow_path, spaces })
    }

    pub fn stop(self) {
        self.slow_path.stop();
        self.dataplane.stop();
        self.spaces.into_iter().for_each(VrSpace::remove);
    }
}
