//! What the kernel forwarded per VR and exit port. An offloaded frame never passes the VR's
//! output queue on that port, so the queue's own tallies miss it; statistics add these to the
//! VR's queue 0 there, the only queue an offloading VR (no match rules) sends through.

use std::collections::HashMap;
use std::sync::Mutex;

/// `(vr, port)` → (packets, bytes). Written by the table thread when it harvests the kernel's
/// tallies and read by statistics readers, never on the packet path.
#[derive(Default)]
pub struct Exits(Mutex<HashMap<(u16, u16), (u64, u64)>>);

impl Exits {
    pub(super) fn add(&self, vr: u16, port: u16, packets: u64, bytes: u64) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let e = m.entry((vr, port)).or_default();
        e.0 += packets;
        e.1 += bytes;
    }

    /// Zeroes VR ids made anew, as their VR counters are.
    pub(super) fn forget(&self, vrs: &[u16]) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).retain(|(vr, _), _| !vrs.contains(vr));
    }

    pub fn snapshot(&self) -> HashMap<(u16, u16), (u64, u64)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_add_up_per_vr_and_port_and_a_fresh_vr_starts_from_zero() {
        let e = Exits::default();
        e.add(1, 0, 10, 1000);
        e.add(1, 0, 5, 500);
        e.add(1, 1, 2, 200);
        e.add(2, 0, 7, 700);
        e.forget(&[2]);
        let s = e.snapshot();
        assert_eq!(s.get(&(1, 0)), Some(&(15, 1500)));
        assert_eq!(s.get(&(1, 1)), Some(&(2, 200)));
        assert_eq!(s.get(&(2, 0)), None);
    }
}
