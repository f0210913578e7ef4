//! Opening a configured port for a worker, by driver, saying on stderr which driver each port
//! runs on (once, for worker 0).
//!
//! A port with no `driver:` receives as its device is best served (pearl-dataplane's
//! `receives_through`): a NIC through AF_XDP, a virtual device (veth, TAP) through a PACKET
//! ring while sending through AF_XDP, as `rx: af_packet`; the stderr line says which and why.
//! `af_xdp` opens an AF_XDP port, bound to the interface's only rx queue. Where it
//! cannot bind (several rx queues, an MTU too large for its chunks, the XDP hook taken, no XDP
//! support) the port runs on AF_PACKET instead, and the stderr line gives the reason. With
//! `rx: af_packet` it receives through a PACKET ring and sends through AF_XDP (`SplitPort`: the
//! cheaper pair on veth). With
//! `workers > 1` every worker opens every port and the kernel spreads frames over their sockets
//! (to the workers the port's VRs run on: see pearl-dataplane's `steering`);
//! AF_XDP would need one rx queue per worker and the NIC's hashing to spread them, so such ports
//! run on AF_PACKET with fanout.

use pearl_control::{Config, ConfigError, Distribution, Driver, PortConfig};
use pearl_dataplane::packet::PacketPool;
use pearl_dataplane::port::{
    device_description, receives_through, AfPacketConfig, AfPacketPort, AfXdpConfig, AfXdpPort, Fanout, PcapPort, Port, SplitPort, TapPort,
    VnetSender, VxlanPort,
};
use std::path::Path;

/// Refuses, before anything is made, ports this daemon cannot open whatever the machine:
/// in-memory ports (tests and benchmarks only), and tap or pcap ports with several workers.
pub fn check(config: &Config) -> Result<(), ConfigError> {
    for (port, p) in config.ports.iter().enumerate() {
        if p.driver == Driver::Memory {
            return Err(memory_refused(port));
        }
        if config.workers > 1 && !matches!(p.driver, Driver::AfXdp | Driver::AfPacket | Driver::Wire | Driver::Vxlan) {
            return Err(ConfigError::at(
                "workers",
                format!("ports[{port}] ({:?}) cannot be shared by several workers; use workers: 1", p.driver),
            ));
        }
    }
    Ok(())
}

/// Refuses, naming `ports[N].interface`, a port of `new` that `running` does not have as it
/// is and whose Linux interface is not on this machine: at start such a port stops pearld, so
/// a change that stored one would leave a state no restart takes.
pub fn check_interfaces(running: &Config, new: &Config) -> Result<(), ConfigError> {
    for (n, p) in new.ports.iter().enumerate() {
        if !matches!(p.driver, Driver::AfXdp | Driver::AfPacket | Driver::Vxlan) || running.ports.contains(p) {
            continue;
        }
        if crate::netconf::ifindex(&p.interface).is_err() {
            return Err(ConfigError::at(format!("ports[{n}].interface"), format!("no interface named {:?} on this machine", p.interface)));
        }
    }
    Ok(())
}

