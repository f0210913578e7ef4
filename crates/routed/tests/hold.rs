//! The hold-down against a real kernel (needs root): while held the fast path keeps what the
//! kernel deletes and takes what it adds; on release it follows the kernel again. And with FRR
//! (needs FRR too): a crashed daemon's routes, which zebra deletes at once, stay in the fast
//! path when the supervisor's news of the crash turns the hold on.

mod common;

use common::{forward, glean, Found, Vr};
use pearl_vrproc::{Cgroup, DaemonEvent, Daemons, Frr};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0xaa, 2];

#[test]
fn held_routes_stay_until_the_release_and_new_ones_are_mirrored_meanwhile() {
    let mut vr = Vr::new("ha", 2);
    vr.start(2);
    vr.ip("neigh add 10.0.0.2 lladdr 02:00:00:00:aa:02 dev t0");
    vr.ip("route add 10.9.0.0/16 via 10.0.0.2");
    vr.ip("route add 10.12.0.0/16 via 10.0.0.2");
    vr.ip("-6 route add 2001:db8:9::/48 via 2001:db8::2");
    vr.expect("10.9.1.1", forward(0, GW_MAC));
    vr.expect("2001:db8:9::1", glean(0));

    vr.routed().set_hold(true);
    vr.wait_stats(5, |s| s.held);
    vr.ip("route del 10.9.0.0/16");
    vr.ip("-6 route del 2001:db8:9::/48");
    // Unresolves the gateway and takes the neighbour's host route.
    vr.ip("neigh del 10.0.0.2 dev t0");
    vr.ip("route add 10.10.0.0/16 via 10.0.0.3");
    vr.ip("route replace 10.12.0.0/16 via 10.1.0.2");
    vr.expect("10.10.0.1", glean(0));
    vr.expect("10.12.0.1", glean(1));
    let held = vr.settle();
    assert_eq!(held.deferred_removals, 3, "10.9.0.0/16, 2001:db8:9::/48, 10.0.0.2/32: {held:?}");
    assert_eq!(vr.lookup("10.9.1.1"), forward(0, GW_MAC), "deleted in the kernel, kept in the fast path, still resolved");
    assert_eq!(vr.lookup("10.0.0.2"), forward(0, GW_MAC));
    assert_eq!(vr.lookup("2001:db8:9::1"), glean(0));

    vr.routed().set_hold(false);
    let released = vr.wait_stats(5, |s| !s.held && s.deferred_removals == 0);
    assert_eq!(vr.lookup("10.9.1.1"), Found::Miss);
    assert_eq!(vr.lookup("2001:db8:9::1"), Found::Miss);
    assert_eq!(vr.lookup("10.0.0.2"), glean(0), "back to the connected subnet's glean");
    assert_eq!(vr.lookup("10.10.0.1"), glean(0));
    assert_eq!(vr.lookup("10.12.0.1"), glean(1));
    assert_eq!(released.batches, held.batches + 1, "the release is one batch");
    assert_eq!(released.routes_v4 + released.routes_v6, held.routes_v4 + held.routes_v6 - 3);
}

#[test]
fn a_crashed_daemons_routes_stay_in_the_fast_path_while_it_restarts() {
    let mut vr = Vr::new("hf", 1);
    vr.start(1);
    let cg = Cgroup::create(&vr.name, 100, 256 << 20).unwrap();
    let config = std::env::temp_dir().join(format!("{}-frr.conf", vr.name));
    std::fs::write(&config, "ip route 10.77.0.0/16 10.0.0.2\n").unwrap();
    let frr = Daemons::start(Box::new(Frr::new(&vr.name, &["zebra", "staticd"], &config)), &cg);
    let _ = std::fs::remove_file(&config);
    let frr = frr.unwrap();
    vr.expect("10.77.0.1", glean(0));

    let hold = vr.routed().hold_switch();
    let (events, heard) = mpsc::channel();
    frr.on_event(move |e| {
        if matches!(e, DaemonEvent::Exited { .. }) {
            hold.set(true);
        }
        let _ = events.send(e.clone());
    });
    let staticd = frr.status()[1].pid.unwrap();
    assert!(Command::new("kill").args(["-9", &staticd.to_string()]).status().unwrap().success());

    // Until the new staticd has put the route back, the fast path must never miss it.
    let (start, mut deferred_seen) = (Instant::now(), false);
    let mut kernel_lost = false;
    loop {
        assert_eq!(vr.lookup("10.77.0.1"), glean(0), "after {:?} (stats {:?})", start.elapsed(), vr.routed().stats());
        deferred_seen |= vr.routed().stats().deferred_removals == 1;
        let in_kernel = Command::new("ip").args(["-n", &vr.name, "route", "show", "10.77.0.0/16"]).output().unwrap().stdout;
        kernel_lost |= in_kernel.is_empty();
        if kernel_lost && !in_kernel.is_empty() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "the route did not come back to the kernel");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(deferred_seen, "zebra deleted the route, so the hold must have deferred its removal");
    let got: Vec<DaemonEvent> = heard.try_iter().collect();
    let new = frr.status()[1].pid.unwrap();
    let want =
        [DaemonEvent::Exited { daemon: "staticd".into(), pid: staticd }, DaemonEvent::Restarted { daemon: "staticd".into(), pid: new }];
    assert_eq!(got, want);
    let s = vr.wait_stats(5, |s| s.held && s.deferred_removals == 0);
    assert!(s.held, "the route is back: nothing waits for the release");

    vr.routed().set_hold(false);
    vr.wait_stats(5, |s| !s.held);
    assert_eq!(vr.lookup("10.77.0.1"), glean(0));
    frr.stop().unwrap();
    cg.remove().unwrap();
}
