//! One FRR daemon process: started in the VR's namespace and cgroup, in the foreground so that
//! pearld is its parent and learns of its death from a pidfd at once.

use super::layout::Layout;
use crate::cgroup::{at, Placement};
use crate::sys;
use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon may take to open its vty socket.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a daemon may take to exit after SIGTERM before it gets SIGKILL.
pub(crate) const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// zebra's `-K`: after a zebra crash, the restarted zebra keeps the kernel routes the dead one
/// installed for this long, so forwarding goes on while the other daemons reconnect (they
/// take ~10 s) and re-send their routes.
const ZEBRA_KEEP_ROUTES_SECS: &str = "60";

pub(crate) struct Running {
    pub child: Child,
    pub pidfd: OwnedFd,
    pub since: Instant,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// A daemon whose handle goes without `stop` (an error path, a panic) is killed and reaped,
/// never left running unsupervised. After `stop` this finds it gone and does nothing.
impl Drop for Running {
    fn drop(&mut self) {
        let _ = sys::pidfd_signal(&self.pidfd, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Starts `daemon` and waits until it serves its vty (zebra: and its zserv socket).
pub(crate) fn start(layout: &Layout, daemon: &str, placement: &Placement) -> io::Result<Running> {
    let running = spawn(layout, daemon, placement)?;
    wait_ready(layout, daemon, &running)?;
    Ok(running)
}

fn spawn(layout: &Layout, daemon: &str, placement: &Placement) -> io::Result<Running> {
    // Stale sockets of a dead predecessor would look like readiness.
    for stale in [layout.vty_socket(daemon), layout.pid_file(daemon)] {
        match fs::remove_file(&stale) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(at(&stale, e)),
            _ => {}
        }
    }
    let log = OpenOptions::new().create(true).append(true).open(&layout.log).map_err(|e| at(&layout.log, e))?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &layout.vr])
        .arg(layout.binary(daemon))
        .args(["-N", &layout.vr, "-P", "0", "--log", "stdout", "-i"])
        .arg(layout.pid_file(daemon));
    if daemon == "zebra" {
        cmd.args(["-K", ZEBRA_KEEP_ROUTES_SECS]);
    }
    let fds = placement.fds();
    cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    // Its own process group: a ^C meant for pearld must not reach the VR's daemons, which
    // pearld stops in order.
    cmd.process_group(0);
    // SAFETY: the hook only calls write(2) on descriptors that `placement` keeps open.
    unsafe { cmd.pre_exec(move || Placement::join_self(&fds)) };
    let mut child = cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("{daemon}: ip netns exec: {e}")))?;
    match sys::pidfd_open(child.id()) {
        Ok(pidfd) => Ok(Running { child, pidfd, since: Instant::now() }),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

fn wait_ready(layout: &Layout, daemon: &str, running: &Running) -> io::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let vty = layout.vty_socket(daemon);
    loop {
        if UnixStream::connect(&vty).is_ok() && (daemon != "zebra" || layout.zserv_socket().exists()) {
            return Ok(());
        }
        if sys::exited(&running.pidfd, Duration::from_millis(20))? {
            return Err(io::Error::other(format!("{daemon} exited while starting{}", log_tail(layout))));
        }
        if Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{daemon} did not open {} within {READY_TIMEOUT:?}{}", vty.display(), log_tail(layout)),
            ));
        }
    }
}

/// SIGTERM, then SIGKILL if the daemon is still there after `STOP_TIMEOUT`.
pub(crate) fn stop(mut running: Running) -> io::Result<ExitStatus> {
    sys::pidfd_signal(&running.pidfd, libc::SIGTERM)?;
    if !sys::exited(&running.pidfd, STOP_TIMEOUT)? {
        sys::pidfd_signal(&running.pidfd, libc::SIGKILL)?;
    }
    running.child.wait()
}

/// Hands the daemons their part of frr.conf, as FRR's own init scripts do with `vtysh -b`:
/// all of them (`None`) or the one just restarted.
pub(crate) fn apply_config(layout: &Layout, daemon: Option<&str>) -> io::Result<()> {
    let mut cmd = Command::new("vtysh");
    cmd.args(["-N", &layout.vr, "-b"]);
    if let Some(d) = daemon {
        cmd.args(["-d", d]);
    }
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| io::Error::new(e.kind(), format!("vtysh: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Err(io::Error::other(format!("{}: vtysh -b ({}): {}", layout.config().display(), out.status, text.trim())))
}

/// Checks `config`'s syntax without any daemon (`vtysh --dryrun`).
pub(crate) fn check_config(config: &std::path::Path) -> io::Result<()> {
    let out = Command::new("vtysh")
        .arg("-C")
        .arg("-f")
        .arg(config)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("vtysh: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Err(io::Error::new(io::ErrorKind::InvalidData, format!("{}: {}", config.display(), text.trim())))
}

/// The last lines of the instance's log, to say why a daemon did not come up.
fn log_tail(layout: &Layout) -> String {
    let text = fs::read_to_string(&layout.log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return format!(" ({} is empty)", layout.log.display());
    }
    let tail = lines[lines.len().saturating_sub(5)..].join("\n  ");
    format!(" (from {}:\n  {tail})", layout.log.display())
}
