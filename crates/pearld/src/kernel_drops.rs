//! The VR kernels' drop counters in the stats. Reading them means entering each VR's
//! namespace, tens of microseconds a VR: a VR's are read again only when its kernel can have
//! counted something since, that is when packets went between it and the fast path (all a
//! VR's kernel sees but what its own processes send), and at least every `MAX_AGE` for that
//! remainder. A node of thousands of idle VRs answers its stats without entering any.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub type Drops = Vec<(&'static str, u64)>;

const MAX_AGE: Duration = Duration::from_secs(10);

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
        let now = Instant::now();
        let stale: Vec<&Wanted<'_>> = {
            let seen = self.seen.lock().expect("kernel drops");
            vrs.iter()
                .filter(|w| {
                    seen.get(&w.id).is_none_or(|s| s.namespace != w.namespace || s.activity != w.activity || now - s.at > MAX_AGE)
                })
                .collect()
        };
        // Read without the lock: a reader of another snapshot waits for nothing but the map.
        let names: Vec<&str> = stale.iter().map(|w| w.namespace).collect();
        let read = pearl_vrproc::kernel_drops(&names);
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
