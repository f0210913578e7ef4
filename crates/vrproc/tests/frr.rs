//! FRR in a namespace, started, watched and stopped by `Daemons` with the `Frr` suite (needs root and FRR).
//! Each test makes its own namespace `frr<pid><letter>` and removes it, its processes and its
//! files however the test ends.

mod common;

use common::{crash_and_recover, daemon, has_static_route, name, run, wait_for, ConfigFile, Netns};
use pearl_vrproc::{Cgroup, Daemons, Frr};
use std::path::Path;
use std::time::{Duration, Instant};

const CONFIG: &str = "frr defaults traditional
ip route 192.0.2.0/24 10.9.0.2
router bgp 65001
 bgp router-id 10.9.0.1
 no bgp ebgp-requires-policy
 neighbor 10.9.0.2 remote-as 65002
exit
";

#[test]
fn static_routes_reach_the_kernel_crashed_daemons_come_back_and_stop_cleans_up() {
    let ns = Netns::new(&name("a"));
    let vr = ns.0.as_str();
    let cg = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let config = ConfigFile::new(vr, CONFIG);
    let frr = Daemons::start(Box::new(Frr::new(vr, &["zebra", "staticd", "bgpd"], &config.0)), &cg).unwrap();

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

    let again = Daemons::start(Box::new(Frr::new(vr, &["zebra"], &config.0)), &cg).err().expect("a second instance is refused");
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
    let frr = Daemons::start(Box::new(Frr::new(vr, &["zebra", "staticd"], &config.0)), &cg).unwrap();
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
    assert_eq!(daemon(&frr.status(), "staticd").last_exit.as_deref(), Some("signal: 9 (SIGKILL)"));
    assert_eq!(daemon(&frr.status(), "zebra").last_exit, None, "zebra never ended");
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
        let err = Daemons::start(Box::new(Frr::new(name, daemons, config)), &cg).err().expect(want).to_string();
        assert!(err.contains(want), "want {want:?} in {err:?}");
        assert!(ns.frr_pids().is_empty() && cg.pids().unwrap().is_empty(), "{want}: something runs");
        assert!(!Path::new(&format!("/var/run/frr/{vr}")).exists(), "{want}: a run dir was made");
    }
}
