//! A raw `NETLINK_ROUTE` socket. It belongs to the network namespace of the thread that opens
//! it, whatever thread later reads it; one opened with [`NlSocket::open_all_namespaces`] also
//! hears the namespaces its own knows by an id, each datagram tagged with that id.

use crate::change::Change;
use crate::consts::*;
use crate::message::{attr_u32, attributes, error_code, messages, Message, ParseError};
use crate::request::{dump_request, link_request, nsid_request, Dump};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Large enough for any datagram the kernel sends on a route socket (dump datagrams are at most
/// a few pages; notifications one message).
pub const RECV_BUFFER: usize = 1 << 18;
/// Datagrams per `recv_tagged_many`, and the room each has: a notification is one message of a
/// few hundred bytes (a link's, with its statistics, a few KiB); 16 of 16 KiB fill `RECV_BUFFER`.
pub const MANY: usize = 16;
pub const MANY_SLOT: usize = RECV_BUFFER / MANY;

pub struct NlSocket {
    fd: OwnedFd,
    seq: u32,
}

/// How a dump ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpEnd {
    /// The kernel's table changed while it was dumping (`NLM_F_DUMP_INTR`): the dump may have
    /// skipped entries and must be repeated.
    pub interrupted: bool,
}

impl NlSocket {
    /// Opens a socket subscribed to `groups` (`RTMGRP_*`); `rcvbuf` > 0 sets its receive buffer
    /// (forced past `rmem_max`, which needs `CAP_NET_ADMIN`).
    pub fn open(groups: u32, rcvbuf: usize, nonblocking: bool) -> io::Result<NlSocket> {
        let flags = libc::SOCK_RAW | libc::SOCK_CLOEXEC | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
        // SAFETY: plain socket(2) call.
        let raw = unsafe { libc::socket(libc::AF_NETLINK, flags, libc::NETLINK_ROUTE) };
        if raw < 0 {
            return Err(os_error("socket(AF_NETLINK, NETLINK_ROUTE)"));
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if rcvbuf > 0 {
            let size = rcvbuf.min(i32::MAX as usize) as libc::c_int;
            if sockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, size).is_err() {
                sockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, size)
                    .map_err(|e| io::Error::new(e.kind(), format!("setsockopt(SO_RCVBUF, {rcvbuf}): {e}")))?;
            }
        }
        // SAFETY: sockaddr_nl is plain data; zero is valid.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = groups;
        // SAFETY: `addr` is a valid sockaddr_nl of the size passed.
        let rc = unsafe {
            libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_nl).cast(), std::mem::size_of::<libc::sockaddr_nl>() as u32)
        };
        if rc != 0 {
            return Err(os_error(&format!("bind(netlink groups {groups:#x})")));
        }
        Ok(NlSocket { fd, seq: 0 })
    }

    /// Like [`NlSocket::open`] (non-blocking), but hearing `groups` in every namespace this one
    /// has given an id (`NETLINK_LISTEN_ALL_NSID`): one socket for any number of namespaces,
    /// where one per namespace would make every notification anywhere walk all of them.
    pub fn open_all_namespaces(groups: u32, rcvbuf: usize) -> io::Result<NlSocket> {
        let s = NlSocket::open(groups, rcvbuf, true)?;
        sockopt(&s.fd, SOL_NETLINK, NETLINK_LISTEN_ALL_NSID, 1)
            .map_err(|e| io::Error::new(e.kind(), format!("setsockopt(NETLINK_LISTEN_ALL_NSID): {e}")))?;
        Ok(s)
    }

    /// Up to [`MANY`] datagrams in one call (recvmmsg): datagram `i` into the `i`-th
    /// [`MANY_SLOT`]-byte slot of `buf`, and `(length, namespace id, truncated)` of each into
    /// `got`. A burst of notifications (a full table arriving: one datagram per route) then
    /// costs a system call per [`MANY`], not per route. `truncated`: the datagram was longer
    /// than a slot (its end is lost). Errors as [`NlSocket::recv`], when nothing was received. The namespace id
    /// is `None` for the socket's own namespace.
    pub fn recv_tagged_many(&self, buf: &mut [u8], got: &mut Vec<(usize, Option<i32>, bool)>) -> io::Result<()> {
        got.clear();
        let slots = (buf.len() / MANY_SLOT).min(MANY);
        let base = buf.as_mut_ptr();
        // SAFETY: iovec is plain data; each is set below to its own slot of `buf`.
        let mut iov: [libc::iovec; MANY] = unsafe { std::mem::zeroed() };
        // Room for one cmsghdr carrying an int per datagram, aligned as cmsghdr wants.
        let mut control = [[0u64; 4]; MANY];
        // SAFETY: mmsghdr is plain data; zero is valid.
        let mut msgs: [libc::mmsghdr; MANY] = unsafe { std::mem::zeroed() };
        for i in 0..slots {
            // SAFETY: slot i lies inside `buf` (i < buf.len() / MANY_SLOT).
            iov[i] = libc::iovec { iov_base: unsafe { base.add(i * MANY_SLOT) }.cast(), iov_len: MANY_SLOT };
            let h = &mut msgs[i].msg_hdr;
            h.msg_iov = &mut iov[i];
            h.msg_iovlen = 1;
            h.msg_control = control[i].as_mut_ptr().cast();
            h.msg_controllen = std::mem::size_of_val(&control[i]);
        }
        // SAFETY: each header points at its own slot and control buffer, all outliving the call.
        let n = unsafe { libc::recvmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr(), slots as u32, 0, std::ptr::null_mut()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        for m in &msgs[..n as usize] {
            let h = &m.msg_hdr;
            let mut nsid = None;
            // SAFETY: walks the control messages the kernel wrote for this datagram, within its
            // msg_controllen, reading an int only from a message of that type.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(h);
                while !c.is_null() {
                    if (*c).cmsg_level == SOL_NETLINK && (*c).cmsg_type == NETLINK_LISTEN_ALL_NSID {
                        nsid = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<i32>()));
                    }
                    c = libc::CMSG_NXTHDR(h, c);
                }
            }
            got.push(((m.msg_len as usize).min(MANY_SLOT), nsid, h.msg_flags & libc::MSG_TRUNC != 0));
        }
        Ok(())
    }

    /// Asks the kernel for the id this socket's namespace gives the namespace open as `fd`
    /// (`RTM_GETNSID`, or `RTM_NEWNSID` to have one given: `assign`). Returns the id, or
    /// [`NETNSA_NSID_NOT_ASSIGNED`]; for `assign`, 0 once given.
    pub fn namespace_id(&mut self, fd: RawFd, assign: bool, buf: &mut [u8]) -> io::Result<i32> {
        self.seq = self.seq.wrapping_add(1);
        let (kind, flags, nsid) = if assign { (RTM_NEWNSID, NLM_F_ACK, Some(-1)) } else { (RTM_GETNSID, 0, None) };
        let request = nsid_request(kind, flags, self.seq, fd as u32, nsid);
        self.send(&request, "namespace id request")?;
        loop {
            let n = self.recv(buf)?;
            for m in messages(&buf[..n]) {
                let m = m.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("malformed namespace id answer: {e}")))?;
                if m.seq != self.seq {
                    continue;
                }
                match m.kind {
                    NLMSG_ERROR => {
                        let errno = error_code(m.payload).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                        if errno == 0 {
                            return Ok(0);
                        }
                        return Err(io::Error::from_raw_os_error(errno));
                    }
                    RTM_NEWNSID => {
                        let attrs = m.payload.get(4..).unwrap_or_default();
                        for a in attributes(attrs) {
                            let (kind, value) = a.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                            if kind == NETNSA_NSID {
                                return Ok(
                                    attr_u32(value, "NETNSA_NSID").map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))? as i32
                                );
                            }
                        }
                        return Ok(NETNSA_NSID_NOT_ASSIGNED);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Asks for the link whose index is `ifindex` and hands its message's payload to `read`.
    pub fn link<T>(&mut self, ifindex: u32, read: impl FnOnce(&[u8]) -> T) -> io::Result<T> {
        self.seq = self.seq.wrapping_add(1);
        self.send(&link_request(ifindex, self.seq), "link request")?;
        // A link message with its statistics is a few KiB.
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match self.recv(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            };
            for m in messages(&buf[..n]) {
                let m = m.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("malformed link answer: {e}")))?;
                if m.seq != self.seq {
                    continue;
                }
                match m.kind {
                    RTM_NEWLINK => return Ok(read(m.payload)),
                    NLMSG_ERROR => {
                        let errno = error_code(m.payload).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                        return Err(io::Error::from_raw_os_error(errno));
                    }
                    _ => {}
                }
            }
        }
    }

    /// Sends `change` and waits for the kernel's answer to it: `Ok` once applied, the errno it
    /// refused with otherwise.
    pub fn change(&mut self, change: &Change) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        self.send(&change.encode(self.seq), "change request")?;
        // An error answer quotes the request (a few hundred bytes at most).
        let mut buf = [0u8; 8192];
        loop {
            let n = match self.recv(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            };
            for m in messages(&buf[..n]) {
                let m = m.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("malformed change answer: {e}")))?;
                if m.seq == self.seq && m.kind == NLMSG_ERROR {
                    return match error_code(m.payload).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))? {
                        0 => Ok(()),
                        errno => Err(io::Error::from_raw_os_error(errno)),
                    };
                }
            }
        }
    }

    fn send(&self, request: &[u8], what: &str) -> io::Result<()> {
        // SAFETY: sends the request buffer, which outlives the call.
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), request.as_ptr().cast(), request.len(), 0) };
        if sent < 0 {
            return Err(os_error(&format!("sending the {what}")));
        }
        Ok(())
    }

    /// One datagram into `buf`. `WouldBlock` when a non-blocking socket has nothing; an error
    /// with `ENOBUFS` when the kernel dropped notifications because the buffer was full.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: reads at most buf.len() bytes into buf.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Dumps `what` and hands every message of the answer to `each`, in order.
    pub fn dump(&mut self, what: Dump, buf: &mut [u8], mut each: impl FnMut(Message<'_>)) -> io::Result<DumpEnd> {
        self.seq = self.seq.wrapping_add(1);
        self.send(&dump_request(what, self.seq), &format!("netlink dump request for {what:?}"))?;
        let mut end = DumpEnd { interrupted: false };
        loop {
            let n = self.recv(buf).map_err(|e| io::Error::new(e.kind(), format!("reading the {what:?} dump: {e}")))?;
            for m in messages(&buf[..n]) {
                let m = m.map_err(|e| malformed(what, e))?;
                if m.seq != self.seq {
                    continue;
                }
                end.interrupted |= m.flags & NLM_F_DUMP_INTR != 0;
                match m.kind {
                    NLMSG_DONE => return Ok(end),
                    NLMSG_ERROR => {
                        let errno = error_code(m.payload).map_err(|e| malformed(what, e))?;
                        let e = io::Error::from_raw_os_error(errno);
                        return Err(io::Error::new(e.kind(), format!("the kernel refused the {what:?} dump: {e}")));
                    }
                    NLMSG_NOOP => {}
                    _ => each(m),
                }
            }
        }
    }
}

impl AsRawFd for NlSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn sockopt(fd: &OwnedFd, level: libc::c_int, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a c_int option value of the size given.
    let rc = unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, option, (&value as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as u32)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn os_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn malformed(what: Dump, e: ParseError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("malformed {what:?} dump: {e}"))
}
