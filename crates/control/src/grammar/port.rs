//! `ports:`: the host interfaces PEARL drives.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A port: a host interface (a NIC, a veth end, a TAP) PEARL sends and receives frames on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    /// The name VR interfaces attach to it by: 1 to 15 letters, digits, '-' or '_'.
    pub name: String,
    /// The host interface it drives; one port per interface (a wire port: the wire port at
    /// its other end).
    pub interface: String,
    /// How PEARL drives the interface. Without it (and without `rx`), as the device is best
    /// served: a NIC through af_xdp, a virtual device (veth, TAP) as af_xdp with rx: af_packet.
    pub driver: Option<DriverSpec>,
    /// How an af_xdp port receives: af_xdp (default once af_xdp is written) or af_packet.
    pub rx: Option<RxSpec>,
    /// The port's rate in Mbit/s, 1 to 10,000,000 (default: as fast as the interface).
    pub rate_mbps: Option<i64>,
    /// Bytes of each frame the classifier may match as `opaque`.
    pub opaque: Option<OpaqueSpec>,
    /// Frames of ordinary length (up to ~1.9 KiB, 2 KiB of memory each) an AF_PACKET receive
    /// ring holds, 1 to 65,536 (ports that receive on AF_PACKET); super-packets have a ring of
    /// their own.
    pub rx_ring_frames: Option<i64>,
    /// The tunnel of a `driver: vxlan` port (required by it, refused on others); its
    /// `interface` is the underlay device the tunnel's UDP leaves and arrives by, which several
    /// vxlan ports may share.
    pub vxlan: Option<VxlanSpec>,
}

/// A VXLAN tunnel (RFC 7348): the port's frames travel to `remote` inside UDP datagrams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VxlanSpec {
    /// The VXLAN network identifier of the link, 1 to 16,777,215.
    pub vni: i64,
    /// The far tunnel end: an IPv4 or IPv6 address.
    pub remote: String,
    /// The source address of the tunnel's datagrams, of the same family as `remote`
    /// (default: the kernel's choice for `remote`).
    pub local: Option<String>,
    /// The UDP port datagrams are sent to and received on, 1 to 65,535 (default 4789, the
    /// IANA port); vxlan ports with the same one share a receive socket.
    pub dst_port: Option<i64>,
}

choice!(
    /// How a port's interface is driven.
    DriverSpec { AfXdp = "af_xdp", AfPacket = "af_packet", Tap = "tap", Pcap = "pcap", Memory = "memory", Wire = "wire", Vxlan = "vxlan" }
);

choice!(
    /// How an af_xdp port receives.
    RxSpec { AfXdp = "af_xdp", AfPacket = "af_packet" }
);

/// Where in a frame the `opaque` field is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpaqueSpec {
    /// Its first byte's offset in the frame, 0 to 9,216.
    pub offset: i64,
    /// Its length in bytes, 1 to 16.
    pub length: i64,
}
