//! Things made ahead of need by a background thread, so that whoever needs one takes it ready
//! instead of waiting while it is made: VR namespaces, whose making takes milliseconds that grow
//! with the number of namespaces on the node (`fresh_netns.rs`).

use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// After a failure to make one, how long the refiller waits before it tries again: a failure
/// (out of memory or descriptors) is not undone by trying at once, and takers meanwhile make
/// their own.
const RETRY: Duration = Duration::from_secs(5);

/// Up to `size` `T`s kept made; emptied by takers, refilled in the background.
pub struct Spares<T: Send + 'static> {
    shared: Arc<Shared<T>>,
    size: usize,
    refiller: Option<JoinHandle<()>>,
}

struct Shared<T> {
    pool: Mutex<Pool<T>>,
    /// Signalled to refill, and when the pool is dropped.
    wake: Condvar,
}

struct Pool<T> {
    ready: Vec<T>,
    quit: bool,
}

impl<T: Send + 'static> Spares<T> {
    /// Starts a thread that keeps `size` made by `make`; `what` names them in its log lines.
    pub fn start(size: usize, what: &'static str, mut make: impl FnMut() -> io::Result<T> + Send + 'static) -> io::Result<Spares<T>> {
        let shared = Arc::new(Shared { pool: Mutex::new(Pool { ready: Vec::with_capacity(size), quit: false }), wake: Condvar::new() });
        let refill = Arc::clone(&shared);
        let refiller = std::thread::Builder::new().name("spares".into()).spawn(move || {
            let mut failing = false;
            loop {
                {
                    let mut pool = refill.lock();
                    while !pool.quit && pool.ready.len() >= size {
                        pool = refill.wake.wait(pool).unwrap_or_else(|e| e.into_inner());
                    }
                    if pool.quit {
                        return;
                    }
                }
                match make() {
                    Ok(t) => {
                        failing = false;
                        refill.lock().ready.push(t);
                    }
                    Err(e) => {
                        if !failing {
                            tracing::warn!("making {what} ahead of need: {e}; made on demand until it works again");
                        }
                        failing = true;
                        let pool = refill.lock();
                        if pool.quit {
                            return;
                        }
                        drop(refill.wake.wait_timeout(pool, RETRY));
                    }
                }
            }
        })?;
        Ok(Spares { shared, size, refiller: Some(refiller) })
    }

    /// Waits until the pool is full, or `limit` has passed: the first filling, at start, is
    /// then part of starting rather than CPU spent once the node is up and idle.
    pub fn wait_full(&self, limit: Duration) {
        let deadline = std::time::Instant::now() + limit;
        while self.shared.lock().ready.len() < self.size && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// One made ahead, if one is ready. Not replaced until `refill`: making one competes for
    /// the CPU and the kernel's locks with whatever the taker does next.
    pub fn take(&self) -> Option<T> {
        self.shared.lock().ready.pop()
    }

    /// Has the refiller make up for what was taken.
    pub fn refill(&self) {
        self.shared.wake.notify_one();
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Pool<T>> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Send + 'static> Drop for Spares<T> {
    /// Stops the refiller (after the one it is making, if any); what was made is dropped.
    fn drop(&mut self) {
        self.shared.lock().quit = true;
        self.shared.wake.notify_one();
        if let Some(refiller) = self.refiller.take() {
            let _ = refiller.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    fn counting(size: usize) -> (Spares<usize>, Arc<AtomicUsize>) {
        let made = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&made);
        let spares = Spares::start(size, "numbers", move || Ok(count.fetch_add(1, Ordering::SeqCst))).expect("a thread");
        (spares, made)
    }

    fn until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: not within 5 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn fills_up_to_its_size_and_no_further() {
        let (spares, made) = counting(3);
        until("three made", || made.load(Ordering::SeqCst) == 3);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(made.load(Ordering::SeqCst), 3);
        assert_eq!(spares.shared.lock().ready.len(), 3);
    }

    #[test]
    fn waiting_for_it_full_returns_with_every_one_ready() {
        let made = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&made);
        let slow = move || {
            std::thread::sleep(Duration::from_millis(20));
            Ok(count.fetch_add(1, Ordering::SeqCst))
        };
        let spares = Spares::start(3, "slow numbers", slow).expect("a thread");
        spares.wait_full(Duration::from_secs(5));
        assert_eq!(spares.shared.lock().ready.len(), 3);
    }

    #[test]
    fn each_taken_is_made_again() {
        let (spares, made) = counting(2);
        until("two made", || made.load(Ordering::SeqCst) == 2);
        let mut taken = Vec::new();
        for _ in 0..5 {
            until("one ready", || !spares.shared.lock().ready.is_empty());
            taken.push(spares.take().expect("one ready"));
            spares.refill();
        }
        until("refilled", || spares.shared.lock().ready.len() == 2);
        assert_eq!(made.load(Ordering::SeqCst), 7);
        taken.sort_unstable();
        taken.dedup();
        assert_eq!(taken.len(), 5, "every one taken is a different one");
    }

    #[test]
    fn what_is_taken_is_made_again_only_when_asked() {
        let (spares, made) = counting(2);
        until("two made", || made.load(Ordering::SeqCst) == 2);
        assert!(spares.take().is_some() && spares.take().is_some());
        std::thread::sleep(Duration::from_millis(50));
        assert!(spares.take().is_none());
        assert_eq!(made.load(Ordering::SeqCst), 2);
        spares.refill();
        until("two made again", || made.load(Ordering::SeqCst) == 4);
    }

    #[test]
    fn a_failing_maker_leaves_it_empty_and_dropping_it_does_not_wait_for_the_retry() {
        let spares: Spares<()> = Spares::start(2, "nothing", || Err(io::Error::other("refused"))).expect("a thread");
        std::thread::sleep(Duration::from_millis(20));
        assert!(spares.take().is_none());
        let dropped = Instant::now();
        drop(spares);
        assert!(dropped.elapsed() < RETRY / 2, "the drop waited {:?}", dropped.elapsed());
    }

    #[test]
    fn dropping_it_stops_the_refiller() {
        let (spares, made) = counting(1);
        until("one made", || made.load(Ordering::SeqCst) == 1);
        drop(spares);
        assert_eq!(made.load(Ordering::SeqCst), 1);
    }
}
