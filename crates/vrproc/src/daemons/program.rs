//! An owner's own routing program as a VR's control plane (GoBGP, ExaBGP, a script): run in
//! the VR's namespace and cgroup from the directory of pearld's configuration file, restarted
//! with back-off when it ends. It writes no pid file, so pearld writes one under
//! /run/pearl/command/<vr>/, and knows it again after a restart by the `PEARL_VR=<vr>` it was
//! started with.

use super::suite::{self, NotReady, Suite};
use crate::cgroup::at;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const RUN_ROOT: &str = "/run/pearl/command";
const LOG_DIR: &str = "/var/log/pearl";

#[derive(Debug, Clone)]
pub struct OwnProgram {
    vr: String,
    /// The program's file name.
    daemons: Vec<String>,
    argv: Vec<String>,
    workdir: PathBuf,
    run_dir: PathBuf,
    log: PathBuf,
}

impl OwnProgram {
    /// `argv[0]` is the program's path; it runs in `workdir`.
    pub fn new(vr: &str, argv: &[String], workdir: &Path) -> OwnProgram {
        let program = argv.first().map(|p| Path::new(p).file_name().map_or(p.clone(), |n| n.to_string_lossy().into_owned()));
        OwnProgram {
            vr: vr.to_string(),
            daemons: program.into_iter().collect(),
            argv: argv.to_vec(),
            workdir: workdir.to_path_buf(),
            run_dir: Path::new(RUN_ROOT).join(vr),
            log: Path::new(LOG_DIR).join(format!("{vr}.command.log")),
        }
    }
}

impl Suite for OwnProgram {
    fn kind(&self) -> &'static str {
        "command"
    }

    fn vr(&self) -> &str {
        &self.vr
    }

    fn daemons(&self) -> &[String] {
        &self.daemons
    }

    fn check(&self) -> io::Result<()> {
        let Some(program) = self.argv.first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no program to run"));
        };
        let path = Path::new(program);
        let meta = fs::metadata(path).map_err(|e| at(path, e))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("{program}: not an executable file")));
        }
        suite::check_vr_name(self.kind(), &self.vr)?;
        fs::metadata(&self.workdir).map(drop).map_err(|e| at(&self.workdir, e))
    }

    fn install(&self) -> io::Result<()> {
        fs::create_dir_all(&self.run_dir).map_err(|e| at(&self.run_dir, e))
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
        Vec::new()
    }

    fn argv(&self, _daemon: &str) -> Vec<OsString> {
        self.argv.iter().map(OsString::from).collect()
    }

    fn workdir(&self) -> Option<&Path> {
        Some(&self.workdir)
    }

    fn writes_pid_file(&self) -> bool {
        false
    }

    /// Nothing to wait for: a program that ends at once is restarted with back-off.
    fn ready(&self, _daemon: &str) -> Result<(), NotReady> {
        Ok(())
    }

    fn is_daemon(&self, _daemon: &str, pid: u32) -> bool {
        suite::started_for(&self.vr, pid)
    }

    /// The program is its own configuration.
    fn apply_config(&self, _daemon: Option<&str>) -> io::Result<()> {
        Ok(())
    }

    fn runs_config(&self) -> bool {
        true
    }
}
