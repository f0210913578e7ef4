//! Ports: where frames enter and leave the data plane. Every driver moves whole batches.

mod af_packet;
mod af_xdp;
mod device;
pub mod link;
mod memory;
mod mtu;
mod packet_rx;
mod packet_socket;
mod pcap;
pub mod pcap_file;
mod rx_class;
mod split;
pub mod steering;
mod tap;
pub mod tx_offload;
mod vnet_tx;
mod vxlan;
mod wire;

pub use af_packet::{AfPacketConfig, AfPacketCounters, AfPacketPort, Fanout};
pub use af_xdp::{AfXdpBinding, AfXdpConfig, AfXdpCounters, AfXdpPort, XdpMode};
pub use device::{device_description, receives_through};
pub use memory::{MemoryCounters, MemoryPort};
pub use mtu::{interface_mtu, port_mtu, DEFAULT_MTU};
pub use pcap::{PcapCounters, PcapPort};
pub use rx_class::RxClass;
pub use split::SplitPort;
pub use tap::{Adoption, TapCounters, TapPort};
pub use vnet_tx::VnetSender;
pub use vxlan::{flow_hash as vxlan_flow_hash, VxlanPort};
pub use wire::{wire, WireEnd, WireState};

use crate::packet::{Packet, PacketPool};
use std::io;
use std::os::fd::BorrowedFd;
use steering::Insn;

/// What a port's device does with checksum offload and GSO super-packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// rx: frames may arrive with a partial L4 checksum that the port cannot mark (AF_XDP
    /// carries no offload metadata), so the pipeline must recognise them itself.
    pub rx_unmarked_partial: bool,
    /// tx: takes frames whose L4 checksum is partial (`Offload::needs_csum`): the kernel or
    /// the NIC finishes it.
    pub tx_csum: bool,
    /// tx: takes GSO super-packets and has them cut by the kernel or the NIC.
    pub tx_gso: bool,
}

/// Datagrams a tunnel port refused before the pipeline saw them, in total since it opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TunnelRefused {
    /// Short, or a VXLAN header without the I flag.
    pub malformed: u64,
    /// Of a (VNI, outer source) no port has.
    pub unknown_vni: u64,
    /// For a port whose queue was full (a port sharing its socket drained them).
    pub overflowed: u64,
}

/// A batch frame source and sink.
pub trait Port: Send {
    /// Receives up to `max` frames into buffers taken from `pool`, appending them to `out`;
    /// returns how many arrived. Never blocks.
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize>;

    /// Sends the frames of `batch` (draining it) and returns their buffers to `pool`; returns
    /// how many were handed to the device. Frames it could not send are dropped and counted by
    /// the caller as the difference.
    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize>;

    /// A file descriptor that becomes readable when frames wait, for workers that sleep when
    /// idle; `None` for ports that are polled only.
    fn rx_fd(&self) -> Option<i32> {
        None
    }

    /// Whether frames reach this port only from its own worker's sends (a wire, both of whose
    /// ends one worker holds). A worker never sleeps after a round that sent anything, so it
    /// polls such a port before it could sleep, and needs no descriptor to be woken for it.
    fn fed_by_its_worker(&self) -> bool {
        false
    }

    /// Whether the kernel hands this port frames one by one (AF_XDP in copy mode, AF_PACKET
    /// rings), so that a worker polling it gains from letting a few accumulate instead of
    /// spinning on each (see `coalesce`).
    fn trickles(&self) -> bool {
        false
    }

    /// What the device does with offload state. By default nothing: frames handed to
    /// `tx_batch` must be complete (the worker finishes checksums and cuts super-packets in
    /// software first), and received frames are complete or marked in `Packet::offload`.
    fn offloads(&self) -> Offloads {
        Offloads::default()
    }

    /// Frames the driver lost before the pipeline saw them, in total since the port opened:
    /// the kernel's ring was full, no buffer was free, or the frame could not be taken in.
    /// May cost a syscall, so the worker asks seldom, never per batch.
    fn rx_dropped(&mut self) -> u64 {
        0
    }

    /// What a tunnel port refused (`TunnelRefused`); nothing for other ports. Asked as seldom
    /// as `rx_dropped`.
    fn tunnel_refused(&self) -> TunnelRefused {
        TunnelRefused::default()
    }

    /// The packet sockets the port receives through, with the frames each takes (flow offload
    /// puts its filter there, to keep offloaded flows' frames out of the rings).
    fn rx_sockets(&self) -> Vec<(BorrowedFd<'_>, RxClass)> {
        Vec::new()
    }

    /// Installs `program` as the one that spreads the port's frames over the workers' sockets
    /// (see `steering`); for ports several workers share through a programmable fanout group.
    fn steer(&mut self, _program: &[Insn]) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "this port is not shared through a programmable fanout group"))
    }
}
