//! pearld as a benchmark runs it: one process in the router namespace, pinned to the router
//! CPU, checked to run every port on the driver asked for, its CPU time read from /proc, and
//! stopped through its API when the run ends.

use crate::netns::{next_hop_mac, Family};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A pearld process in the router namespace, pinned to the router CPU, stopped on drop.
pub struct Pearld {
    child: Child,
    dir: PathBuf,
}

impl Pearld {
    pub fn start(binary: &Path, netns: &str, config_yaml: &str, driver: &str, cpu: usize, prefix: &str) -> Result<Pearld, String> {
        let dir = std::env::temp_dir().join(format!("{prefix}-pearld"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let config = dir.join("pearl.yaml");
        std::fs::write(&config, config_yaml).map_err(|e| format!("{}: {e}", config.display()))?;
        let api = dir.join("pearl.sock");
        let _ = std::fs::remove_file(&api);
        let log_path = dir.join("pearld.log");
        let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| format!("{}: {e}", log_path.display()))?;
        // taskset and `ip netns exec` both exec, so the child's pid is pearld's own.
        let child = Command::new("taskset")
            .arg("-c")
            .arg(cpu.to_string())
            .args(["ip", "netns", "exec", netns])
            .arg(binary)
            .arg("--config")
            .arg(&config)
            .arg("--api")
            .arg(&api)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let mut daemon = Pearld { child, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = daemon.child.try_wait() {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(format!("pearld exited ({status}) before it came up: {}", log.trim()));
            }
            // The API answers only once every port is open and the workers run.
            if UnixStream::connect(&api).is_ok() {
                break;
            }
            if Instant::now() > deadline {
                return Err("pearld did not come up within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // pearld may run an af_xdp port on AF_PACKET instead (and says so): that would be
        // measuring the wrong driver.
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(line) = log.lines().find(|l| l.starts_with("pearld: ports[") && runs_on(l) != driver_name(driver)) {
            return Err(format!("pearld did not run every port on {driver}: {line}"));
        }
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", daemon.child.id())).unwrap_or_default();
        if comm.trim() != "pearld" {
            return Err(format!("pid {} is {:?}, not pearld: its CPU time would be someone else's", daemon.child.id(), comm.trim()));
        }
        Ok(daemon)
    }

    /// Writes each VR's route to the benchmark prefix into its XDP router's trie (`routes` of
    /// examples/xdp/router.c: prefix → interface 1 and the sink's MAC), with pearlctl.
    pub fn route_in_xdp_tries(&self, pearld: &Path, family: Family, vrs: usize, prefix: &str) -> Result<(), String> {
        if family != Family::V4 {
            return Err("--kinds xdp-lpm: examples/xdp/router.c routes IPv4 only".into());
        }
        let pearlctl = pearld.with_file_name("pearlctl");
        let key = [&15u32.to_le_bytes()[..], &[198, 18, 0, 0]].concat();
        for v in 1..=vrs {
            let value = [&1u32.to_le_bytes()[..], &next_hop_mac(v), &[2, 0, 0, 0, v as u8, 1]].concat();
            let hex = |b: &[u8]| format!("0x{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>());
            let done = Command::new(&pearlctl)
                .arg("--socket")
                .arg(self.dir.join("pearl.sock"))
                .args(["plugin", "table", &format!("{prefix}v{v}"), "routes", "set", &hex(&key), &hex(&value)])
                .output()
                .map_err(|e| format!("{}: {e}", pearlctl.display()))?;
            if !done.status.success() {
                return Err(format!("pearlctl plugin table set: {}", String::from_utf8_lossy(&done.stderr).trim()));
            }
        }
        Ok(())
    }

    /// (utime, stime) of the whole process and of its children (a process plugin's program runs
    /// in one: its time is the VR's forwarding too), in clock ticks.
    pub fn cpu_ticks(&self) -> Result<(u64, u64), String> {
        let me = self.child.id();
        let (_, mut user, mut system) = stat_ticks(me)?;
        for entry in std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            // A process that ended meanwhile is simply not counted.
            if let Ok((parent, u, s)) = stat_ticks(pid) {
                if parent == me {
                    user += u;
                    system += s;
                }
            }
        }
        Ok((user, system))
    }

    /// SIGTERM, then a bounded wait, then SIGKILL; errors if pearld died on its own.
    pub fn stop(mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(format!("pearld died during the run ({status}); log in {}", self.dir.display())),
            _ => {
                self.terminate();
                Ok(())
            }
        }
    }

    /// `POST /v1/node/stop` (SIGTERM would leave the VRs running for a next pearld), SIGTERM if
    /// the API does not take it, then a bounded wait, then SIGKILL.
    fn terminate(&mut self) {
        if !self.node_stop() {
            // SAFETY: kill has no memory effects; the pid is our own child, not yet reaped.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Pearld {
    /// Whether pearld took `POST /v1/node/stop`: it then removes its VRs and exits.
    fn node_stop(&self) -> bool {
        let Ok(mut s) = UnixStream::connect(self.dir.join("pearl.sock")) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let request = "POST /v1/node/stop HTTP/1.1\r\nHost: pearld\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let mut head = [0u8; 12];
        std::io::Write::write_all(&mut s, request.as_bytes()).is_ok()
            && std::io::Read::read_exact(&mut s, &mut head).is_ok()
            && head.starts_with(b"HTTP/1.1 2")
    }
}

impl Drop for Pearld {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The driver a pearld stderr line `pearld: ports[N] (IF): DRIVER, details` names.
fn runs_on(line: &str) -> &str {
    line.split_once("): ").and_then(|(_, rest)| rest.split([',', ' ']).next()).unwrap_or("")
}

/// How pearld's stderr names a driver a port runs on.
fn driver_name(driver: &str) -> &'static str {
    if driver == "af_xdp" {
        "AF_XDP"
    } else {
        "AF_PACKET"
    }
}

/// (parent pid, utime, stime) of process `pid`, from /proc/PID/stat.
fn stat_ticks(pid: u32) -> Result<(u32, u64, u64), String> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // Fields after the parenthesised command name: state, ppid (4th), …, utime and stime (14th, 15th).
    let fields: Vec<&str> = text.rsplit_once(')').map(|(_, r)| r).unwrap_or("").split_whitespace().collect();
    let number = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    match (number(1), number(11), number(12)) {
        (Some(ppid), Some(utime), Some(stime)) => Ok((ppid as u32, utime, stime)),
        _ => Err(format!("{path}: cannot parse {text:?}")),
    }
}
