//! Taking over FRR daemons that outlived a killed pearld (needs root and FRR). The killed
//! pearld is this test binary run again in a child process (`helper_pearld`), which starts the
//! VR's FRR as pearld does and is then killed with SIGKILL. Namespaces are `frr<pid><suffix>`
//! and go, with their processes and files, however a test ends.

mod common;

use common::{crash_and_recover, daemon, has_static_route, name, run, wait_for, ConfigFile, Netns};
use pearl_vrproc::{Adoption, Cgroup, DaemonEvent, Daemons, Frr};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Tells the helper what to start: "VR;DAEMON,DAEMON…;CONFIG".
const HELPER: &str = "PEARL_TEST_FRR_HELPER";
const HELPER_READY: &str = "helper: FRR is up";

const DAEMONS: [&str; 3] = ["zebra", "staticd", "bgpd"];

const VR_CONFIG: &str = "frr defaults traditional
ip route 192.0.2.0/24 10.9.0.2
router bgp 65001
 bgp router-id 10.9.0.1
 no bgp ebgp-requires-policy
 neighbor 10.9.0.2 remote-as 65002
 neighbor 10.9.0.2 timers 3 9
 neighbor 10.9.0.2 timers connect 1
exit
";

/// Announces 198.51.100.0/24 to the VR.
const PEER_CONFIG: &str = "frr defaults traditional
ip route 198.51.100.0/24 blackhole
router bgp 65002
 bgp router-id 10.9.0.2
 no bgp ebgp-requires-policy
 neighbor 10.9.0.1 remote-as 65001
 neighbor 10.9.0.1 timers 3 9
 neighbor 10.9.0.1 timers connect 1
 address-family ipv4 unicast
  redistribute static
 exit-address-family
exit
";

