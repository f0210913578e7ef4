//! The VR lifecycle's fan-out: making and removing many VRs is mostly waiting on the kernel,
//! so their waits overlap on a few threads.

/// VRs made or removed at once: most of a VR's making is waiting (for `ip`, for the kernel's
/// grace periods when devices and namespaces go), so many VRs overlap their waits.
const LIFECYCLE_THREADS: usize = 16;

/// Runs `f` over `items` on up to `LIFECYCLE_THREADS` threads; results in the items' order.
pub fn in_parallel<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = LIFECYCLE_THREADS.min(items.len());
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let mut results: Vec<(usize, R)> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((k, item)) = next else { return done };
                        done.push((k, f(item)));
                    }
                })
            })
            .collect();
        threads.into_iter().flat_map(|t| t.join().expect("a lifecycle thread panicked")).collect()
    });
    results.sort_unstable_by_key(|(k, _)| *k);
    results.into_iter().map(|(_, r)| r).collect()
}
