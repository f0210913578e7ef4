//! FRR as a VR's routing suite. FRR's `-N <vr>` ("pathspace") option puts each instance's
//! configuration in /etc/frr/<vr>/ and its sockets and pid files in /var/run/frr/<vr>/, so
//! instances in several namespaces run side by side; the pid files are also how a later pearld
//! finds the daemons of a VR that outlived it. FRR's watchfrr is not used: pearld is the
//! supervisor. The daemons read their part of the integrated frr.conf from vtysh once they
//! serve their vty, as FRR's own init scripts hand it over.

use super::suite::{self, output_text, NotReady, Suite};
use crate::cgroup::at;
use crate::sys;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN_DIR: &str = "/usr/lib/frr";
const CONF_ROOT: &str = "/etc/frr";
const RUN_ROOT: &str = "/var/run/frr";
const LOG_DIR: &str = "/var/log/frr";
/// The user FRR's Debian build drops to; the instance's files must be readable by it.
const FRR_USER: &str = "frr";
/// zebra's `-K`: after a zebra crash, the restarted zebra keeps the kernel routes the dead one
/// installed for this long, so forwarding goes on while the other daemons reconnect (they
/// take ~10 s) and re-send their routes.
const ZEBRA_KEEP_ROUTES_SECS: &str = "60";

/// One VR's FRR: its daemons (zebra first) and its integrated configuration.
#[derive(Debug, Clone)]
pub struct Frr {
    vr: String,
    daemons: Vec<String>,
    /// The frr.conf given, copied into `conf_dir` at start.
    source: PathBuf,
    conf_dir: PathBuf,
    run_dir: PathBuf,
    log: PathBuf,
}

impl Frr {
    pub fn new<S: AsRef<str>>(vr: &str, daemons: &[S], config: &Path) -> Frr {
        Frr {
            vr: vr.to_string(),
            daemons: daemons.iter().map(|d| d.as_ref().to_string()).collect(),
            source: config.to_path_buf(),
            conf_dir: Path::new(CONF_ROOT).join(vr),
            run_dir: Path::new(RUN_ROOT).join(vr),
            log: Path::new(LOG_DIR).join(format!("{vr}.log")),
        }
    }

    fn binary(daemon: &str) -> PathBuf {
        Path::new(BIN_DIR).join(daemon)
    }

    fn vty_socket(&self, daemon: &str) -> PathBuf {
        self.run_dir.join(format!("{daemon}.vty"))
    }

    /// zebra's socket for the other daemons.
    fn zserv_socket(&self) -> PathBuf {
        self.run_dir.join("zserv.api")
    }

    fn config(&self) -> PathBuf {
        self.conf_dir.join("frr.conf")
    }

    /// Checks the configuration's syntax without any daemon (`vtysh --dryrun`).
    fn check_config(&self) -> io::Result<()> {
        let out = vtysh(Command::new("vtysh").arg("-C").arg("-f").arg(&self.source))?;
        if out.status.success() {
            return Ok(());
        }
        Err(io::Error::new(io::ErrorKind::InvalidData, format!("{}: {}", self.source.display(), output_text(&out))))
    }
}