#[test]
#[ignore = "not a test: the pearld that the other tests kill, run by them in a child process"]
fn helper_pearld() {
    let Ok(spec) = std::env::var(HELPER) else { return };
    let [vr, daemons, config] = spec.splitn(3, ';').collect::<Vec<_>>()[..] else { panic!("{HELPER}={spec}") };
    let daemons: Vec<&str> = daemons.split(',').collect();
    let _cgroup = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let _frr = Daemons::start(Box::new(Frr::new(vr, &daemons, Path::new(config))), &_cgroup).unwrap();
    println!("{HELPER_READY}");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// The helper, killed (SIGKILL) when dropped if the test did not kill it first.
struct Pearld(Child);

impl Pearld {
    /// Runs the helper; returns once it has started `daemons` for `vr` and configured them.
    fn start(vr: &str, daemons: &[&str], config: &Path) -> Pearld {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["helper_pearld", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(HELPER, format!("{vr};{};{}", daemons.join(","), config.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pearld = Pearld(child);
        let out = BufReader::new(pearld.0.stdout.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        // libtest may print its "test helper_pearld ... " on the same line.
        std::thread::spawn(move || tx.send(out.lines().map_while(Result::ok).any(|l| l.ends_with(HELPER_READY))));
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(true) => pearld,
            Ok(false) => panic!("the helper pearld ended before its FRR was up (its stderr is above)"),
            Err(_) => panic!("the helper pearld did not bring FRR up within 30 s"),
        }
    }

    fn kill9(mut self) {
        self.0.kill().unwrap();
        assert_eq!(self.0.wait().unwrap().signal(), Some(libc::SIGKILL));
    }
}

impl Drop for Pearld {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn alive(pid: u32) -> bool {
    // A zombie (dead, not yet reaped by its new parent) has an empty command line.
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
}

/// The VR's BGP session to 10.9.0.2: (state, connections established so far).
fn bgp_session(vr: &str) -> (String, u64) {
    let text = run(&["vtysh", "-N", vr, "-c", "show bgp neighbors 10.9.0.2 json"]);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let peer = &json["10.9.0.2"];
    (peer["bgpState"].as_str().unwrap_or("?").to_string(), peer["connectionsEstablished"].as_u64().unwrap_or(0))
}

fn has_bgp_route(vr: &str) -> bool {
    run(&["ip", "-n", vr, "route", "show", "198.51.100.0/24"]).contains("via 10.9.0.2 dev v0 proto bgp")
}

/// The pids in the daemons' pid files, in the order given.
fn pids(ns: &Netns, daemons: &[&str]) -> Vec<(String, u32)> {
    daemons.iter().map(|d| (d.to_string(), ns.pid_file(d).unwrap_or_else(|| panic!("no pid file for {d}")))).collect()
}

fn sorted(mut pids: Vec<u32>) -> Vec<u32> {
    pids.sort_unstable();
    pids
}

#[test]
fn a_killed_pearlds_daemons_are_taken_over_with_their_bgp_session_up() {
    let (ns, peer) = Netns::pair(&name("ad"), &name("adp"));
    let vr = ns.0.as_str();
    let cg = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let peer_cg = Cgroup::create(&peer.0, 100, 256 << 20).unwrap();
    let vr_config = ConfigFile::new(vr, VR_CONFIG);
    let peer_config = ConfigFile::new(&peer.0, PEER_CONFIG);
    let peer_frr = Daemons::start(Box::new(Frr::new(&peer.0, &DAEMONS, &peer_config.0)), &peer_cg).unwrap();

    let pearld = Pearld::start(vr, &DAEMONS, &vr_config.0);
    wait_for("the BGP session up, its route in the VR's kernel", Duration::from_secs(30), || {
        bgp_session(vr) == ("Established".into(), 1) && has_bgp_route(vr) && has_static_route(vr)
    });
    let before = pids(&ns, &DAEMONS);
    pearld.kill9();
    assert!(before.iter().all(|(_, pid)| alive(*pid)), "the daemons outlive their pearld: {before:?}");

    let (frr, adoption) = Daemons::adopt_or_start(Box::new(Frr::new(vr, &DAEMONS, &vr_config.0)), &cg).unwrap();
    assert_eq!(adoption, Adoption { adopted: before.clone(), ..Adoption::default() });
    let status = frr.status();
    let now: Vec<(String, u32)> = status.iter().map(|d| (d.name.clone(), d.pid.unwrap())).collect();
    assert_eq!(now, before, "same daemons, same processes");
    assert!(status.iter().all(|d| d.running && d.restarts == 0), "{status:?}");
    assert_eq!(cg.pids().unwrap(), sorted(before.iter().map(|d| d.1).collect()), "the daemons, and only they, are in the VR's cgroup");
    // Not reconfigured, not reconnected: the session that was up before is the one up now.
    assert_eq!(bgp_session(vr), ("Established".into(), 1));
    assert!(has_bgp_route(vr) && has_static_route(vr));

    // An adopted daemon that dies is noticed through its pidfd and comes back as a child.
    let (events, heard) = std::sync::mpsc::channel();
    frr.on_event(move |e| {
        let _ = events.send(e.clone());
    });
    crash_and_recover(&frr, "bgpd", Duration::from_secs(2));
    assert_eq!(daemon(&frr.status(), "zebra").restarts, 0);
    let bgpd = daemon(&frr.status(), "bgpd").pid.unwrap();
    let want =
        [DaemonEvent::Exited { daemon: "bgpd".into(), pid: before[2].1 }, DaemonEvent::Restarted { daemon: "bgpd".into(), pid: bgpd }];
    assert_eq!(heard.try_iter().collect::<Vec<_>>(), want);
    wait_for("the restarted bgpd's session up, its route back", Duration::from_secs(30), || {
        bgp_session(vr).0 == "Established" && has_bgp_route(vr)
    });

    frr.stop().unwrap();
    assert_eq!(ns.frr_pids(), Vec::<u32>::new(), "no daemon survives stop");
    assert!(before.iter().all(|(_, pid)| !alive(*pid)));
    assert!(cg.pids().unwrap().is_empty());
    assert!(!Path::new(&format!("/var/run/frr/{vr}")).exists());
    assert!(!Path::new(&format!("/etc/frr/{vr}")).exists());
    peer_frr.stop().unwrap();
}

#[test]
fn adoption_starts_what_is_missing_stops_what_is_no_longer_listed_and_configures_the_unconfigured() {
    let ns = Netns::new(&name("ae"));
    let vr = ns.0.as_str();
    let cg = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let old_config = ConfigFile::new(vr, VR_CONFIG);
    let pearld = Pearld::start(vr, &DAEMONS, &old_config.0);
    wait_for("the static route", Duration::from_secs(5), || has_static_route(vr));
    let before = pids(&ns, &DAEMONS);
    pearld.kill9();
    // staticd dies while nobody watches; zebra withdraws its route.
    let staticd = before[1].1;
    run(&["kill", "-9", &staticd.to_string()]);
    wait_for("staticd gone", Duration::from_secs(5), || !alive(staticd));
    wait_for("its route withdrawn", Duration::from_secs(5), || !has_static_route(vr));
    // As if pearld had died between starting zebra and configuring it.
    std::fs::remove_file(format!("/var/run/frr/{vr}/zebra.configured")).unwrap();

    let new_config = ConfigFile::new(&format!("{vr}new"), "ip route 192.0.2.0/24 10.9.0.2\n");
    let (frr, adoption) = Daemons::adopt_or_start(Box::new(Frr::new(vr, &["zebra", "staticd"], &new_config.0)), &cg).unwrap();
    let want = Adoption {
        adopted: vec![before[0].clone()],
        started: vec!["staticd".into()],
        configured: vec!["zebra".into()],
        stopped: vec![before[2].clone()],
    };
    assert_eq!(adoption, want);
    assert!(!alive(before[2].1), "bgpd, no longer listed, was stopped");
    let status = frr.status();
    assert_eq!(daemon(&status, "zebra").pid, Some(before[0].1));
    assert!(status.iter().all(|d| d.running && d.restarts == 0), "{status:?}");
    wait_for("the static route back from the new staticd", Duration::from_secs(5), || has_static_route(vr));
    assert_eq!(cg.pids().unwrap(), sorted(status.iter().map(|d| d.pid.unwrap()).collect()));
    assert_eq!(std::fs::read_to_string(format!("/etc/frr/{vr}/frr.conf")).unwrap(), "ip route 192.0.2.0/24 10.9.0.2\n");

    frr.stop().unwrap();
    assert!(ns.frr_pids().is_empty() && cg.pids().unwrap().is_empty());
}

#[test]
fn daemons_left_in_a_namespace_that_was_made_anew_are_replaced() {
    let ns = Netns::new(&name("af"));
    let vr = ns.0.as_str();
    let cg = Cgroup::create(vr, 100, 256 << 20).unwrap();
    let config = ConfigFile::new(vr, "ip route 192.0.2.0/24 10.9.0.2\n");
    let pearld = Pearld::start(vr, &["zebra", "staticd"], &config.0);
    let before = pids(&ns, &["zebra", "staticd"]);
    pearld.kill9();
    // The name now leads to another namespace; the old one lives on in its daemons.
    run(&["ip", "netns", "del", vr]);
    run(&["ip", "netns", "add", vr]);
    for cmd in ["link set lo up", "link add v0 type veth peer name v1", "addr add 10.9.0.1/24 dev v0", "link set v0 up", "link set v1 up"] {
        ns.ip(cmd);
    }

    let (frr, adoption) = Daemons::adopt_or_start(Box::new(Frr::new(vr, &["zebra", "staticd"], &config.0)), &cg).unwrap();
    let stopped = vec![before[1].clone(), before[0].clone()];
    let want = Adoption { started: vec!["zebra".into(), "staticd".into()], stopped, ..Adoption::default() };
    assert_eq!(adoption, want);
    assert!(before.iter().all(|(_, pid)| !alive(*pid)));
    wait_for("the static route in the new namespace", Duration::from_secs(5), || has_static_route(vr));
    let vr_netns = run(&["ip", "netns", "exec", vr, "readlink", "/proc/self/ns/net"]);
    for d in frr.status() {
        assert_eq!(std::fs::read_link(format!("/proc/{}/ns/net", d.pid.unwrap())).unwrap(), Path::new(vr_netns.trim()));
    }
    frr.stop().unwrap();
    assert!(ns.frr_pids().is_empty() && cg.pids().unwrap().is_empty());
}
