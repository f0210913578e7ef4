//! The XDP side of an AF_XDP port: an XSKMAP holding the socket of each rx queue, a five-instruction
//! program that redirects every frame to the socket of the queue it arrived on (or passes it to
//! the kernel's stack when that queue has none), and the BPF link that attaches the program to
//! the interface.
//!
//! Everything goes through the bpf(2) syscall; no object file, no loader library. A link (rather
//! than a netlink attachment) belongs to its file descriptor: when the port is dropped or the
//! process dies, even by SIGKILL, the kernel closes the descriptor and detaches the program.

use std::io;
use std::mem::size_of;
use std::os::fd::{FromRawFd, OwnedFd};
use std::ptr::addr_of;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`'s BPF_XDP.
const BPF_XDP: u32 = 37;
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
    #[repr(C)]
    struct MapCreate {
        map_type: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        map_flags: u32,
        inner_map_fd: u32,
        numa_node: u32,
        map_name: [u8; 16],
    }
    let attr = MapCreate {
        map_type: BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries: entries,
        map_flags: 0,
        inner_map_fd: 0,
        numa_node: 0,
        map_name: name(b"pearl_xsks"),
    };
    bpf_fd(BPF_MAP_CREATE, &attr)
}

/// Puts the socket `xsk` into `map` for rx queue `queue`.
pub(super) fn map_insert(map: &OwnedFd, queue: u32, xsk: &OwnedFd) -> io::Result<()> {
    #[repr(C)]
    struct MapElem {
        map_fd: u32,
        _pad: u32,
        key: u64,
        value: u64,
        flags: u64,
    }
    let value = raw(xsk);
    let attr = MapElem { map_fd: raw(map), _pad: 0, key: addr_of!(queue) as u64, value: addr_of!(value) as u64, flags: 0 };
    bpf(BPF_MAP_UPDATE_ELEM, &attr).map(drop)
}

/// One eBPF instruction (`struct bpf_insn`): registers are packed dst in the low nibble.
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn { code, regs: dst | src << 4, off, imm }
}

/// `return bpf_redirect_map(&map, ctx->rx_queue_index, XDP_PASS);`
fn program(map: &OwnedFd) -> [Insn; 6] {
    const LDX_MEM_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
    const LD_IMM64: u8 = 0x18; // BPF_LD | BPF_IMM | BPF_DW, two slots
    const MOV64_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
    const CALL: u8 = 0x85; // BPF_JMP | BPF_CALL
    const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
    const PSEUDO_MAP_FD: u8 = 1;
    const RX_QUEUE_INDEX: i16 = 16; // offsetof(struct xdp_md, rx_queue_index)
    const XDP_PASS: i32 = 2;
    const REDIRECT_MAP: i32 = 51; // BPF_FUNC_redirect_map
    [
        insn(LDX_MEM_W, 2, 1, RX_QUEUE_INDEX, 0),             // r2 = ctx->rx_queue_index
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, raw(map) as i32), // r1 = &map (the verifier swaps the fd)
        insn(0, 0, 0, 0, 0),                                  //      (upper half of the immediate)
        insn(MOV64_K, 3, 0, 0, XDP_PASS),                     // r3 = what to do without a socket
        insn(CALL, 0, 0, 0, REDIRECT_MAP),                    // r0 = bpf_redirect_map(r1, r2, r3)
        insn(EXIT, 0, 0, 0, 0),                               // return r0
    ]
}

/// Loads the redirect program for `map`.
pub(super) fn load(map: &OwnedFd) -> io::Result<OwnedFd> {
    #[repr(C)]
    struct ProgLoad {
        prog_type: u32,
        insn_cnt: u32,
        insns: u64,
        license: u64,
        log_level: u32,
        log_size: u32,
        log_buf: u64,
        kern_version: u32,
        prog_flags: u32,
        prog_name: [u8; 16],
        prog_ifindex: u32,
        expected_attach_type: u32,
    }
    let insns = program(map);
    // bpf_redirect_map is not GPL-only, so the program may carry the project's own licence.
    let license = b"Apache-2.0\0";
    let attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 0,
        log_size: 0,
        log_buf: 0,
        kern_version: 0,
        prog_flags: 0,
        prog_name: name(b"pearl_xsk"),
        prog_ifindex: 0,
        expected_attach_type: BPF_XDP,
    };
    bpf_fd(BPF_PROG_LOAD, &attr)
}

/// Attaches `prog` to interface `ifindex` in `mode`; the program stays attached while the returned
/// link descriptor is open.
pub(super) fn attach(prog: &OwnedFd, ifindex: u32, mode: XdpMode) -> io::Result<OwnedFd> {
    #[repr(C)]
    struct LinkCreate {
        prog_fd: u32,
        target_ifindex: u32,
        attach_type: u32,
        flags: u32,
    }
    let attr = LinkCreate { prog_fd: raw(prog), target_ifindex: ifindex, attach_type: BPF_XDP, flags: mode.flags() };
    bpf_fd(BPF_LINK_CREATE, &attr)
}

fn name(text: &[u8]) -> [u8; 16] {
    let mut out = [0; 16];
    out[..text.len()].copy_from_slice(text);
    out
}

fn raw(fd: &OwnedFd) -> u32 {
    std::os::fd::AsRawFd::as_raw_fd(fd) as u32
}

fn bpf<T>(cmd: libc::c_long, attr: &T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a `union bpf_attr` prefix of the size passed; the kernel zero-extends it
    // and reads the buffers it points to, which outlive the call.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *const T, size_of::<T>() as libc::c_uint) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

fn bpf_fd<T>(cmd: libc::c_long, attr: &T) -> io::Result<OwnedFd> {
    let fd = bpf(cmd, attr)?;
    // SAFETY: these commands return a new descriptor that nobody else owns (close-on-exec by
    // default for bpf objects).
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
