//! The fast path's routes held while a VR's routing daemon restarts.

use pearl_routed::HoldSwitch;
use pearl_vrproc::{DaemonEvent, Daemons};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long routes stay held after a crashed daemon is back: long enough for it to relearn
/// them (bgpd: sessions and tables), as zebra keeps a restarted zebra's routes (`-K 60`).
const HOLD_GRACE: Duration = Duration::from_secs(30);

/// When one of a VR's routing daemons dies, its routes may leave the kernel at once (FRR's zebra
/// withdraws them; a daemon of the owner's may clean up as it goes); the fast path keeps
/// forwarding on them (routed's hold) until the daemon has been back for `HOLD_GRACE`.
pub fn hold_routes_while_daemons_restart(daemons: &Daemons, hold: HoldSwitch) {
    let crashes = Arc::new(AtomicU64::new(0));
    let kind = daemons.kind();
    daemons.on_event(move |e| match e {
        DaemonEvent::Exited { daemon, pid } => {
            tracing::warn!("{kind} {daemon} ({pid}) died; holding the fast path's routes until it is back");
            crashes.fetch_add(1, Ordering::SeqCst);
            hold.set(true);
        }
        DaemonEvent::Restarted { .. } => {
            let seen = crashes.load(Ordering::SeqCst);
            let (crashes, hold) = (Arc::clone(&crashes), hold.clone());
            // Released only if no daemon died again meanwhile.
            let _ = std::thread::Builder::new().name("pearl-hold".into()).spawn(move || {
                std::thread::sleep(HOLD_GRACE);
                if crashes.load(Ordering::SeqCst) == seen {
                    hold.set(false);
                }
            });
        }
    });
}
