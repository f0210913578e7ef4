//! BIRD 2 as a VR's routing suite: one `bird` in the foreground with its configuration, its
//! control socket and its pid file under /run/pearl/bird/<vr>/, so that instances in several
//! namespaces run side by side and a later pearld finds the one that outlived it. BIRD reads its
//! configuration when it starts; `birdc -s /run/pearl/bird/<vr>/bird.ctl configure` reloads it.

use super::suite::{self, output_text, NotReady, Suite};
use crate::cgroup::at;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BINARY: &str = "/usr/sbin/bird";
const RUN_ROOT: &str = "/run/pearl/bird";
const LOG_DIR: &str = "/var/log/pearl";
const DAEMON: &str = "bird";

#[derive(Debug, Clone)]
pub struct Bird {
    vr: String,
    daemons: Vec<String>,
    source: PathBuf,
    run_dir: PathBuf,
    log: PathBuf,
}

impl Bird {
    pub fn new(vr: &str, config: &Path) -> Bird {
        Bird {
            vr: vr.to_string(),
            daemons: vec![DAEMON.to_string()],
            source: config.to_path_buf(),
            run_dir: Bird::run_dir_of(vr),
            log: Path::new(LOG_DIR).join(format!("{vr}.bird.log")),
        }
    }

    fn run_dir_of(vr: &str) -> PathBuf {
        Path::new(RUN_ROOT).join(vr)
    }

    /// The control socket of VR `vr`'s BIRD, for `birdc -s`.
    pub fn socket_of(vr: &str) -> PathBuf {
        Bird::run_dir_of(vr).join("bird.ctl")
    }

    fn config(&self) -> PathBuf {
        self.run_dir.join("bird.conf")
    }
}

impl Suite for Bird {
    fn kind(&self) -> &'static str {
        "bird"
    }

    fn vr(&self) -> &str {
        &self.vr
    }

    fn daemons(&self) -> &[String] {
        &self.daemons
    }

    /// `bird -p` parses the configuration and exits.
    fn check(&self) -> io::Result<()> {
        if !Path::new(BINARY).is_file() {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{BINARY}: not installed (Debian: apt install bird2)")));
        }
        suite::check_vr_name(self.kind(), &self.vr)?;
        fs::File::open(&self.source).map_err(|e| at(&self.source, e))?;
        let out = Command::new(BINARY)
            .arg("-p")
            .arg("-c")
            .arg(&self.source)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| io::Error::new(e.kind(), format!("{BINARY} -p: {e}")))?;
        if out.status.success() {
            return Ok(());
        }
        Err(io::Error::new(io::ErrorKind::InvalidData, format!("{}: bird -p: {}", self.source.display(), output_text(&out))))
    }

    fn install(&self) -> io::Result<()> {
        fs::create_dir_all(&self.run_dir).map_err(|e| at(&self.run_dir, e))?;
        suite::install_file(&self.source, &self.config())
    }

    fn remove(&self) -> io::Result<()> {
        suite::remove_dirs(&[&self.run_dir])
    }

    fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    fn log(&self) -> &Path {
        &self.log
    }

    fn stale_files(&self, _daemon: &str) -> Vec<PathBuf> {
        vec![Bird::socket_of(&self.vr)]
    }

    fn argv(&self, daemon: &str) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![BINARY.into(), "-f".into(), "-c".into(), self.config().into(), "-s".into()];
        argv.extend([Bird::socket_of(&self.vr).into(), "-P".into(), self.pid_file(daemon).into()]);
        argv
    }

    fn writes_pid_file(&self) -> bool {
        true
    }

    fn ready(&self, _daemon: &str) -> Result<(), NotReady> {
        let socket = Bird::socket_of(&self.vr);
        UnixStream::connect(&socket).map(drop).map_err(|_| NotReady::Open(socket))
    }

    /// Its command line runs bird with this VR's control socket.
    fn is_daemon(&self, _daemon: &str, pid: u32) -> bool {
        let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else { return false };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let socket = Bird::socket_of(&self.vr);
        args.first() == Some(&BINARY.as_bytes()) && args.windows(2).any(|w| w[0] == b"-s" && w[1] == socket.as_os_str().as_encoded_bytes())
    }

    /// BIRD read it when it started.
    fn apply_config(&self, _daemon: Option<&str>) -> io::Result<()> {
        Ok(())
    }

    fn runs_config(&self) -> bool {
        suite::same_contents(&self.config(), &self.source)
    }
}
