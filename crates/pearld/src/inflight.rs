//! The API's connections in flight, with their sockets, so that the server can cap them and,
//! when stopping, cut them short and wait for their threads to let go of the node.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Connections served at once; more wait to be accepted.
pub const MAX_CONNECTIONS: usize = 64;

#[derive(Default)]
pub struct InFlight {
    /// The next id, and the sockets of the connections in flight by id.
    conns: Mutex<(u64, HashMap<u64, RawFd>)>,
    none: Condvar,
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, (u64, HashMap<u64, RawFd>)> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_full(&self) -> bool {
        self.lock().1.len() >= MAX_CONNECTIONS
    }

    pub fn enter(&self, fd: RawFd) -> u64 {
        let mut c = self.lock();
        let id = c.0;
        c.0 += 1;
        c.1.insert(id, fd);
        id
    }

    /// Unregisters a connection, before its socket closes (so `cut_all` never touches a
    /// descriptor that may have been reused).
    pub fn leave(&self, id: u64) {
        let mut c = self.lock();
        c.1.remove(&id);
        if c.1.is_empty() {
            self.none.notify_all();
        }
    }

    /// Shuts down every socket in flight: their threads stop waiting on their clients.
    pub fn cut_all(&self) {
        for &fd in self.lock().1.values() {
            // SAFETY: a registered descriptor is open until its connection leaves.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
    }

    pub fn wait_until_none(&self, limit: Duration) {
        let start = Instant::now();
        let mut c = self.lock();
        while !c.1.is_empty() && start.elapsed() < limit {
            c = self.none.wait_timeout(c, limit - start.elapsed()).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_cap_counts_connections_in_flight_and_waiting_ends_when_the_last_leaves() {
        let f = Arc::new(InFlight::default());
        let ids: Vec<u64> = (0..MAX_CONNECTIONS).map(|_| f.enter(-1)).collect();
        assert!(f.is_full());
        f.leave(ids[0]);
        assert!(!f.is_full());
        let g = Arc::clone(&f);
        let rest = ids[1..].to_vec();
        let t = std::thread::spawn(move || rest.into_iter().for_each(|id| g.leave(id)));
        let start = Instant::now();
        f.wait_until_none(Duration::from_secs(5));
        assert!(start.elapsed() < Duration::from_secs(4));
        t.join().unwrap();
        assert!(f.lock().1.is_empty());
    }
}
