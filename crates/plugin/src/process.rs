//! A native plugin in a process of its own (`plugin.process`): it runs in the VR's network
//! namespace and cgroup (the VR's CPU and memory limits) under `limits.memory_mb` of address
//! space too, and shares a file of memory with
//! pearld (a control block and a batch area laid out as a WebAssembly plugin's, `abi.rs`).
//! The worker posts a batch, wakes the process and waits for its verdicts at most
//! `BATCH_WAIT`, answering meanwhile the calls the process makes for routes and tables
//! (`process_calls.rs`); a batch not answered by then is dropped (`program_hang`) and the VR's later
//! batches too until the process catches up. A supervisor thread starts the process, and
//! restarts it after a back-off when it exits (a crash, a memory bomb the limit stopped) or
//! makes no progress for `HANG` (killed): whatever the process does, the worker waits at most
//! one `BATCH_WAIT` for it, and no other VR's packets wait on it.
//!
//! Made before it breaks: a program replacing another one (the VR's namespace is there) is
//! returned only once its process has attached (or failed to), so that the old program serves
//! the VR until the switch and the new one serves from its first batch.

use crate::area::{self, Slot};
use crate::backoff::Backoff;
use crate::process_calls::{self, Against, CallScratch};
use crate::tables::{PluginTables, Table};
use pearl_control::VrConfig;
use pearl_plugin_sdk::abi::{
    CALL_OP, CTL_ANSWERED, CTL_ATTACHED, CTL_CALL, CTL_COUNT, CTL_DONE, CTL_EVENT, CTL_REQUEST, PROCESS_AREA_SIZE, PROCESS_CONTROL_LEN,
};
use pearl_program::reasons::VrDrop;
use pearl_program::{Decision, Run, VrProgram};
use pearl_vrproc::{Cgroup, Placement};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The longest a worker waits for a process's verdicts on one batch.
const BATCH_WAIT: Duration = Duration::from_millis(2);
/// A process that leaves a batch unanswered this long is killed and restarted.
const HANG: Duration = Duration::from_millis(100);
/// How long a started process has to map the shared memory.
const ATTACH_WAIT: Duration = Duration::from_secs(5);
/// How often the supervisor looks at its process.
const TICK: Duration = Duration::from_millis(5);
/// How long a program waits for its VR's cgroup once the namespace is there.
const CGROUP_WAIT: Duration = Duration::from_secs(2);
const SHM_LEN: usize = PROCESS_CONTROL_LEN + PROCESS_AREA_SIZE;

pub struct ProcessProgram {
    shared: Arc<Shared>,
    scratch: Mutex<Scratch>,
    ports: Vec<u16>,
    interface_of_port: Arc<[u16]>,
    /// What the process's table calls read and write (`plugin.tables`).
    tables: PluginTables,
}

/// The worker's scratch: where each frame of the batch in flight is, and the calls' room.
#[derive(Default)]
struct Scratch {
    slots: Vec<Slot>,
    calls: CallScratch,
}

/// What the worker and the supervisor share.
struct Shared {
    shm: SharedMemory,
    /// The process attached and not known to be dead or hung.
    ready: AtomicBool,
    /// When the batch in flight was posted (ns since `epoch`), for the hang check.
    posted_ns: AtomicU64,
    epoch: Instant,
    stop: AtomicBool,
    /// How many times the process stopped (exited, hung, did not attach, could not start).
    faults: AtomicU32,
}

/// The memory shared with the process (a memfd, which the process finds as its descriptor
/// `SHM_FD`: nothing is left behind in any file system), mapped.
struct SharedMemory {
    base: *mut u8,
    file: File,
}

/// Where the process finds the shared memory: `PEARL_PLUGIN_SHM=/proc/self/fd/3`.
const SHM_FD: libc::c_int = 3;

