//! Which frames a port's receive socket takes, by length. An AF_PACKET port receives through
//! two sockets (`af_packet.rs`): one whose ring has small slots for ordinary frames, one whose
//! ring has slots for 64 KiB super-packets. Each socket's filter keeps the other's frames out;
//! whoever replaces the filter (the flow offload) must keep that test in front of its own.

use std::io;
use std::mem::size_of;
use std::os::fd::AsRawFd;

/// The frames one receive socket takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RxClass {
    /// Every frame: the port's only socket.
    All,
    /// Frames of at most this many bytes (from the Ethernet header on).
    AtMost(u32),
    /// Frames of more than this many bytes.
    Above(u32),
}

impl RxClass {
    /// Puts the socket back to taking exactly this class's frames.
    pub fn restore(self, socket: &impl AsRawFd) -> io::Result<()> {
        let Some(mut filter) = self.classic_filter() else {
            let zero: libc::c_int = 0;
            // SAFETY: a plain setsockopt; SO_DETACH_FILTER takes (and ignores) an int. A socket
            // without a filter answers ENOENT, which leaves it as wanted.
            let rc = unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_DETACH_FILTER,
                    (&zero as *const libc::c_int).cast(),
                    size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            let e = io::Error::last_os_error();
            return if rc == 0 || e.raw_os_error() == Some(libc::ENOENT) { Ok(()) } else { Err(e) };
        };
        let program = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
        // SAFETY: `program` points at `filter`, alive for the call; the kernel copies it.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&program as *const libc::sock_fprog).cast(),
                size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The classic BPF program that keeps a socket to its class: the frame's length against
    /// the bound, then all of it or nothing.
    fn classic_filter(self) -> Option<Vec<libc::sock_filter>> {
        const LD_LEN: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_LEN) as u16;
        const JGT: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
        const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
        let (bound, longer, shorter) = match self {
            RxClass::All => return None,
            RxClass::AtMost(n) => (n, 0, u32::MAX),
            RxClass::Above(n) => (n, u32::MAX, 0),
        };
        let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
        Some(vec![insn(LD_LEN, 0, 0, 0), insn(JGT, 0, 1, bound), insn(RET, 0, 0, longer), insn(RET, 0, 0, shorter)])
    }
}
