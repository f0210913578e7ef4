//! The VR kernels' drop and forwarding counters in the stats. Reading them means entering each VR's
//! namespace, tens of microseconds a VR: a VR's are read again only when its kernel can have
//! counted something since, that is when packets went between it and the fast path (all a
//! VR's kernel sees but what its own processes send), and for that remainder once older than
//! `MAX_AGE`, the oldest `AGED_PER_READ` per snapshot. A node of thousands of idle VRs answers
//! its stats entering a few namespaces at most.

use std::collections::HashMap;
use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a VR's kernel counted: its drops, and what it forwarded.
pub type Drops = pearl_vrproc::KernelCounters;

const MAX_AGE: Duration = Duration::from_secs(10);
/// At most this many VRs are read again for their age alone in one snapshot.
const AGED_PER_READ: usize = 256;

#[derive(Default)]
pub struct KernelDrops {
    seen: Mutex<HashMap<u16, Seen>>,
}

struct Seen {
    namespace: String,
    activity: u64,
    at: Instant,
    drops: Drops,
}

/// A VR whose kernel counters are wanted: its id, namespace, and a count that moves whenever
/// packets go between its kernel and the fast path.
pub struct Wanted<'a> {
    pub id: u16,
    pub namespace: &'a str,
    pub activity: u64,
}

impl KernelDrops {
    /// The counters of every VR in `vrs` (those that cannot be read are left out); VRs not
    /// asked for are forgotten.
    pub fn get(&self, vrs: &[Wanted<'_>]) -> HashMap<u16, Drops> {
        self.get_at(Instant::now(), vrs, pearl_vrproc::kernel_counters)
    }

    fn get_at(&self, now: Instant, vrs: &[Wanted<'_>], read: impl FnOnce(&[&str]) -> Vec<io::Result<Drops>>) -> HashMap<u16, Drops> {
        let stale: Vec<&Wanted<'_>> = {
            let seen = self.seen.lock().expect("kernel drops");
            let mut aged: Vec<(Instant, &Wanted<'_>)> = Vec::new();
            let mut stale = Vec::new();
            for w in vrs {
                match seen.get(&w.id) {
                    Some(s) if s.namespace == w.namespace && s.activity == w.activity => {
                        if now - s.at > MAX_AGE {
                            aged.push((s.at, w));
                        }
                    }
                    _ => stale.push(w),
                }
            }
            // The oldest first, a bounded number per read: a reader after a long pause does
            // not wait for every VR's namespace at once.
            aged.sort_unstable_by_key(|(at, _)| *at);
            stale.extend(aged.into_iter().take(AGED_PER_READ).map(|(_, w)| w));
            stale
        };
        // Read without the lock: a reader of another snapshot waits for nothing but the map.
        let names: Vec<&str> = stale.iter().map(|w| w.namespace).collect();
        let read = read(&names);
        let mut seen = self.seen.lock().expect("kernel drops");
        for (w, r) in stale.iter().zip(read) {
            match r {
                Ok(drops) => {
                    seen.insert(w.id, Seen { namespace: w.namespace.to_owned(), activity: w.activity, at: now, drops });
                }
                Err(_) => {
                    seen.remove(&w.id);
                }
            }
        }
        let asked: HashMap<u16, &str> = vrs.iter().map(|w| (w.id, w.namespace)).collect();
        seen.retain(|id, s| asked.get(id) == Some(&s.namespace.as_str()));
        seen.iter().map(|(id, s)| (*id, s.drops.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn wanted(names: &[String], activity: u64) -> Vec<Wanted<'_>> {
        names.iter().enumerate().map(|(i, n)| Wanted { id: i as u16, namespace: n, activity }).collect()
    }

    #[test]
    fn a_vr_is_read_when_new_when_its_slow_path_moved_and_the_oldest_when_aged() {
        let names: Vec<String> = (0..600).map(|i| format!("vr{i}")).collect();
        let cache = KernelDrops::default();
        let reads = RefCell::new(Vec::<String>::new());
        let reader = |ns: &[&str]| -> Vec<io::Result<Drops>> {
            reads.borrow_mut().extend(ns.iter().map(|s| s.to_string()));
            ns.iter().map(|_| Ok(Drops { drops: vec![("IpInHdrErrors", 1)], forwarded_packets: 3 })).collect()
        };
        let t0 = Instant::now();
        let got = cache.get_at(t0, &wanted(&names, 5), reader);
        assert_eq!((got.len(), reads.borrow().len()), (600, 600), "every VR is read the first time");
        reads.borrow_mut().clear();
        cache.get_at(t0 + Duration::from_secs(1), &wanted(&names, 5), reader);
        assert!(reads.borrow().is_empty(), "nothing moved: nothing read");
        let mut moved = wanted(&names, 5);
        moved[7].activity = 6;
        cache.get_at(t0 + Duration::from_secs(2), &moved, reader);
        assert_eq!(*reads.borrow(), ["vr7"], "the VR whose slow path moved");
        reads.borrow_mut().clear();
        cache.get_at(t0 + MAX_AGE + Duration::from_secs(1), &moved, reader);
        assert_eq!(reads.borrow().len(), AGED_PER_READ, "aged ones, a bounded number at a time");
        assert!(!reads.borrow().contains(&"vr7".to_string()), "the oldest first");
        let got = cache.get_at(t0 + MAX_AGE + Duration::from_secs(1), &moved[..10], reader);
        assert_eq!(got.len(), 10, "VRs no longer asked for are forgotten");
    }
}