// SAFETY: the mapping is plain memory; the words both sides touch are atomics.
unsafe impl Send for SharedMemory {}
// SAFETY: as for the impl above.
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    fn create(vr: &str) -> io::Result<SharedMemory> {
        let name = std::ffi::CString::new(format!("pearl-plugin-{vr}")).map_err(io::Error::other)?;
        // SAFETY: memfd_create with a NUL-terminated name; the descriptor is owned below.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(SHM_LEN as u64)?;
        let base = map(&file)?;
        Ok(SharedMemory { base, file })
    }

    fn word(&self, at: usize) -> &AtomicU32 {
        // SAFETY: the control block is inside the mapping, 4-aligned (page-aligned base).
        unsafe { &*self.base.add(at).cast::<AtomicU32>() }
    }

    /// The control block from `CALL_OP` on: a call's words and bytes. The process writes them
    /// before it counts a call in `CTL_CALL`, the worker answers before it moves `CTL_ANSWERED`.
    #[allow(clippy::mut_from_ref, reason = "shared with the process, which the protocol keeps off it meanwhile")]
    fn call(&self) -> &mut [u8] {
        // SAFETY: inside the mapping, apart from the protocol's words before CALL_OP.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(CALL_OP), PROCESS_CONTROL_LEN - CALL_OP) }
    }

    /// The batch area. Only the worker writes it, and only while no batch is in flight.
    #[allow(clippy::mut_from_ref, reason = "the area is shared with the process, which the protocol keeps off it meanwhile")]
    fn area(&self) -> &mut [u8] {
        // SAFETY: inside the mapping; see above for who writes when.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(PROCESS_CONTROL_LEN), PROCESS_AREA_SIZE) }
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `create`, no longer used.
        unsafe { libc::munmap(self.base.cast(), SHM_LEN) };
    }
}

fn map(file: &File) -> io::Result<*mut u8> {
    // SAFETY: a shared mapping of a file of SHM_LEN bytes.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), SHM_LEN, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast())
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: futex(2) on a word of a shared mapping; non-private, as another process waits.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1, std::ptr::null::<libc::timespec>()) };
}

fn futex_wait(word: &AtomicU32, value: u32, timeout: Duration) {
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32) };
    // SAFETY: as above; returns at once if the word is no longer `value`.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, value, &ts) };
}

/// Why a process program was not made (the change naming it is refused).
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// the shared memory: ERROR (memfd_create, its size or its mapping)
    #[error("the shared memory: {0}")]
    SharedMemory(io::Error),
    /// plugin.config: ERROR (not passed on as JSON)
    #[error("plugin.config: {0}")]
    Config(serde_json::Error),
    /// its supervisor thread: ERROR
    #[error("its supervisor thread: {0}")]
    Supervisor(io::Error),
}

/// Why the supervisor could not start the process (a fault: it tries again after a back-off).
#[derive(Debug, thiserror::Error)]
#[error("ip netns exec {vr} {argv}: {error}")]
struct SpawnError {
    vr: String,
    /// The program and its arguments, as one line.
    argv: String,
    error: io::Error,
}

impl ProcessProgram {
    /// Starts `argv` for plugin VR `vr` (in its namespace, once it exists) and the supervisor
    /// that keeps it running.
    pub fn new(vr: &VrConfig, argv: &[String], config: &serde_json::Value, tables: PluginTables) -> Result<ProcessProgram, ProcessError> {
        let shm = SharedMemory::create(&vr.name).map_err(ProcessError::SharedMemory)?;
        let shared = Arc::new(Shared {
            shm,
            ready: AtomicBool::new(false),
            posted_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            stop: AtomicBool::new(false),
            faults: AtomicU32::new(0),
        });
        let launch = Launch {
            vr: vr.name.clone(),
            argv: argv.to_vec(),
            config: serde_json::to_string(config).map_err(ProcessError::Config)?,
            // The tables (in pearld) are charged to the VR's memory first.
            memory_bytes: (vr.limits.memory_mb << 20).saturating_sub(tables.bound_bytes()),
        };
        let s = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("plugin-{}", vr.name))
            .spawn(move || supervise(&s, &launch))
            .map_err(ProcessError::Supervisor)?;
        if std::path::Path::new("/run/netns").join(&vr.name).exists() && !attached(&shared, ATTACH_WAIT) {
            tracing::warn!("VR {:?}: its new plugin process replaces the old one before it attached", vr.name);
        }
        let (ports, interface_of_port) = area::vr_ports(vr);
        Ok(ProcessProgram { shared, scratch: Mutex::new(Scratch::default()), ports, interface_of_port, tables })
    }
}

