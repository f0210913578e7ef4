//! Kernel eBPF objects through the bpf(2) syscall alone: maps, programs, links and test runs.
//! PEARL's kernel-side programs are small and built in Rust (`pearl_ebpf::asm`), so no object
//! file and no loader library are needed; the kernel's verifier checks each one when it is loaded.

use pearl_ebpf::insn::Insn;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_PROG_LOAD: libc::c_long = 5;
#[cfg(test)]
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_LINK_CREATE: libc::c_long = 28;

pub const MAP_TYPE_HASH: u32 = 1;
pub const MAP_TYPE_ARRAY: u32 = 2;
pub const MAP_TYPE_XSKMAP: u32 = 17;
pub const PROG_TYPE_SOCKET_FILTER: u32 = 1;
pub const PROG_TYPE_SCHED_CLS: u32 = 3;
pub const PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`: BPF_XDP, BPF_TCX_INGRESS.
pub const ATTACH_XDP: u32 = 37;
pub const ATTACH_TCX_INGRESS: u32 = 46;

/// A map of `entries` slots.
pub fn map_create(map_type: u32, key_size: u32, value_size: u32, entries: u32, label: &[u8]) -> io::Result<OwnedFd> {
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
        map_type,
        key_size,
        value_size,
        max_entries: entries,
        map_flags: 0,
        inner_map_fd: 0,
        numa_node: 0,
        map_name: name(label),
    };
    bpf_fd(BPF_MAP_CREATE, &attr)
}

#[repr(C)]
struct MapElem {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// BPF_ANY, BPF_NOEXIST: `map_update`'s flags.
pub const UPDATE_ANY: u64 = 0;
pub const UPDATE_NOEXIST: u64 = 1;

/// Writes `value` at `key`; the slices must be the map's key and value sizes.
pub fn map_update(map: &OwnedFd, key: &[u8], value: &[u8], flags: u64) -> io::Result<()> {
    let attr = MapElem { map_fd: raw(map), _pad: 0, key: key.as_ptr() as u64, value: value.as_ptr() as u64, flags };
    bpf(BPF_MAP_UPDATE_ELEM, &attr).map(drop)
}

/// Reads the value at `key` into `value`; false if the map has no such key.
pub fn map_lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
    let attr = MapElem { map_fd: raw(map), _pad: 0, key: key.as_ptr() as u64, value: value.as_mut_ptr() as u64, flags: 0 };
    absent_is_false(bpf(BPF_MAP_LOOKUP_ELEM, &attr))
}

/// Deletes `key`; false if it was not there.
pub fn map_delete(map: &OwnedFd, key: &[u8]) -> io::Result<bool> {
    let attr = MapElem { map_fd: raw(map), _pad: 0, key: key.as_ptr() as u64, value: 0, flags: 0 };
    absent_is_false(bpf(BPF_MAP_DELETE_ELEM, &attr))
}

fn absent_is_false(rc: io::Result<libc::c_long>) -> io::Result<bool> {
    match rc {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Loads a program; a refusal carries the verifier's log.
pub fn prog_load(prog_type: u32, expected_attach_type: u32, insns: &[Insn], label: &[u8]) -> io::Result<OwnedFd> {
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
    // The helpers PEARL's programs call are not GPL-only, so they carry the project's licence.
    let license = b"Apache-2.0\0";
    let code: Vec<[u8; 8]> = insns.iter().map(|i| i.encode()).collect();
    let mut attr = ProgLoad {
        prog_type,
        insn_cnt: insns.len() as u32,
        insns: code.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 0,
        log_size: 0,
        log_buf: 0,
        kern_version: 0,
        prog_flags: 0,
        prog_name: name(label),
        prog_ifindex: 0,
        expected_attach_type,
    };
    match bpf_fd(BPF_PROG_LOAD, &attr) {
        Ok(fd) => Ok(fd),
        Err(e) if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EINVAL) => {
            // Again with the verifier's log, which says which instruction it refused and why.
            let mut log = vec![0u8; 1 << 16];
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            let again = bpf_fd(BPF_PROG_LOAD, &attr);
            let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(log.len())]).into_owned();
            again.map_err(|_| io::Error::new(e.kind(), format!("{e}; the verifier said: {}", text.trim_end())))
        }
        Err(e) => Err(e),
    }
}

/// Attaches `prog` to interface `ifindex` (`attach_type`: ATTACH_XDP with XDP mode flags, or
/// ATTACH_TCX_INGRESS); attached while the returned link descriptor is open, so a process that
/// dies, even by SIGKILL, leaves nothing behind.
pub fn link_create(prog: &OwnedFd, ifindex: u32, attach_type: u32, flags: u32) -> io::Result<OwnedFd> {
    #[repr(C)]
    struct LinkCreate {
        prog_fd: u32,
        target_ifindex: u32,
        attach_type: u32,
        flags: u32,
        /// tcx: relative_fd (none), then expected_revision (any).
        relative: u32,
        _pad: u32,
        expected_revision: u64,
    }
    let attr = LinkCreate { prog_fd: raw(prog), target_ifindex: ifindex, attach_type, flags, relative: 0, _pad: 0, expected_revision: 0 };
    bpf_fd(BPF_LINK_CREATE, &attr)
}

/// Runs `prog` once on a frame (BPF_PROG_TEST_RUN): its return value, and the frame as the
/// program left it in `out`.
#[cfg(test)]
pub fn prog_test_run(prog: &OwnedFd, frame: &[u8], out: &mut Vec<u8>) -> io::Result<u32> {
    #[repr(C)]
    struct TestRun {
        prog_fd: u32,
        retval: u32,
        data_size_in: u32,
        data_size_out: u32,
        data_in: u64,
        data_out: u64,
        repeat: u32,
        duration: u32,
        ctx_size_in: u32,
        ctx_size_out: u32,
        ctx_in: u64,
        ctx_out: u64,
        flags: u32,
        cpu: u32,
        batch_size: u32,
        /// Explicit, so that it is zero: the kernel refuses a non-zero byte past what it knows.
        _pad: u32,
    }
    out.clear();
    out.resize(frame.len() + 256, 0);
    let mut attr = TestRun {
        prog_fd: raw(prog),
        retval: 0,
        data_size_in: frame.len() as u32,
        data_size_out: out.len() as u32,
        data_in: frame.as_ptr() as u64,
        data_out: out.as_mut_ptr() as u64,
        repeat: 1,
        duration: 0,
        ctx_size_in: 0,
        ctx_size_out: 0,
        ctx_in: 0,
        ctx_out: 0,
        flags: 0,
        cpu: 0,
        batch_size: 0,
        _pad: 0,
    };
    // SAFETY: as in `bpf`, and the kernel writes the out size back into `attr`.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, BPF_PROG_TEST_RUN, &mut attr as *mut TestRun, size_of::<TestRun>() as libc::c_uint) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    out.truncate(attr.data_size_out as usize);
    Ok(attr.retval)
}

/// Attaches `prog` to a socket as its filter (SO_ATTACH_BPF): the kernel runs it on each frame
/// before the socket takes it, and a frame it returns 0 for is never queued or copied.
pub fn attach_socket_filter(socket: &impl AsRawFd, prog: &OwnedFd) -> io::Result<()> {
    let fd = raw(prog) as libc::c_int;
    // SAFETY: a plain setsockopt with an int argument of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_BPF,
            &fd as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn name(text: &[u8]) -> [u8; 16] {
    let mut out = [0; 16];
    let n = text.len().min(15);
    out[..n].copy_from_slice(&text[..n]);
    out
}

pub fn raw(fd: &OwnedFd) -> u32 {
    fd.as_raw_fd() as u32
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
