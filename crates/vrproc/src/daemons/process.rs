//! One daemon process: started in the VR's namespace and cgroup, in the foreground so that
//! pearld is its parent and learns of its death from a pidfd at once; or taken over from a
//! pearld that died, watched through a pidfd all the same (but not reaped: it is not ours).

use super::suite::{Suite, VR_ENV};
use crate::cgroup::{at, Placement};
use crate::sys;
use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon may take to become ready (FRR: open its vty socket).
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a daemon may take to exit after SIGTERM before it gets SIGKILL.
pub(crate) const STOP_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) struct Running {
    pub pid: u32,
    /// `None` for a daemon taken over from an earlier pearld: its parent is init (or a
    /// subreaper), which reaps it.
    pub child: Option<Child>,
    pub pidfd: OwnedFd,
    pub since: Instant,
}

impl Running {
    /// How it ended, once its pidfd said so.
    pub fn reap(&mut self) -> String {
        kill_group(self.pid);
        match &mut self.child {
            Some(c) => c.wait().map_or_else(|e| format!("could not be reaped: {e}"), |s| s.to_string()),
            None => "exit status unknown: taken over from an earlier pearld, not its child".to_string(),
        }
    }

    /// Waits for the process to end: reaps a child, watches the pidfd of an adopted one.
    fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match &mut self.child {
            Some(c) => c.wait().map(drop),
            None => sys::poll_readable(&[self.pidfd.as_raw_fd()], timeout).map(drop),
        }
    }
}

/// A daemon whose handle goes without `stop` (an error path, a panic) is killed (and reaped if
/// it is our child), never left running unsupervised. After `stop` this finds it gone and does
/// nothing.
impl Drop for Running {
    fn drop(&mut self) {
        let _ = sys::pidfd_signal(&self.pidfd, libc::SIGKILL);
        if sys::exited(&self.pidfd, STOP_TIMEOUT).unwrap_or(false) {
            kill_group(self.pid);
        }
        let _ = self.wait(Some(STOP_TIMEOUT));
    }
}

/// Each daemon leads its own process group: what it started (a script's programs) ends with
/// it rather than living on unsupervised. Called once the leader has exited but before it is
/// reaped, while its pid (the group's id) cannot name another process.
fn kill_group(pid: u32) {
    // SAFETY: signalling a process group by id; a group that is gone returns ESRCH.
    unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
}

/// A daemon found running from an earlier pearld's time.
pub(crate) enum Survivor {
    /// This VR's daemon in this VR's namespace, now watched through a pidfd.
    Usable(Running),
    /// This VR's daemon, but in a namespace that is no longer /run/netns/<vr> (it was made
    /// anew): it serves nobody.
    Stranded(Running),
    /// The pid no longer names that daemon.
    Gone,
}

/// Takes over `daemon`, which a pid file says runs as `pid`.
pub(crate) fn take_over(suite: &dyn Suite, daemon: &str, pid: u32) -> io::Result<Survivor> {
    let Ok(pidfd) = sys::pidfd_open(pid) else { return Ok(Survivor::Gone) };
    // Checked again now that the pidfd pins the process: the pid may have been recycled since
    // the pid file was read, and only a process that is still alive after the check is the one
    // that was checked.
    if !suite.is_daemon(daemon, pid) || sys::exited(&pidfd, Duration::ZERO)? {
        return Ok(Survivor::Gone);
    }
    let running = Running { pid, child: None, pidfd, since: Instant::now() };
    let vr_netns = Path::new("/run/netns").join(suite.vr());
    let want = fs::metadata(&vr_netns).map_err(|e| at(&vr_netns, e))?;
    let its = Path::new("/proc").join(pid.to_string()).join("ns/net");
    let has = fs::metadata(&its).map_err(|e| at(&its, e))?;
    Ok(if (has.dev(), has.ino()) == (want.dev(), want.ino()) { Survivor::Usable(running) } else { Survivor::Stranded(running) })
}

/// Starts `daemon` and waits until it is ready.
pub(crate) fn start(suite: &dyn Suite, daemon: &str, placement: &Placement) -> io::Result<Running> {
    let running = spawn(suite, daemon, placement)?;
    wait_ready(suite, daemon, &running)?;
    Ok(running)
}

fn spawn(suite: &dyn Suite, daemon: &str, placement: &Placement) -> io::Result<Running> {
    // Stale files of a dead predecessor would look like readiness, or like a configured
    // daemon to a later pearld.
    let mut stale = suite.stale_files(daemon);
    stale.extend([suite.pid_file(daemon), suite.configured_marker(daemon)]);
    for stale in stale {
        match fs::remove_file(&stale) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(at(&stale, e)),
            _ => {}
        }
    }
    let log_path = suite.log();
    if let Some(dir) = log_path.parent() {
        fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
    }
    let log = OpenOptions::new().create(true).append(true).open(log_path).map_err(|e| at(log_path, e))?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", suite.vr()]).args(suite.argv(daemon)).env(VR_ENV, suite.vr());
    if let Some(dir) = suite.workdir() {
        cmd.current_dir(dir);
    }
    let fds = placement.fds();
    cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    // Its own process group: a ^C meant for pearld must not reach the VR's daemons, which
    // pearld stops in order.
    cmd.process_group(0);
    // SAFETY: the hook only calls write(2) on descriptors that `placement` keeps open, and
    // sigprocmask on the child itself.
    unsafe {
        cmd.pre_exec(move || {
            // A blocked signal stays blocked across exec: a caller that waits for SIGTERM with
            // sigwait (pearld does) must not hand that mask to daemons it stops with SIGTERM.
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Placement::join_self(&fds)
        })
    };
    let mut child = cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("{daemon}: ip netns exec: {e}")))?;
    let pidfd = match sys::pidfd_open(child.id()) {
        Ok(pidfd) => pidfd,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    // `ip netns exec` execs the daemon in the same process: this pid is the daemon's.
    let running = Running { pid: child.id(), child: Some(child), pidfd, since: Instant::now() };
    if !suite.writes_pid_file() {
        let pid_file = suite.pid_file(daemon);
        fs::write(&pid_file, running.pid.to_string()).map_err(|e| at(&pid_file, e))?;
    }
    Ok(running)
}

pub(crate) fn wait_ready(suite: &dyn Suite, daemon: &str, running: &Running) -> io::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let Err(what) = suite.ready(daemon) else { return Ok(()) };
        if sys::exited(&running.pidfd, Duration::from_millis(20))? {
            return Err(io::Error::other(format!("{daemon} exited while starting{}", log_tail(suite.log()))));
        }
        if Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{daemon} did not {what} within {READY_TIMEOUT:?}{}", log_tail(suite.log())),
            ));
        }
    }
}

/// SIGTERM, then SIGKILL if the daemon is still there after `STOP_TIMEOUT`.
pub(crate) fn stop(mut running: Running) -> io::Result<()> {
    sys::pidfd_signal(&running.pidfd, libc::SIGTERM)?;
    if !sys::exited(&running.pidfd, STOP_TIMEOUT)? {
        sys::pidfd_signal(&running.pidfd, libc::SIGKILL)?;
        sys::exited(&running.pidfd, STOP_TIMEOUT)?;
    }
    kill_group(running.pid);
    running.wait(None)
}

/// The last lines of the instance's log, to say why a daemon did not come up.
fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return format!(" ({} is empty)", log.display());
    }
    let tail = lines[lines.len().saturating_sub(5)..].join("\n  ");
    format!(" (from {}:\n  {tail})", log.display())
}