/// Waits at most `wait` for the process to attach and answer an empty batch (its loop entered,
/// its code paged in: a fresh process's first batch would otherwise outlast `BATCH_WAIT` and
/// drop the VR's frames as `program_hang`); returns early if it stops first (it then restarts
/// after a back-off like any fault). Whether it is ready. No worker has the program yet, so
/// nothing else posts meanwhile.
fn attached(s: &Shared, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    let gone = || s.faults.load(Ordering::Acquire) != 0 || Instant::now() >= deadline;
    while !s.ready.load(Ordering::Acquire) {
        if gone() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let (request, done) = (s.shm.word(CTL_REQUEST), s.shm.word(CTL_DONE));
    s.shm.word(CTL_COUNT).store(0, Ordering::Relaxed);
    s.posted_ns.store(s.epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
    let next = request.load(Ordering::Acquire).wrapping_add(1);
    request.store(next, Ordering::Release);
    futex_wake(request);
    while done.load(Ordering::Acquire) != next {
        if gone() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

impl ProcessProgram {
    /// Answers the call the process waits on, if it made one; whether it had.
    fn answer_call<'t>(&'t self, run: &Run<'_>, held: &mut Option<MutexGuard<'t, Vec<Table>>>, calls: &mut CallScratch) -> bool {
        let shm = &self.shared.shm;
        let (call, answered) = (shm.word(CTL_CALL), shm.word(CTL_ANSWERED));
        let asked = call.load(Ordering::Acquire);
        if asked == answered.load(Ordering::Relaxed) {
            return false;
        }
        let against = Against { run, interface_of_port: &self.interface_of_port, tables: &self.tables, held, scratch: calls };
        process_calls::answer(shm.call(), against);
        answered.store(asked, Ordering::Release);
        futex_wake(answered);
        true
    }
}

impl Drop for ProcessProgram {
    /// The supervisor stops the process at its next look, without the dropping thread (which
    /// may be a worker) waiting for it.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
    }
}

impl VrProgram for ProcessProgram {
    fn run(&self, run: &mut Run<'_>) {
        let mut scratch = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let Scratch { slots, calls } = &mut *scratch;
        // The tables, once a call asked for them: held until the run is decided.
        let mut held = None;
        let s = &*self.shared;
        let (request, done, event) = (s.shm.word(CTL_REQUEST), s.shm.word(CTL_DONE), s.shm.word(CTL_EVENT));
        let mut i = 0;
        while i < run.len() {
            if !s.ready.load(Ordering::Acquire) {
                return run.decide_from(i, Decision::Drop(VrDrop::ProgramDown));
            }
            let posted = request.load(Ordering::Acquire);
            if done.load(Ordering::Acquire) != posted {
                // Still on a batch that timed out: nothing is fed to it meanwhile, but a call
                // it waits on is answered, so that it can finish that batch and catch up.
                self.answer_call(run, &mut held, calls);
                return run.decide_from(i, Decision::Drop(VrDrop::ProgramHang));
            }
            let area = s.shm.area();
            // One clock read a batch: its time, when it was posted, and its deadline.
            let now = Instant::now();
            let now_ns = now.duration_since(s.epoch).as_nanos() as u64;
            let n = area::pack(area, &run.packets[i..], &self.interface_of_port, now_ns, slots);
            if n == 0 {
                run.decide(i, Decision::Drop(VrDrop::Program));
                i += 1;
                continue;
            }
            s.shm.word(CTL_COUNT).store(n as u32, Ordering::Relaxed);
            s.posted_ns.store(now_ns, Ordering::Relaxed);
            let next = posted.wrapping_add(1);
            request.store(next, Ordering::Release);
            futex_wake(request);
            // The process counts `event` after it finishes the batch or asks something: read
            // first, it makes the wait return at once if either came after the checks.
            let deadline = now + BATCH_WAIT;
            loop {
                let e = event.load(Ordering::Acquire);
                if done.load(Ordering::Acquire) == next {
                    break;
                }
                let now = Instant::now();
                if now >= deadline {
                    return run.decide_from(i, Decision::Drop(VrDrop::ProgramHang));
                }
                if !self.answer_call(run, &mut held, calls) {
                    futex_wait(event, e, deadline - now);
                }
            }
            for (k, &slot) in slots.iter().enumerate() {
                let d = area::verdict(area, k, slot, &mut run.packets[i + k], &self.ports);
                run.decide(i + k, d);
            }
            i += n;
        }
    }
}

/// How the supervisor starts the process.
struct Launch {
    vr: String,
    argv: Vec<String>,
    config: String,
    memory_bytes: u64,
}

impl Launch {
    fn namespace_exists(&self) -> bool {
        std::path::Path::new("/run/netns").join(&self.vr).exists()
    }

    /// Whether the VR is there to start the program in: its namespace, and its cgroup (pearld
    /// makes it just after) or, on a node without cgroups, `CGROUP_WAIT` since the namespace
    /// came (`seen`).
    fn ready(&self, seen: &mut Option<Instant>, now: Instant) -> bool {
        if !self.namespace_exists() {
            *seen = None;
            return false;
        }
        let since = *seen.get_or_insert(now);
        now.duration_since(since) > CGROUP_WAIT || Cgroup::placement_of(&self.vr).is_ok_and(|p| !p.is_empty())
    }

    fn spawn(&self, shm: &SharedMemory) -> io::Result<Child> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.vr]).args(&self.argv);
        cmd.env("PEARL_PLUGIN_SHM", format!("/proc/self/fd/{SHM_FD}")).env("PEARL_PLUGIN_CONFIG", &self.config).env("PEARL_VR", &self.vr);
        cmd.stdin(Stdio::null());
        // Its own process group: a ^C meant for pearld is not the plugin's.
        cmd.process_group(0);
        let (limit, memfd) = (self.memory_bytes, shm.file.as_raw_fd());
        // The VR's cgroup (its CPU and memory limits, with its other processes), joined before
        // exec so that the program never runs outside it. A VR without one (a node without
        // cgroups) runs it bounded by RLIMIT_AS alone.
        let placement = Cgroup::placement_of(&self.vr).unwrap_or_else(|e| {
            tracing::warn!("VR {:?}: its plugin process runs outside the VR's cgroup: {e}", self.vr);
            Placement::default()
        });
        let cgroup = placement.fds();
        // SAFETY: the hook calls only async-signal-safe functions (write, dup2, fcntl, setrlimit, sigprocmask, prctl).
        unsafe {
            cmd.pre_exec(move || {
                Placement::join_self(&cgroup)?;
                // dup2 leaves the copy open across exec; but when the memfd already is
                // SHM_FD, dup2 does nothing, and its close-on-exec flag must go by hand.
                let kept = if memfd == SHM_FD { libc::fcntl(SHM_FD, libc::F_SETFD, 0) } else { libc::dup2(memfd, SHM_FD) };
                if kept < 0 {
                    return Err(io::Error::last_os_error());
                }
                // Killed if its supervisor thread ends (pearld stopping or killed) before it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // Best effort: a kernel before 6.12 ignores the slice or refuses it, and the
                // process then waits for a CPU as any other.
                short_slice();
                Ok(())
            })
        };
        let child = cmd.spawn();
        drop(placement);
        child
    }
}

