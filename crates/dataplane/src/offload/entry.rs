//! The flow table's key and value as the kernel programs read them: byte layouts fixed here,
//! encoded and decoded by the user side.

/// IPv4 or IPv6: each has its own table, keys sized to its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    V4,
    V6,
}

/// A TCP flow of one port towards one VR: the port's index, the addresses and ports as on the
/// wire (network order; an IPv4 address in the first four bytes), and the destination MAC that
/// chose the VR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub port: u32,
    pub family: Family,
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: [u8; 2],
    pub dport: [u8; 2],
    pub vr_mac: [u8; 6],
}

/// Where each part of a family's key lies: port u32, source, destination, sport u16, dport
/// u16, protocol u8, a zero byte, the MAC.
#[derive(Clone, Copy, Debug)]
pub struct KeyLayout {
    pub addr_len: usize,
    pub src: usize,
    pub dst: usize,
    pub sport: usize,
    pub dport: usize,
    pub proto: usize,
    pub mac: usize,
    pub len: usize,
}

impl Family {
    pub const fn layout(self) -> KeyLayout {
        let a = match self {
            Family::V4 => 4,
            Family::V6 => 16,
        };
        KeyLayout {
            addr_len: a,
            src: 4,
            dst: 4 + a,
            sport: 4 + 2 * a,
            dport: 6 + 2 * a,
            proto: 8 + 2 * a,
            mac: 10 + 2 * a,
            len: 16 + 2 * a,
        }
    }
}

/// The longest key (IPv6's).
pub const KEY_MAX: usize = Family::V6.layout().len;

impl FlowKey {
    /// The key as the family's table holds it, in the first `layout().len` bytes.
    pub fn bytes(&self) -> [u8; KEY_MAX] {
        let l = self.family.layout();
        let mut k = [0; KEY_MAX];
        k[..4].copy_from_slice(&self.port.to_ne_bytes());
        k[l.src..l.src + l.addr_len].copy_from_slice(&self.src[..l.addr_len]);
        k[l.dst..l.dst + l.addr_len].copy_from_slice(&self.dst[..l.addr_len]);
        k[l.sport..l.sport + 2].copy_from_slice(&self.sport);
        k[l.dport..l.dport + 2].copy_from_slice(&self.dport);
        k[l.proto] = pearl_wire::ip_proto::TCP;
        k[l.mac..l.mac + 6].copy_from_slice(&self.vr_mac);
        k
    }

    /// The key's bytes in its table.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&self.bytes()[..self.family.layout().len])
    }
}

/// Offsets in the value: the egress interface's index u32, four spare bytes, the new
/// destination and source MACs, four spare bytes, then what the kernel counts: frames (a
/// super-packet counting as one, as PEARL's ports count it), bytes, and the monotonic clock
/// of the last packet, each a u64.
pub const VALUE_LEN: usize = 48;
pub const VALUE_MACS: usize = 8;
pub const VALUE_PACKETS: usize = 24;
pub const VALUE_BYTES: usize = 32;
pub const VALUE_LAST_NS: usize = 40;

/// What the kernel does with a flow's frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowAction {
    pub out_ifindex: u32,
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
}

impl FlowAction {
    pub fn bytes(&self) -> [u8; VALUE_LEN] {
        let mut v = [0; VALUE_LEN];
        v[..4].copy_from_slice(&self.out_ifindex.to_ne_bytes());
        v[VALUE_MACS..VALUE_MACS + 6].copy_from_slice(&self.dst_mac);
        v[VALUE_MACS + 6..VALUE_MACS + 12].copy_from_slice(&self.src_mac);
        v
    }
}

/// The kernel's tallies of a flow, from its value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowTally {
    pub packets: u64,
    pub bytes: u64,
    pub last_ns: u64,
}

impl FlowTally {
    pub fn of(value: &[u8; VALUE_LEN]) -> FlowTally {
        let at = |o: usize| u64::from_ne_bytes(value[o..o + 8].try_into().expect("eight bytes"));
        FlowTally { packets: at(VALUE_PACKETS), bytes: at(VALUE_BYTES), last_ns: at(VALUE_LAST_NS) }
    }
}
