//! The hold-down switch. pearld turns it from whatever thread learns that a routing daemon died
//! (zebra withdraws that daemon's routes from the kernel milliseconds later) and turns it back
//! once the daemon has relearnt them; the reactor steps the VR's mirror, which follows it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A handle on one VR's hold-down; clones turn the same switch. See [`crate::Routed::set_hold`].
#[derive(Clone)]
pub struct HoldSwitch(Arc<Shared>);

struct Shared {
    on: AtomicBool,
    /// The mirror's slot in the reactor, which a change wakes (`UNBOUND` before the mirror is
    /// in the reactor and after it left). Not an eventfd of its own: thousands of VRs would
    /// each hold one more descriptor.
    slot: AtomicUsize,
    /// How a slot is woken: given by the reactor's side when it binds the switch.
    waker: OnceLock<fn(usize)>,
}

const UNBOUND: usize = usize::MAX;

impl HoldSwitch {
    pub(crate) fn new() -> HoldSwitch {
        HoldSwitch(Arc::new(Shared { on: AtomicBool::new(false), slot: AtomicUsize::new(UNBOUND), waker: OnceLock::new() }))
    }

    /// Holds (`true`) or releases (`false`). An atomic store and a message to the reactor:
    /// cheap enough for a supervisor's callback or a signal-handling thread.
    pub fn set(&self, on: bool) {
        self.0.on.store(on, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        let slot = self.0.slot.load(Ordering::Acquire);
        if let (true, Some(wake)) = (slot != UNBOUND, self.0.waker.get()) {
            wake(slot);
        }
    }

    /// Ties the switch to the mirror's slot once the reactor has it, `wake` waking that slot;
    /// a hold asked for before that is followed now.
    pub(crate) fn bind(&self, slot: usize, wake: fn(usize)) {
        let _ = self.0.waker.set(wake);
        self.0.slot.store(slot, Ordering::Release);
        if self.wanted() {
            self.wake();
        }
    }

    /// Unties it when the mirror leaves the reactor (its slot goes to another VR).
    pub(crate) fn unbind(&self) {
        self.0.slot.store(UNBOUND, Ordering::Release);
    }

    /// Whether a hold is asked for now.
    pub(crate) fn wanted(&self) -> bool {
        self.0.on.load(Ordering::Acquire)
    }
}