/// Opens worker `worker`'s instance of port `port` (of a configuration `check` passed); an
/// AF_XDP port shares `pool`'s buffers.
pub fn open(config: &Config, port: usize, worker: usize, pool: &mut PacketPool) -> Result<Box<dyn Port>, ConfigError> {
    let p = &config.ports[port];
    let at = |e: std::io::Error| ConfigError::at(format!("ports[{port}]"), e.to_string());
    let say = |driver: String| {
        if worker == 0 {
            tracing::info!("ports[{port}] ({}): {driver}", p.interface);
        }
    };
    // A port that names no driver receives as its device is best served (`receives_through`).
    let rx = receives_through(p);
    let say = |driver: String| match p.by_device {
        true => say(format!("{driver}, chosen for {} (no driver: in the configuration)", device_description(&p.interface))),
        false => say(driver),
    };
    Ok(match p.driver {
        Driver::AfXdp if config.workers == 1 && rx == Driver::AfPacket => {
            match AfXdpPort::transmitter(&p.interface, &AfXdpConfig::default(), pool) {
                Ok(tx) => {
                    let rx = AfPacketPort::receiver(&p.interface, &rx_ring(p)).map_err(at)?;
                    let super_packets = VnetSender::on(&p.interface).map_err(at)?;
                    say(format!("AF_XDP tx ({} mode), AF_PACKET rx", if tx.zero_copy() { "zero-copy" } else { "copy" }));
                    Box::new(SplitPort::new(Box::new(rx), Box::new(tx)).with_super_packets(super_packets))
                }
                Err(e) => {
                    say(format!("AF_PACKET, because AF_XDP did not bind: {e}"));
                    Box::new(af_packet(config, port).map_err(at)?)
                }
            }
        }
        Driver::AfXdp if config.workers == 1 => match AfXdpPort::open(&p.interface, pool) {
            Ok(xdp) => {
                let binding = xdp.binding().expect("a receiving AF_XDP port runs an XDP program");
                say(format!("AF_XDP, {binding}"));
                Box::new(xdp)
            }
            Err(e) => {
                say(format!("AF_PACKET, because AF_XDP did not bind: {e}"));
                Box::new(af_packet(config, port).map_err(at)?)
            }
        },
        Driver::AfXdp => {
            say(format!("AF_PACKET with fanout, because AF_XDP binds one rx queue and {} workers share the port", config.workers));
            Box::new(af_packet(config, port).map_err(at)?)
        }
        Driver::AfPacket => {
            say(if config.workers > 1 { "AF_PACKET with fanout".into() } else { "AF_PACKET".into() });
            Box::new(af_packet(config, port).map_err(at)?)
        }
        Driver::Tap => Box::new(TapPort::open(&p.interface).map_err(at)?),
        Driver::Pcap => Box::new(PcapPort::open(Some(Path::new(&p.interface)), false, None).map_err(at)?),
        Driver::Memory => return Err(memory_refused(port)),
        Driver::Wire => crate::wires::open(config, port, worker)?,
        Driver::Vxlan => {
            let tunnel = p.vxlan.as_ref().expect("a vxlan port has its tunnel");
            say(format!("VXLAN {} to {} port {}", tunnel.vni, tunnel.remote, tunnel.dst_port));
            Box::new(VxlanPort::open(&p.interface, tunnel, worker).map_err(at)?)
        }
    })
}

fn af_packet(config: &Config, port: usize) -> std::io::Result<AfPacketPort> {
    // With several workers each opens the port; the kernel spreads its frames over them as
    // the port's VRs ask (`distribution:`). Fanout groups are per network namespace, hence the
    // process id in the group id.
    let fanout_group = (config.workers > 1).then(|| ((std::process::id() as u16) << 6) ^ port as u16);
    // `flow` and `proportional` frames go to the workers the port's VRs hold slices of, as a
    // program the data plane installs says (`steering`); `round_robin` rotates over them all.
    let fanout = match config.port_distribution(port) {
        Distribution::Flow | Distribution::Proportional => Fanout::Program,
        Distribution::RoundRobin => Fanout::RoundRobin,
    };
    let p = &config.ports[port];
    AfPacketPort::with_config(&p.interface, &AfPacketConfig { fanout_group, fanout, ..rx_ring(p) })
}

/// The AF_PACKET geometry a port's `rx_ring_frames` asks for.
fn rx_ring(p: &PortConfig) -> AfPacketConfig {
    let config = AfPacketConfig::default();
    match p.rx_ring_frames {
        Some(frames) => config.with_rx_frames(frames),
        None => config,
    }
}

fn memory_refused(port: usize) -> ConfigError {
    ConfigError::at(format!("ports[{port}].driver"), "memory ports exist only inside tests and benchmarks")
}

#[cfg(test)]
mod tests {
    use super::check_interfaces;
    use pearl_control::config_from_document;
    use serde_json::json;

    #[test]
    fn a_new_port_whose_interface_is_missing_is_refused_naming_its_interface_and_a_running_one_is_not_checked_again() {
        let port = |name: &str, interface: &str| json!({"name": name, "interface": interface, "driver": "af_packet"});
        let parse = |ports| config_from_document(&json!({"ports": ports, "vrs": []}), std::path::Path::new("/")).unwrap();
        let running = parse(json!([port("p0", "gone0")]));
        let fine = parse(json!([port("p0", "gone0"), port("p1", "lo")]));
        assert_eq!(check_interfaces(&running, &fine), Ok(()), "lo is there; gone0 runs already (its port stops until it is back)");
        let missing = parse(json!([port("p0", "gone0"), port("p1", "lo"), port("p2", "nope9")]));
        let e = check_interfaces(&running, &missing).unwrap_err();
        assert_eq!(e.path, "ports[2].interface");
        assert!(e.to_string().contains("no interface named \"nope9\""), "{e}");
    }
}
