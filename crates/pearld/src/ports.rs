//! Opening a configured port for a worker, by driver.

use pearl_control::{Config, ConfigError, Driver};
use pearl_dataplane::port::{AfPacketConfig, AfPacketPort, PcapPort, Port, TapPort};
use std::path::Path;

pub fn open(config: &Config, port: usize, worker: usize) -> Result<Box<dyn Port>, ConfigError> {
    let p = &config.ports[port];
    let at = |e: std::io::Error| ConfigError::at(format!("ports[{port}]"), e.to_string());
    let shared = matches!(p.driver, Driver::AfXdp | Driver::AfPacket);
    if worker > 0 && !shared {
        return Err(ConfigError::at(
            "workers",
            format!("ports[{port}] ({:?}) cannot be shared by several workers; use workers: 1", p.driver),
        ));
    }
    Ok(match p.driver {
        Driver::AfXdp | Driver::AfPacket => {
            if p.driver == Driver::AfXdp && worker == 0 {
                eprintln!("pearld: ports[{port}]: AF_XDP is not built yet; driving {} with AF_PACKET", p.interface);
            }
            // With several workers each opens the port; the kernel spreads flows over them.
            // Fanout groups are per network namespace, hence the process id in the group id.
            let fanout_group = (config.workers > 1).then(|| ((std::process::id() as u16) << 6) ^ port as u16);
            let cfg = AfPacketConfig { fanout_group, ..AfPacketConfig::default() };
            Box::new(AfPacketPort::with_config(&p.interface, &cfg).map_err(at)?)
        }
        Driver::Tap => Box::new(TapPort::open(&p.interface).map_err(at)?),
        Driver::Pcap => Box::new(PcapPort::open(Some(Path::new(&p.interface)), false, None).map_err(at)?),
        Driver::Memory => {
            return Err(ConfigError::at(format!("ports[{port}].driver"), "memory ports exist only inside tests and benchmarks"))
        }
    })
}
