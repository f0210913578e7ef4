//! The TAP holder: a small process, started by pearld and outliving it, that holds a copy of
//! every VR TAP's file descriptor. A TAP whose last descriptor closes loses its carrier (or
//! vanishes), which the VR's routing daemons see as a link failure; with the holder, a pearld
//! killed and started again takes its TAPs back, and BGP sessions in the VRs never notice.
//!
//! Protocol (SOCK_SEQPACKET, one message per request): `PUT key` with the descriptor attached,
//! `GET key` (answer `FD` with the descriptor, or `NONE`), `DEL key`, `QUIT`. Keys are
//! `namespace/interface`.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The argument that makes pearld the holder.
pub const HOLD_FLAG: &str = "--hold-taps";

pub struct Holder {
    fd: OwnedFd,
    /// One request and its answer at a time: VRs are made and removed from several threads.
    exchange: std::sync::Mutex<()>,
}

impl Holder {
    /// Connects to the holder at `path`, starting one if none answers.
    pub fn connect_or_start(path: &Path) -> io::Result<Holder> {
        if let Ok(h) = Holder::connect(path) {
            return Ok(h);
        }
        let _ = std::fs::remove_file(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut cmd = Command::new("/proc/self/exe");
        // No inherited output: a caller reading pearld's output to its end must not wait on the holder,
        // which outlives pearld.
        cmd.arg(HOLD_FLAG).arg(path).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: setsid and sigprocmask in the child before exec: its own session, so signals
        // meant for pearld's process group (Ctrl-C) do not reach it, and no inherited mask.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                // pearld blocks SIGTERM for sigwait; a blocked mask would survive the exec.
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                Ok(())
            });
        }
        cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("starting the TAP holder: {e}")))?;
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match Holder::connect(path) {
                Ok(h) => return Ok(h),
                Err(e) if Instant::now() > deadline => {
                    return Err(io::Error::new(e.kind(), format!("the TAP holder at {}: {e}", path.display())))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    fn connect(path: &Path) -> io::Result<Holder> {
        let fd = seqpacket()?;
        let addr = sockaddr(path)?;
        // SAFETY: connect with a valid sockaddr_un of the given length.
        let rc = unsafe { libc::connect(fd.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), std::mem::size_of_val(&addr) as u32) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Holder { fd, exchange: std::sync::Mutex::new(()) })
    }

    pub fn put(&self, key: &str, fd: RawFd) -> io::Result<()> {
        self.ask(format!("PUT {key}").as_bytes(), Some(fd)).map(|_| ())
    }

    /// A descriptor the holder keeps under `key`, if any.
    pub fn get(&self, key: &str) -> io::Result<Option<OwnedFd>> {
        Ok(self.ask(format!("GET {key}").as_bytes(), None)?.1)
    }

    pub fn delete(&self, key: &str) -> io::Result<()> {
        self.ask(format!("DEL {key}").as_bytes(), None).map(|_| ())
    }

    /// Ends the holder (pearld stopping cleanly, having removed every VR).
    pub fn quit(self) {
        let _ = send(self.fd.as_raw_fd(), b"QUIT", None);
    }

    fn ask(&self, request: &[u8], fd: Option<RawFd>) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
        let _turn = self.exchange.lock().unwrap_or_else(|e| e.into_inner());
        send(self.fd.as_raw_fd(), request, fd)?;
        recv(self.fd.as_raw_fd())
    }
}

/// The holder process: serves until told to quit.
pub fn run(path: &Path) -> io::Result<()> {
    let listener = seqpacket()?;
    let addr = sockaddr(path)?;
    let _ = std::fs::remove_file(path);
    // SAFETY: bind/listen on our socket with a valid address.
    unsafe {
        if libc::bind(listener.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), std::mem::size_of_val(&addr) as u32) != 0
            || libc::listen(listener.as_raw_fd(), 4) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    let mut held: HashMap<String, OwnedFd> = HashMap::new();
    loop {
        // SAFETY: accept on a listening socket; the result is owned below.
        let conn = unsafe { libc::accept(listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut()) };
        if conn < 0 {
            continue;
        }
        // SAFETY: a fresh descriptor from accept.
        let conn = unsafe { OwnedFd::from_raw_fd(conn) };
        while let Ok((msg, fd)) = recv(conn.as_raw_fd()) {
            let text = String::from_utf8_lossy(&msg).into_owned();
            let (verb, key) = text.split_once(' ').unwrap_or((text.as_str(), ""));
            let reply = match (verb, fd) {
                ("PUT", Some(fd)) => {
                    held.insert(key.to_string(), fd);
                    send(conn.as_raw_fd(), b"OK", None)
                }
                ("GET", _) => match held.get(key) {
                    Some(fd) => send(conn.as_raw_fd(), b"FD", Some(fd.as_raw_fd())),
                    None => send(conn.as_raw_fd(), b"NONE", None),
                },
                ("DEL", _) => {
                    held.remove(key);
                    send(conn.as_raw_fd(), b"OK", None)
                }
                ("QUIT", _) => {
                    let _ = std::fs::remove_file(path);
                    return Ok(());
                }
                _ => send(conn.as_raw_fd(), b"ERR", None),
            };
            if reply.is_err() {
                break;
            }
        }
    }
}

/// Where the holder of the pearld serving `api_socket` listens.
pub fn socket_for(api_socket: &str) -> PathBuf {
    PathBuf::from(format!("{api_socket}.taps"))
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; owned below.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(path: &Path) -> io::Result<libc::sockaddr_un> {
    // SAFETY: sockaddr_un is plain data; all zeroes is valid.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: socket path too long", path.display())));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(addr)
}

fn send(sock: RawFd, msg: &[u8], fd: Option<RawFd>) -> io::Result<()> {
    let mut iov = libc::iovec { iov_base: msg.as_ptr() as *mut _, iov_len: msg.len() };
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; fields set below point at live buffers.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: the control buffer holds one cmsg with one int, as CMSG_SPACE computes.
        unsafe {
            hdr.msg_control = control.as_mut_ptr().cast();
            hdr.msg_controllen = libc::CMSG_SPACE(4) as usize;
            let c = libc::CMSG_FIRSTHDR(&hdr);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(4) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        }
    }
    // SAFETY: sends the message described by `hdr`.
    if unsafe { libc::sendmsg(sock, &hdr, libc::MSG_NOSIGNAL) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn recv(sock: RawFd) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
    let mut buf = vec![0u8; 512];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; fields set below point at live buffers.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = control.as_mut_ptr().cast();
    hdr.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: receives into the buffers `hdr` describes.
    let n = unsafe { libc::recvmsg(sock, &mut hdr, libc::MSG_CMSG_CLOEXEC) };
    if n <= 0 {
        return Err(if n == 0 { io::ErrorKind::UnexpectedEof.into() } else { io::Error::last_os_error() });
    }
    buf.truncate(n as usize);
    let mut fd = None;
    // SAFETY: walks the control messages the kernel wrote into `control`.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&hdr);
        if !c.is_null() && (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
            let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>());
            fd = Some(OwnedFd::from_raw_fd(raw));
        }
    }
    Ok((buf, fd))
}