impl Suite for Frr {
    fn kind(&self) -> &'static str {
        "frr"
    }

    fn vr(&self) -> &str {
        &self.vr
    }

    fn daemons(&self) -> &[String] {
        &self.daemons
    }

    fn check(&self) -> io::Result<()> {
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let daemons = &self.daemons;
        if daemons.first().map(String::as_str) != Some("zebra") {
            return Err(invalid(format!("daemons {daemons:?}: zebra must come first")));
        }
        for (i, d) in daemons.iter().enumerate() {
            if daemons[..i].contains(d) {
                return Err(invalid(format!("daemons {daemons:?}: {d} is listed twice")));
            }
            let bin = Frr::binary(d);
            if d.contains('/') || !bin.is_file() {
                return Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such FRR daemon", bin.display())));
            }
        }
        suite::check_vr_name(self.kind(), &self.vr)?;
        fs::File::open(&self.source).map_err(|e| at(&self.source, e))?;
        self.check_config()
    }

    fn install(&self) -> io::Result<()> {
        let (uid, gid) = sys::user_ids(FRR_USER)?;
        let own = |path: &Path, mode: u32| -> io::Result<()> {
            chown(path, Some(uid), Some(gid)).map_err(|e| at(path, e))?;
            fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| at(path, e))
        };
        for (dir, mode) in [(&self.conf_dir, 0o750), (&self.run_dir, 0o755)] {
            fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
            own(dir, mode)?;
        }
        let conf = self.config();
        suite::install_file(&self.source, &conf)?;
        own(&conf, 0o640)?;
        // Integrated mode: `write memory` in vtysh writes frr.conf, the one file every
        // daemon's part is read from.
        let vtysh = self.conf_dir.join("vtysh.conf");
        fs::write(&vtysh, "service integrated-vtysh-config\n").map_err(|e| at(&vtysh, e))?;
        own(&vtysh, 0o640)?;
        fs::create_dir_all(LOG_DIR).map_err(|e| at(Path::new(LOG_DIR), e))
    }

    fn remove(&self) -> io::Result<()> {
        suite::remove_dirs(&[&self.run_dir, &self.conf_dir])
    }

    fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    fn log(&self) -> &Path {
        &self.log
    }

    fn stale_files(&self, daemon: &str) -> Vec<PathBuf> {
        let mut stale = vec![self.vty_socket(daemon)];
        if daemon == "zebra" {
            stale.push(self.zserv_socket());
        }
        stale
    }

    fn argv(&self, daemon: &str) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![Frr::binary(daemon).into()];
        argv.extend(["-N", &self.vr, "-P", "0", "--log", "stdout", "-i"].map(OsString::from));
        argv.push(self.pid_file(daemon).into());
        if daemon == "zebra" {
            argv.extend(["-K", ZEBRA_KEEP_ROUTES_SECS].map(OsString::from));
        }
        argv
    }

    fn writes_pid_file(&self) -> bool {
        true
    }

    fn ready(&self, daemon: &str) -> Result<(), NotReady> {
        let vty = self.vty_socket(daemon);
        if UnixStream::connect(&vty).is_err() {
            return Err(NotReady::Open(vty));
        }
        if daemon == "zebra" && !self.zserv_socket().exists() {
            return Err(NotReady::Open(self.zserv_socket()));
        }
        Ok(())
    }

    /// Its command line runs the daemon's binary with `-N <vr>`.
    fn is_daemon(&self, daemon: &str, pid: u32) -> bool {
        let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else { return false };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let binary = Frr::binary(daemon);
        args.first() == Some(&binary.as_os_str().as_encoded_bytes()) && args.windows(2).any(|w| w[0] == b"-N" && w[1] == self.vr.as_bytes())
    }

    /// `vtysh -b`, for all daemons or the one just restarted.
    fn apply_config(&self, daemon: Option<&str>) -> io::Result<()> {
        let mut cmd = Command::new("vtysh");
        cmd.args(["-N", &self.vr, "-b"]);
        if let Some(d) = daemon {
            cmd.args(["-d", d]);
        }
        let out = vtysh(&mut cmd)?;
        if out.status.success() {
            return Ok(());
        }
        Err(io::Error::other(format!("{}: vtysh -b ({}): {}", self.config().display(), out.status, output_text(&out))))
    }

    fn runs_config(&self) -> bool {
        suite::same_contents(&self.config(), &self.source)
    }
}

fn vtysh(cmd: &mut Command) -> io::Result<std::process::Output> {
    cmd.stdin(Stdio::null()).output().map_err(|e| io::Error::new(e.kind(), format!("vtysh: {e}")))
}
