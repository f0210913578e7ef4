//! Where one VR's FRR instance keeps its files. FRR's `-N <vr>` ("pathspace") option puts each
//! instance's configuration in /etc/frr/<vr>/ and its sockets and pid files in
//! /var/run/frr/<vr>/, so instances in several namespaces run side by side. The pid files are
//! also how a later pearld can find the daemons of a VR that outlived it.

use crate::cgroup::at;
use crate::sys;
use std::fs;
use std::io;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};

const BIN_DIR: &str = "/usr/lib/frr";
const CONF_ROOT: &str = "/etc/frr";
const RUN_ROOT: &str = "/var/run/frr";
const LOG_DIR: &str = "/var/log/frr";
/// The user FRR's Debian build drops to; the instance's files must be readable by it.
const FRR_USER: &str = "frr";

#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub vr: String,
    pub conf_dir: PathBuf,
    pub run_dir: PathBuf,
    /// The daemons' stdout and stderr, appended: kept after the instance stops.
    pub log: PathBuf,
}

impl Layout {
    pub fn new(vr: &str) -> Layout {
        Layout {
            vr: vr.to_string(),
            conf_dir: Path::new(CONF_ROOT).join(vr),
            run_dir: Path::new(RUN_ROOT).join(vr),
            log: Path::new(LOG_DIR).join(format!("{vr}.log")),
        }
    }

    pub fn binary(&self, daemon: &str) -> PathBuf {
        Path::new(BIN_DIR).join(daemon)
    }

    pub fn pid_file(&self, daemon: &str) -> PathBuf {
        self.run_dir.join(format!("{daemon}.pid"))
    }

    pub fn vty_socket(&self, daemon: &str) -> PathBuf {
        self.run_dir.join(format!("{daemon}.vty"))
    }

    /// zebra's socket for the other daemons.
    pub fn zserv_socket(&self) -> PathBuf {
        self.run_dir.join("zserv.api")
    }

    pub fn config(&self) -> PathBuf {
        self.conf_dir.join("frr.conf")
    }

    /// Where pearld notes that `daemon` was handed its configuration (the file holds the pid
    /// that got it), so that a later pearld can tell a daemon it may leave alone from one whose
    /// configuration push a dying pearld never made.
    pub fn configured_marker(&self, daemon: &str) -> PathBuf {
        self.run_dir.join(format!("{daemon}.configured"))
    }

    pub fn mark_configured(&self, daemon: &str, pid: u32) -> io::Result<()> {
        let marker = self.configured_marker(daemon);
        fs::write(&marker, pid.to_string()).map_err(|e| at(&marker, e))
    }

    pub fn was_configured(&self, daemon: &str, pid: u32) -> bool {
        fs::read_to_string(self.configured_marker(daemon)).is_ok_and(|s| s.trim() == pid.to_string())
    }

    /// Daemons of this VR that run now according to their pid files: (name, pid).
    pub fn live_daemons(&self) -> Vec<(String, u32)> {
        let Ok(entries) = fs::read_dir(&self.run_dir) else { return Vec::new() };
        let mut live: Vec<(String, u32)> = entries
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let daemon = name.strip_suffix(".pid")?;
                let pid: u32 = fs::read_to_string(self.pid_file(daemon)).ok()?.trim().parse().ok()?;
                self.is_daemon(daemon, pid).then(|| (daemon.to_string(), pid))
            })
            .collect();
        live.sort();
        live
    }

    /// Whether process `pid` is this VR's `daemon` (not a stale pid file, not a recycled pid):
    /// its command line runs the daemon's binary with `-N <vr>`.
    pub fn is_daemon(&self, daemon: &str, pid: u32) -> bool {
        let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else { return false };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let binary = self.binary(daemon);
        args.first() == Some(&binary.as_os_str().as_encoded_bytes()) && args.windows(2).any(|w| w[0] == b"-N" && w[1] == self.vr.as_bytes())
    }

    /// Fresh configuration and run directories owned by FRR's user, `config` copied in.
    pub fn prepare(&self, config: &Path) -> io::Result<()> {
        self.remove()?;
        self.install(config)
    }

    /// Makes the directories where missing and puts `config` in place of frr.conf, leaving the
    /// run directory's sockets and pid files alone: daemons that run keep running, and the
    /// ones started (or restarted) later read the new file.
    pub fn install(&self, config: &Path) -> io::Result<()> {
        let (uid, gid) = sys::user_ids(FRR_USER)?;
        let own = |path: &Path, mode: u32| -> io::Result<()> {
            chown(path, Some(uid), Some(gid)).map_err(|e| at(path, e))?;
            fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| at(path, e))
        };
        for (dir, mode) in [(&self.conf_dir, 0o750), (&self.run_dir, 0o755)] {
            fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
            own(dir, mode)?;
        }
        // Renamed into place: a daemon restarting meanwhile reads the old file or the new one,
        // never half of one.
        let conf = self.config();
        let staged = self.conf_dir.join("frr.conf.new");
        fs::copy(config, &staged).map_err(|e| at(config, e))?;
        own(&staged, 0o640)?;
        fs::rename(&staged, &conf).map_err(|e| at(&conf, e))?;
        // Integrated mode: `write memory` in vtysh writes frr.conf, the one file every
        // daemon's part is read from.
        let vtysh = self.conf_dir.join("vtysh.conf");
        fs::write(&vtysh, "service integrated-vtysh-config\n").map_err(|e| at(&vtysh, e))?;
        own(&vtysh, 0o640)?;
        fs::create_dir_all(LOG_DIR).map_err(|e| at(Path::new(LOG_DIR), e))
    }

    /// Removes the configuration and run directories (the log stays).
    pub fn remove(&self) -> io::Result<()> {
        for dir in [&self.run_dir, &self.conf_dir] {
            match fs::remove_dir_all(dir) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(at(dir, e)),
                _ => {}
            }
        }
        Ok(())
    }
}
