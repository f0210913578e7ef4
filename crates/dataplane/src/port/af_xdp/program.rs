//! The XDP side of an AF_XDP port: an XSKMAP holding the socket of each rx queue, a five-instruction
//! program that redirects every frame to the socket of the queue it arrived on (or passes it to
//! the kernel's stack when that queue has none), and the BPF link that attaches the program to
//! the interface.
//!
//! Everything goes through the bpf(2) syscall; no object file, no loader library (libbpf, aya):
//! five instructions and a map do not justify a C library or a build step with clang, and the
//! syscall's few commands are all a port needs. A link (rather
//! than a netlink attachment) belongs to its file descriptor: when the port is dropped or the
//! process dies, even by SIGKILL, the kernel closes the descriptor and detaches the program.

use crate::bpf_sys::{self, raw};
use pearl_ebpf::asm::{Asm, Helper, Size, R1, R2, R3};
use pearl_ebpf::insn::Insn;
use std::io;
use std::os::fd::OwnedFd;

/// linux/if_link.h: XDP_FLAGS_SKB_MODE, XDP_FLAGS_DRV_MODE.
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Where the XDP program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver, before any socket buffer exists (XDP_FLAGS_DRV_MODE).
    Native,
    /// Generic XDP, after the kernel built a socket buffer; works on any interface (XDP_FLAGS_SKB_MODE).
    Skb,
}

impl XdpMode {
    fn flags(self) -> u32 {
        match self {
            XdpMode::Native => XDP_FLAGS_DRV_MODE,
            XdpMode::Skb => XDP_FLAGS_SKB_MODE,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Skb => "skb",
        }
    }
}

/// An XSKMAP with `entries` slots, keyed by rx queue index.
pub(super) fn xsk_map(entries: u32) -> io::Result<OwnedFd> {
    bpf_sys::map_create(bpf_sys::MAP_TYPE_XSKMAP, 4, 4, entries, b"pearl_xsks")
}

/// Puts the socket `xsk` into `map` for rx queue `queue`.
pub(super) fn map_insert(map: &OwnedFd, queue: u32, xsk: &OwnedFd) -> io::Result<()> {
    bpf_sys::map_update(map, &queue.to_ne_bytes(), &raw(xsk).to_ne_bytes(), bpf_sys::UPDATE_ANY)
}

/// `return bpf_redirect_map(&map, ctx->rx_queue_index, XDP_PASS);`
fn program(map: &OwnedFd) -> Vec<Insn> {
    const RX_QUEUE_INDEX: i16 = 16; // offsetof(struct xdp_md, rx_queue_index)
    const XDP_PASS: i32 = 2;
    let mut a = Asm::default();
    a.ldx(Size::W, R2, R1, RX_QUEUE_INDEX);
    a.ld_map(R1, raw(map));
    // What to do with a frame whose queue has no socket.
    a.mov(R3, XDP_PASS);
    a.call(Helper::RedirectMap);
    a.exit();
    a.finish()
}

/// Loads the redirect program for `map`.
pub(super) fn load(map: &OwnedFd) -> io::Result<OwnedFd> {
    bpf_sys::prog_load(bpf_sys::PROG_TYPE_XDP, bpf_sys::ATTACH_XDP, &program(map), b"pearl_xsk")
}

/// Attaches `prog` to interface `ifindex` in `mode`; the program stays attached while the returned
/// link descriptor is open.
pub(super) fn attach(prog: &OwnedFd, ifindex: u32, mode: XdpMode) -> io::Result<OwnedFd> {
    bpf_sys::link_create(prog, ifindex, bpf_sys::ATTACH_XDP, mode.flags())
}
