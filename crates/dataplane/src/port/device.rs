//! How a port that names no driver receives, by what its device is. AF_XDP's receive path pays
//! where XDP runs in the NIC's driver on its own buffers; on a virtual device it costs more
//! than it saves: XDP on a veth turns its peer's TSO and GSO off (the kernel's
//! `veth_fix_features`), so a host's TCP leaves in MTU-sized segments instead of super-packets
//! (one stream through a fast VR ran at 0.09× the kernel router), and only a port that
//! receives through a PACKET socket can hand flows to the kernel (`offload`). A virtual device
//! (veth, TAP, bridge, anything without a bus device under it) therefore receives through
//! PACKET rings and sends through AF_XDP (`SplitPort`), a NIC through AF_XDP alone.

use pearl_control::{Driver, PortConfig};

/// How `port` receives: as written, or, for a port that names no driver, by its device.
pub fn receives_through(port: &PortConfig) -> Driver {
    if !port.by_device {
        return port.rx;
    }
    match device_of(&port.interface) {
        Device::Nic(_) => Driver::AfXdp,
        Device::Virtual => Driver::AfPacket,
        Device::Unknown => port.rx,
    }
}

/// What `receives_through` saw, for the log line that says why.
pub fn device_description(interface: &str) -> String {
    match device_of(interface) {
        Device::Nic(driver) => format!("a NIC ({driver})"),
        Device::Virtual => "a virtual device".into(),
        Device::Unknown => "a device pearld cannot look at".into(),
    }
}

enum Device {
    /// With the name of its driver.
    Nic(String),
    Virtual,
    Unknown,
}

fn device_of(interface: &str) -> Device {
    let class = std::path::Path::new("/sys/class/net").join(interface);
    if !class.exists() {
        return Device::Unknown;
    }
    match std::fs::read_link(class.join("device/driver")) {
        Ok(driver) => Device::Nic(driver.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_owned()),
        Err(_) if class.join("device").exists() => Device::Nic("?".into()),
        Err(_) => Device::Virtual,
    }
}
