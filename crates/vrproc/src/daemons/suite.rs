//! What a routing suite must say for pearld to run, watch and take over its daemons: where its
//! files live, how each daemon is started and known to be ready, and how its configuration is
//! checked and handed over. FRR, BIRD and an owner's own program are the suites that exist;
//! the supervisor knows nothing else about any of them.

use crate::cgroup::at;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Set in every daemon's environment: how a later pearld tells this VR's processes from
/// others that reuse a pid, for suites whose command line does not name the VR.
pub const VR_ENV: &str = "PEARL_VR";

/// What a daemon is still to do before it serves; the time-out message reads "DAEMON did not
/// {this} within …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    /// open PATH (the socket it serves on takes no connections yet)
    #[error("open {}", .0.display())]
    Open(std::path::PathBuf),
}

pub trait Suite: Send + Sync + 'static {
    /// `frr`, `bird`, `command`: the `control_plane:` key, and the prefix of its messages.
    fn kind(&self) -> &'static str;

    /// The VR; its namespace is /run/netns/<vr>.
    fn vr(&self) -> &str;

    /// The daemons, in start order (stopped in reverse).
    fn daemons(&self) -> &[String];

    /// Everything that can be refused before a file is written or a process started.
    fn check(&self) -> io::Result<()>;

    /// Puts the configuration in place, leaving the run directory's sockets and pid files
    /// alone: daemons that run keep running, and those started later read the new files.
    fn install(&self) -> io::Result<()>;

    /// Removes the configuration and run directories (the log stays).
    fn remove(&self) -> io::Result<()>;

    /// Holds the pid files, the markers and any sockets.
    fn run_dir(&self) -> &Path;

    /// The daemons' stdout and stderr, appended: kept after the instance stops.
    fn log(&self) -> &Path;

    /// Files a dead predecessor may leave that would look like readiness.
    fn stale_files(&self, daemon: &str) -> Vec<PathBuf>;

    /// The program and its arguments, run in the VR's namespace in the foreground.
    fn argv(&self, daemon: &str) -> Vec<OsString>;

    /// Where the daemon runs; `None` keeps pearld's own directory.
    fn workdir(&self) -> Option<&Path> {
        None
    }

    /// Whether the daemon writes its own pid file (else pearld writes it once it is started).
    fn writes_pid_file(&self) -> bool;

    /// `Ok` once the daemon serves; else what it is still to do, for the time-out message.
    fn ready(&self, daemon: &str) -> Result<(), NotReady>;

    /// Whether process `pid` is this VR's `daemon` (not a recycled pid).
    fn is_daemon(&self, daemon: &str, pid: u32) -> bool;

    /// Hands the daemons (`None`: all, at start) or the one just restarted their configuration,
    /// for suites that take it after they start.
    fn apply_config(&self, daemon: Option<&str>) -> io::Result<()>;

    /// Whether the files the daemons run with are those the configuration names now.
    fn runs_config(&self) -> bool;

    fn pid_file(&self, daemon: &str) -> PathBuf {
        self.run_dir().join(format!("{daemon}.pid"))
    }

    /// Where pearld notes that `daemon` was handed its configuration (the file holds the pid
    /// that got it), so that a later pearld can tell a daemon it may leave alone from one whose
    /// configuration push a dying pearld never made.
    fn configured_marker(&self, daemon: &str) -> PathBuf {
        self.run_dir().join(format!("{daemon}.configured"))
    }
}

pub(crate) fn mark_configured(suite: &dyn Suite, daemon: &str, pid: u32) -> io::Result<()> {
    let marker = suite.configured_marker(daemon);
    fs::write(&marker, pid.to_string()).map_err(|e| at(&marker, e))
}

pub(crate) fn was_configured(suite: &dyn Suite, daemon: &str, pid: u32) -> bool {
    fs::read_to_string(suite.configured_marker(daemon)).is_ok_and(|s| s.trim() == pid.to_string())
}

/// Daemons of this VR that run now according to their pid files: (name, pid).
pub(crate) fn live_daemons(suite: &dyn Suite) -> Vec<(String, u32)> {
    let Ok(entries) = fs::read_dir(suite.run_dir()) else { return Vec::new() };
    let mut live: Vec<(String, u32)> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let daemon = name.strip_suffix(".pid")?;
            let pid: u32 = fs::read_to_string(suite.pid_file(daemon)).ok()?.trim().parse().ok()?;
            suite.is_daemon(daemon, pid).then(|| (daemon.to_string(), pid))
        })
        .collect();
    live.sort();
    live
}

/// Whether process `pid` carries `PEARL_VR=<vr>` in the environment it was started with.
pub(crate) fn started_for(vr: &str, pid: u32) -> bool {
    let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) else { return false };
    let want = format!("{VR_ENV}={vr}");
    environ.split(|&b| b == 0).any(|v| v == want.as_bytes())
}

/// Removes `dirs` where they exist.
pub(crate) fn remove_dirs(dirs: &[&Path]) -> io::Result<()> {
    for dir in dirs {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(at(dir, e)),
            _ => {}
        }
    }
    Ok(())
}

/// Copies `from` to `to` by way of a renamed temporary: a daemon restarting meanwhile reads
/// the old file or the new one, never half of one.
pub(crate) fn install_file(from: &Path, to: &Path) -> io::Result<()> {
    let staged = to.with_extension("new");
    fs::copy(from, &staged).map_err(|e| at(from, e))?;
    fs::rename(&staged, to).map_err(|e| at(to, e))
}

/// Whether `installed` holds what `source` holds now.
pub(crate) fn same_contents(installed: &Path, source: &Path) -> bool {
    matches!((fs::read(installed), fs::read(source)), (Ok(a), Ok(b)) if a == b)
}

/// A VR name that can name directories.
pub(crate) fn check_vr_name(kind: &str, vr: &str) -> io::Result<()> {
    if vr.is_empty() || vr.contains('/') || vr.starts_with('.') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{vr:?} cannot name a {kind} instance")));
    }
    let netns = Path::new("/run/netns").join(vr);
    fs::metadata(&netns).map(drop).map_err(|e| at(&netns, e))
}

/// What a checking tool printed, both streams.
pub(crate) fn output_text(out: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.trim().to_string()
}
