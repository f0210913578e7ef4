//! How pearld ends. SIGTERM and SIGINT (so `systemctl restart` and `stop`, a package upgrade)
//! leave every VR running, its namespace, TAPs, cgroup and daemons, for the next pearld to
//! adopt (live restore, as Docker's); tearing everything down is asked for explicitly,
//! `POST /v1/node/stop` (`pearlctl node stop`), which then stops pearld the same way.
//!
//! The same live restore applies a change the running data plane cannot take in place (ports
//! added, changed or removed; the number of workers; a port's fanout): the change is stored,
//! answered, and pearld executes itself again over its VRs, which the new image adopts with
//! the stored state (every VR pauses for the restart, a few hundred milliseconds; namespaces,
//! daemons and sessions stay).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static TEAR_DOWN: AtomicBool = AtomicBool::new(false);
/// What a restart under way applies (`restart`).
static RESTART: Mutex<Option<&'static str>> = Mutex::new(None);

/// Asks pearld to remove every VR and everything PEARL made, then exit 0: the main thread,
/// waiting for a stop signal, gets one.
pub fn tear_down() {
    TEAR_DOWN.store(true, Ordering::SeqCst);
    // SAFETY: signals this process; every thread but the main one blocks SIGTERM.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
}

/// Whether the stop under way was asked to tear everything down.
pub fn tearing_down() -> bool {
    TEAR_DOWN.load(Ordering::SeqCst)
}

/// Asks pearld to start again over its VRs, to apply a stored change of `what`.
pub fn restart(what: &'static str) {
    *RESTART.lock().unwrap_or_else(|e| e.into_inner()) = Some(what);
    // SAFETY: as in `tear_down`.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
}

/// What the restart under way applies, if one is.
pub fn restarting() -> Option<&'static str> {
    *RESTART.lock().unwrap_or_else(|e| e.into_inner())
}

/// API calls being answered (`answering`): the one that asked for a restart is among them,
/// and its work (a net's hosts and veths removed after the change) comes before its answer.
static ANSWERING: AtomicUsize = AtomicUsize::new(0);

/// An API call being answered, until dropped.
pub struct Answering(());

impl Drop for Answering {
    fn drop(&mut self) {
        ANSWERING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts an API call as being answered while the value lives.
pub fn answering() -> Answering {
    ANSWERING.fetch_add(1, Ordering::SeqCst);
    Answering(())
}

/// Waits, at most `limit`, until no API call is being answered: stopping the API drops the
/// connections in flight, and a change's answer must reach its client first.
pub fn wait_for_answers(limit: Duration) {
    let deadline = Instant::now() + limit;
    while ANSWERING.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Replaces pearld with a new image of itself on the same command line, less a choice between
/// the file and the stored state made at start: the stored state holds the change just made,
/// and wins (`--state-wins`; with the file unchanged that is the ordinary restore). Returns
/// only if the exec fails.
pub fn exec_again(blocked: &libc::sigset_t) -> std::io::Error {
    let args = again_args(std::env::args_os().skip(1));
    // SAFETY: unblocks the stop signals that the main thread waited on: the new image sets its
    // own mask, and its children (`ip`) must not start with them blocked.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, blocked, std::ptr::null_mut()) };
    std::process::Command::new("/proc/self/exe").args(args).exec()
}

fn again_args(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut again: Vec<OsString> = args.filter(|a| a != "--config-wins" && a != "--state-wins").collect();
    again.push("--state-wins".into());
    again
}

#[cfg(test)]
mod tests {
    use super::again_args;

    #[test]
    fn the_new_image_keeps_the_command_line_and_takes_the_stored_state() {
        let args = ["--config", "a.yaml", "--config-wins", "--api", "s"].map(std::ffi::OsString::from);
        let again: Vec<String> = again_args(args.into_iter()).into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(again, ["--config", "a.yaml", "--api", "s", "--state-wins"]);
    }
}
