//! Zero-copy packet views for the PEARL data plane, in the style of smoltcp's `wire` module.
//!
//! Each protocol is a `Packet<T: AsRef<[u8]>>` view over a buffer with a `field` module of byte
//! ranges; `new_checked` validates once so accessors never read out of bounds; mutation happens in
//! place when `T: AsMut<[u8]>`. `Repr` types parse a checked view into plain fields and emit them
//! back. [`extract()`] is the hot-path entry point: frame in, classification key and offsets out.
//!
//! ## In detail
//!
//! One file per protocol (`ethernet`, `vlan`, `arp`, `ipv4`, `ipv6`, `ipv6_ext`, `icmpv4`,
//! `icmpv6`, `udp`, `tcp`, `vxlan`), each a zero-copy `Packet<T: AsRef<[u8]>>` view with a `field` module of
//! byte ranges, `new_checked` that validates once, setters on `AsMut` buffers and a `Repr` for
//! parse/emit. `extract(frame, in_port)` walks Ethernet (up to two VLAN tags) and IPv4/IPv6
//! (through extension headers, bounded at 8) to the upper layer and fills a `FlowKey`: the 10-tuple
//! plus a 128-bit opaque key, packed into nine `u64` words at fixed positions so the classifier
//! masks, hashes and compares keys with word operations. `extract_into` writes the key (assembled
//! word by word with `FlowKey::pack`) and the `L3Info` straight into a pipeline's batch arrays.
//! Malformed frames return a `WireError` naming the field and byte offset, with a stable
//! `reason()` for drop counters.

mod bytes;

pub mod arp;
pub mod checksum;
pub mod csum_finish;
pub mod error;
pub mod ethernet;
pub mod extract;
pub mod flow_key;
pub mod gso;
pub mod gso_outer;
pub mod icmpv4;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6_ext;
pub mod numbers;
pub mod offload;
pub mod tcp;
pub mod udp;
pub mod vlan;
pub mod vxlan;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use checksum::PseudoHeader;
pub use csum_finish::{detect_partial_checksum, finish_checksum};
pub use error::{Layer, WireError};
pub use ethernet::{EthernetFrame, EthernetRepr};
pub use extract::{extract, extract_batch, extract_into, Extracted, L3Info, L3Kind};
pub use flow_key::{Field, FlowFields, FlowKey};
pub use gso::GsoSegments;
pub use icmpv4::{Icmpv4Packet, Icmpv4Repr};
pub use icmpv6::{Icmpv6Packet, Icmpv6Repr};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr};
pub use ipv6_ext::{ExtHeader, ExtHeaderWalker, Fragment, UpperLayer};
pub use numbers::{ethertype, ip_proto};
pub use offload::{Gso, Offload};
pub use tcp::TcpPacket;
pub use udp::{UdpPacket, UdpRepr};
pub use vlan::{VlanHeader, VlanRepr, VlanTags};
pub use vxlan::{VxlanPacket, VxlanRepr};
