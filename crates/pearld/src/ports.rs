//! Opening a configured port for a worker, by driver.

use pearl_control::{Config, ConfigError, Driver};
use pearl_dataplane::port::{AfPacketPort, PcapPort, Port, TapPort};
use std::path::Path;

pub fn open(config: &Config, port: usize, worker: usize) -> Result<Box<dyn Port>, ConfigError> {
    let p = &config.ports[port];
    let at = |e: std::io::Error| ConfigError::at(format!("ports[{port}]"), e.to_string());
    if worker > 0 && p.driver != Driver::Memory {
        return Err(ConfigError::at(
            "workers",
            format!("ports[{port}] ({:?}) cannot be shared by several workers yet; use workers: 1", p.driver),
        ));
    }
    Ok(match p.driver {
        Driver::AfXdp | Driver::AfPacket => {
            if p.driver == Driver::AfXdp {
                eprintln!("pearld: ports[{port}]: AF_XDP is not built yet; driving {} with AF_PACKET", p.interface);
            }
            Box::new(AfPacketPort::open(&p.interface).map_err(at)?)
        }
        Driver::Tap => Box::new(TapPort::open(&p.interface).map_err(at)?),
        Driver::Pcap => Box::new(PcapPort::open(Some(Path::new(&p.interface)), false, None).map_err(at)?),
        Driver::Memory => {
            return Err(ConfigError::at(format!("ports[{port}].driver"), "memory ports exist only inside tests and benchmarks"))
        }
    })
}
