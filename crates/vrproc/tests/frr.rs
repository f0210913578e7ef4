//! FRR in a namespace, started, watched and stopped by `FrrInstance` (needs root and FRR).
//! Each test makes its own namespace `frr<pid><letter>` and removes it, its processes and its
//! files however the test ends.

use pearl_vrproc::{Cgroup, DaemonStatus, FrrInstance};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn name(suffix: &str) -> String {
    format!("frr{}{suffix}", std::process::id() % 100_000)
}

fn run(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A namespace with a veth pair inside (v0 10.9.0.1/24, v1 up), and whatever FRR of that name
/// left behind, removed when dropped.
struct Netns(String);

impl Netns {
    fn new(name: &str) -> Netns {
        let ns = Netns(name.to_string());
        ns.clean();
        run(&["ip", "netns", "add", name]);
        for cmd in [
            "link set lo up",
            "link add v0 type veth peer name v1",
            "addr add 10.9.0.1/24 dev v0",
            "link set v0 up",
            "link set v1 up",
        ] {
            let mut args = vec!["ip", "-n", name];
            args.extend(cmd.split(' '));
            run(&args);
        }
        ns
    }

    /// Processes whose command line names this instance (`-N <name>`).
    fn frr_pids(&self) -> Vec<u32> {
        let out = Command::new("pgrep").args(["-f", "--", &format!("-N {}( |$)", self.0)]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.parse().ok()).collect()
    }

    fn clean(&self) {
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
struct ConfigFile(PathBuf);

impl ConfigFile {
    fn new(ns: &str, text: &str) -> ConfigFile {
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

const CONFIG: &str = "frr defaults traditional
ip route 192.0.2.0/24 10.9.0.2
router bgp 65001
 bgp router-id 10.9.0.1
 no bgp ebgp-requires-policy
 neighbor 10.9.0.2 remote-as 65002
exit
";

fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn has_static_route(ns: &str) -> bool {
    let vtysh = run(&["vtysh", "-N", ns, "-c", "show ip route 192.0.2.0/24"]);
    let kernel = run(&["ip", "-n", ns, "route", "show", "192.0.2.0/24"]);
    vtysh.contains("Known via \"static\"") && kernel.contains("via 10.9.0.2 dev v0")
}

fn daemon<'a>(status: &'a [DaemonStatus], name: &str) -> &'a DaemonStatus {
    status.iter().find(|d| d.name == name).unwrap()
}

/// kill -9 `victim`; it must come back under a new pid, counted, `within` the time given.
fn crash_and_recover(frr: &FrrInstance, victim: &str, within: Duration) {
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

#[test]
fn static_routes_reach_the_kernel_crashed_daemons_come_back_and_stop_cleans_up() {
    let ns = Netns::new(&name("a"));
    let vr = ns.0.as_str();
    let cg = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let config = ConfigFile::new(vr, CONFIG);
    let frr = FrrInstance::start(vr, &["zebra", "staticd", "bgpd"], &config.0, &cg).unwrap();

    let status = frr.status();
    assert_eq!(status.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["zebra", "staticd", "bgpd"]);
    assert!(status.iter().all(|d| d.running && d.restarts == 0), "{status:?}");
    let mut in_cgroup = cg.pids().unwrap();
    in_cgroup.sort_unstable();
    let mut daemons: Vec<u32> = status.iter().map(|d| d.pid.unwrap()).collect();
    daemons.sort_unstable();
    assert_eq!(in_cgroup, daemons, "the daemons, and only they, run in the VR's cgroup");
    let vr_netns = run(&["ip", "netns", "exec", vr, "readlink", "/proc/self/ns/net"]);
    for d in &daemons {
        assert_eq!(std::fs::read_link(format!("/proc/{d}/ns/net")).unwrap(), Path::new(vr_netns.trim()));
    }
    wait_for("the static route in zebra and the kernel", Duration::from_secs(5), || has_static_route(vr));
    let bgp = run(&["vtysh", "-N", vr, "-c", "show bgp summary"]);
    assert!(bgp.contains("10.9.0.2"), "bgpd has its configuration: {bgp}");

    crash_and_recover(&frr, "bgpd", Duration::from_secs(2));
    let bgp = run(&["vtysh", "-N", vr, "-c", "show bgp summary"]);
    assert!(bgp.contains("10.9.0.2"), "the restarted bgpd got its configuration back: {bgp}");

    crash_and_recover(&frr, "staticd", Duration::from_secs(2));
    wait_for("the static route back", Duration::from_secs(5), || has_static_route(vr));

    // zebra's successor keeps the dead one's kernel routes while staticd reconnects.
    crash_and_recover(&frr, "zebra", Duration::from_secs(2));
    assert!(run(&["ip", "-n", vr, "route", "show", "192.0.2.0/24"]).contains("via 10.9.0.2"));
    wait_for("the static route in the new zebra", Duration::from_secs(20), || has_static_route(vr));
    assert_eq!(cg.pids().unwrap().len(), 3, "restarted daemons run in the cgroup too");

    let again = FrrInstance::start(vr, &["zebra"], &config.0, &cg).err().expect("a second instance is refused");
    assert!(again.to_string().contains("already runs for this VR"), "{again}");

    frr.stop().unwrap();
    assert_eq!(ns.frr_pids(), Vec::<u32>::new(), "no daemon survives stop");
    assert!(cg.pids().unwrap().is_empty());
    assert!(!Path::new(&format!("/var/run/frr/{vr}")).exists());
    assert!(!Path::new(&format!("/etc/frr/{vr}")).exists());
    cg.remove().unwrap();
}

#[test]
fn a_daemon_that_keeps_dying_comes_back_ever_later() {
    let ns = Netns::new(&name("c"));
    let vr = ns.0.as_str();
    let cg = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let config = ConfigFile::new(vr, "ip route 192.0.2.0/24 10.9.0.2\n");
    let frr = FrrInstance::start(vr, &["zebra", "staticd"], &config.0, &cg).unwrap();
    let mut gaps = Vec::new();
    for _ in 0..4 {
        let t = Instant::now();
        crash_and_recover(&frr, "staticd", Duration::from_secs(3));
        gaps.push(t.elapsed());
    }
    // Backoff 0.1, 0.2, 0.4, 0.8 s; a restart without it takes ~0.3 s here.
    assert!(gaps[3] >= Duration::from_millis(800), "{gaps:?}");
    assert_eq!(daemon(&frr.status(), "staticd").restarts, 4);
    assert_eq!(daemon(&frr.status(), "zebra").restarts, 0);
    frr.stop().unwrap();
    assert!(ns.frr_pids().is_empty());
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let ns = Netns::new(&name("b"));
    let vr = ns.0.as_str();
    let cg = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let good = ConfigFile::new(vr, CONFIG);
    let bad = ConfigFile::new(&format!("{vr}bad"), "ip route 192.0.2.0/24 10.9.0.2\nbogus command\n");
    let absent = Path::new("/nonexistent/frr.conf");
    let cases: [(&str, &[&str], &Path, &str); 6] = [
        (vr, &["staticd"], &good.0, "zebra must come first"),
        (vr, &["zebra", "staticd", "staticd"], &good.0, "staticd is listed twice"),
        (vr, &["zebra", "nosuchd"], &good.0, "/usr/lib/frr/nosuchd: no such FRR daemon"),
        ("frrnons", &["zebra"], &good.0, "/run/netns/frrnons: No such file"),
        (vr, &["zebra"], absent, "/nonexistent/frr.conf: No such file"),
        (vr, &["zebra"], &bad.0, "Unknown command"),
    ];
    for (name, daemons, config, want) in cases {
        let err = FrrInstance::start(name, daemons, config, &cg).err().expect(want).to_string();
        assert!(err.contains(want), "want {want:?} in {err:?}");
        assert!(ns.frr_pids().is_empty() && cg.pids().unwrap().is_empty(), "{want}: something runs");
        assert!(!Path::new(&format!("/var/run/frr/{vr}")).exists(), "{want}: a run dir was made");
    }
}