/// `struct sched_attr` of sched_setattr(2), its first version.
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// The slice the process asks of the scheduler (EEVDF, Linux 6.12+: `sched_runtime` of a
/// normal task). Its share of the CPU stays its weight's; a short slice gives it an early
/// deadline, so that the batch the worker posts wakes it ahead of tasks that run long (a
/// compiler on the same CPU would otherwise keep it waiting past `BATCH_WAIT`, and the batch
/// is dropped as `program_hang`). It answers a batch in microseconds, well within the slice.
const SLICE: Duration = Duration::from_micros(100);

/// Asks `SLICE` for the calling process, keeping its policy and nice value (normal, 0: what a
/// process pearld starts has); async-signal-safe (one system call).
fn short_slice() {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice: 0,
        priority: 0,
        runtime: SLICE.as_nanos() as u64,
        deadline: 0,
        period: 0,
    };
    // SAFETY: sched_setattr on the calling process with a valid, fully initialised attr.
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
}

/// Keeps the process running until the program is dropped.
fn supervise(s: &Shared, launch: &Launch) {
    let mut backoff = Backoff::default();
    let mut child: Option<(Child, Instant)> = None;
    let mut namespace_seen = None;
    loop {
        std::thread::sleep(TICK);
        if s.stop.load(Ordering::Acquire) {
            break;
        }
        let now = Instant::now();
        let fault = match child.as_mut() {
            // pearld makes the VR's namespace and cgroup after checking the change that adds it.
            None if !backoff.may_start(now) || !launch.ready(&mut namespace_seen, now) => None,
            None => match start(s, launch) {
                Ok(c) => {
                    backoff.started(now);
                    child = Some((c, now));
                    None
                }
                Err(e) => Some(e.to_string()),
            },
            Some((c, since)) => match c.try_wait() {
                Ok(Some(status)) => Some(format!("it exited ({status})")),
                Ok(None) if !s.ready.load(Ordering::Acquire) => {
                    if s.shm.word(CTL_ATTACHED).load(Ordering::Acquire) != 0 {
                        s.ready.store(true, Ordering::Release);
                        tracing::info!("VR {:?}: its plugin process {} is attached", launch.vr, c.id());
                        None
                    } else if now.duration_since(*since) > ATTACH_WAIT {
                        Some(format!("it did not map PEARL_PLUGIN_SHM within {ATTACH_WAIT:?}"))
                    } else {
                        None
                    }
                }
                Ok(None) => hung(s).then(|| format!("it left a batch unanswered for over {HANG:?}")),
                Err(e) => Some(format!("waiting for it: {e}")),
            },
        };
        if let Some(why) = fault {
            s.ready.store(false, Ordering::Release);
            s.faults.fetch_add(1, Ordering::Release);
            if let Some((mut c, _)) = child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            backoff.fault(now);
            if launch.namespace_exists() {
                tracing::warn!("VR {:?}: its plugin process stopped ({why}); it restarts after a back-off", launch.vr);
            } else {
                // The VR is being removed (its namespace and what ran there first).
                tracing::info!("VR {:?}: its plugin process ended with its namespace", launch.vr);
            }
        }
    }
    if let Some((mut c, _)) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A batch is in flight and was posted over `HANG` ago.
fn hung(s: &Shared) -> bool {
    let in_flight = s.shm.word(CTL_REQUEST).load(Ordering::Acquire) != s.shm.word(CTL_DONE).load(Ordering::Acquire);
    let posted = Duration::from_nanos(s.posted_ns.load(Ordering::Relaxed));
    in_flight && s.epoch.elapsed().saturating_sub(posted) > HANG
}

/// A fresh start: the control block cleared (no batch in flight), the process spawned.
fn start(s: &Shared, launch: &Launch) -> Result<Child, SpawnError> {
    for w in [CTL_REQUEST, CTL_DONE, CTL_COUNT, CTL_ATTACHED, CTL_CALL, CTL_ANSWERED, CTL_EVENT] {
        s.shm.word(w).store(0, Ordering::Release);
    }
    launch.spawn(&s.shm).map_err(|error| SpawnError { vr: launch.vr.clone(), argv: launch.argv.join(" "), error })
}

#[cfg(test)]
mod tests {
    use super::{short_slice, SLICE};

    /// The slice is what the scheduler keeps for the thread (its `se.slice`), where the kernel
    /// has custom slices (6.12+) and says so in /proc.
    #[test]
    fn a_process_asks_a_short_slice_of_the_scheduler() {
        let slice = || {
            let sched = std::fs::read_to_string("/proc/thread-self/sched").unwrap_or_default();
            sched.lines().find(|l| l.starts_with("se.slice")).and_then(|l| l.split(':').nth(1)?.trim().parse::<u64>().ok())
        };
        let Some(before) = slice() else { return };
        std::thread::spawn(move || {
            short_slice();
            assert_eq!(slice(), Some(SLICE.as_nanos() as u64), "the default slice was {before} ns");
        })
        .join()
        .unwrap();
    }
}
