//! CPU time of the data-plane workers. A worker polls while traffic flows and sleeps in poll(2)
//! when idle, so the CPU time its thread used over an interval is how busy it was. The worker
//! threads are found by name (`pearl-worker-N`, given by the data plane) and read through their
//! per-thread CPU clocks, which count nanoseconds (procfs would count 10 ms ticks).

/// Seconds of CPU each of `workers` workers has used; 0 for one whose thread is not found.
pub fn seconds(workers: usize) -> Vec<f64> {
    let mut out = vec![0.0; workers];
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return out };
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<libc::pid_t>().ok()) else { continue };
        let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) else { continue };
        let Some(w) = comm.trim_end().strip_prefix("pearl-worker-").and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        if w < workers {
            out[w] = thread_cpu(tid).unwrap_or(0.0);
        }
    }
    out
}

/// The CPU clock of thread `tid` of this process: the kernel's encoding of a per-thread
/// scheduler clock (what glibc's `pthread_getcpuclockid` builds), `(!tid << 3) | PERTHREAD | SCHED`.
fn thread_cpu(tid: libc::pid_t) -> Option<f64> {
    const PERTHREAD: libc::clockid_t = 4;
    const SCHED: libc::clockid_t = 2;
    let clock = (!tid << 3) | PERTHREAD | SCHED;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; an invalid clock id returns EINVAL.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    // Divided, not multiplied by 1e-9 (inexact): the seconds are then the double nearest the
    // nanoseconds, as any other reading of the same clock states them.
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_cpu() -> f64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    }

    #[test]
    fn a_named_thread_reads_as_its_own_cpu_clock_and_a_missing_one_as_zero() {
        let t = std::thread::Builder::new()
            .name("pearl-worker-1".into())
            .spawn(|| {
                let mut x = 0u64;
                while own_cpu() < 0.02 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                let before = own_cpu();
                let got = seconds(3);
                (before, got, own_cpu())
            })
            .unwrap();
        let (before, got, after) = t.join().unwrap();
        assert_eq!((got[0], got[2]), (0.0, 0.0));
        assert!(before <= got[1] && got[1] <= after, "{before} <= {} <= {after}", got[1]);
    }
}
