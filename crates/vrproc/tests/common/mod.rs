//! Namespaces, configuration files and waits for the FRR tests. A test names its namespaces
//! `frr<pid><suffix>`, so that tests running side by side, and test binaries, never share one;
//! everything a namespace's name leads to (processes, FRR files) goes when it is dropped.

#![allow(dead_code, reason = "each test file uses its own part")]

use pearl_vrproc::DaemonStatus;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub fn name(suffix: &str) -> String {
    format!("frr{}{suffix}", std::process::id() % 100_000)
}

pub fn run(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A network namespace, and whatever FRR of that name left behind, removed when dropped.
pub struct Netns(pub String);

impl Netns {
    /// A namespace with a veth pair inside (v0 10.9.0.1/24, v1 up).
    pub fn new(name: &str) -> Netns {
        let ns = Netns::bare(name);
        ns.ip("link add v0 type veth peer name v1");
        ns.ip("addr add 10.9.0.1/24 dev v0");
        ns.ip("link set v0 up");
        ns.ip("link set v1 up");
        ns
    }

    /// Two namespaces joined by a veth pair: v0 10.9.0.1/24 in `name`, v1 10.9.0.2/24 in
    /// `peer`.
    pub fn pair(name: &str, peer: &str) -> (Netns, Netns) {
        let (a, b) = (Netns::bare(name), Netns::bare(peer));
        a.ip(&format!("link add v0 type veth peer name v1 netns {peer}"));
        a.ip("addr add 10.9.0.1/24 dev v0");
        a.ip("link set v0 up");
        b.ip("addr add 10.9.0.2/24 dev v1");
        b.ip("link set v1 up");
        (a, b)
    }

    /// With `lo` up and nothing else.
    pub fn bare(name: &str) -> Netns {
        let ns = Netns(name.to_string());
        ns.clean();
        run(&["ip", "netns", "add", name]);
        ns.ip("link set lo up");
        ns
    }

    /// `ip -n NAME ARGS`.
    pub fn ip(&self, args: &str) -> String {
        let mut all = vec!["ip", "-n", &self.0];
        all.extend(args.split(' '));
        run(&all)
    }

    /// Processes whose command line names this instance (`-N <name>`).
    pub fn frr_pids(&self) -> Vec<u32> {
        let out = Command::new("pgrep").args(["-f", "--", &format!("-N {}( |$)", self.0)]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.parse().ok()).collect()
    }

    /// The pid in `daemon`'s pid file.
    pub fn pid_file(&self, daemon: &str) -> Option<u32> {
        std::fs::read_to_string(format!("/var/run/frr/{}/{daemon}.pid", self.0)).ok()?.trim().parse().ok()
    }

    pub fn clean(&self) {
        let mut pids = self.frr_pids();
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &self.0]).output() {
            pids.extend(String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.parse::<u32>().ok()));
        }
        for pid in pids {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.0]).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(format!("/etc/frr/{}", self.0));
        let _ = std::fs::remove_dir_all(format!("/var/run/frr/{}", self.0));
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.clean();
        let _ = std::fs::remove_file(format!("/var/log/frr/{}.log", self.0));
    }
}

/// A configuration file, removed when dropped.
pub struct ConfigFile(pub PathBuf);

impl ConfigFile {
    pub fn new(ns: &str, text: &str) -> ConfigFile {
        let path = std::env::temp_dir().join(format!("{ns}-frr.conf"));
        std::fs::write(&path, text).unwrap();
        ConfigFile(path)
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// 192.0.2.0/24 via 10.9.0.2 from staticd, in zebra and in the kernel.
pub fn has_static_route(ns: &str) -> bool {
    let vtysh = run(&["vtysh", "-N", ns, "-c", "show ip route 192.0.2.0/24"]);
    let kernel = run(&["ip", "-n", ns, "route", "show", "192.0.2.0/24"]);
    vtysh.contains("Known via \"static\"") && kernel.contains("via 10.9.0.2 dev v0")
}

pub fn daemon<'a>(status: &'a [DaemonStatus], name: &str) -> &'a DaemonStatus {
    status.iter().find(|d| d.name == name).unwrap()
}

/// kill -9 `victim`; it must come back under a new pid, counted, `within` the time given.
pub fn crash_and_recover(frr: &pearl_vrproc::Daemons, victim: &str, within: Duration) {
    let before = daemon(&frr.status(), victim).clone();
    run(&["kill", "-9", &before.pid.unwrap().to_string()]);
    let t = Instant::now();
    wait_for(&format!("{victim} restarted"), within, || {
        let now = frr.status();
        let d = daemon(&now, victim);
        d.running && d.pid != before.pid && d.restarts == before.restarts + 1
    });
    eprintln!("{victim} back after {:?}", t.elapsed());
}
