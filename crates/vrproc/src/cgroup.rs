//! A VR's cgroup: CPU and memory limits for every process of the VR.
//!
//! The group is `pearl/<vr>` below pearld's own cgroup, in every mounted hierarchy that has the
//! cpu or memory controller (cgroup v1) plus the cgroup2 hierarchy if one is mounted (limits
//! there when it holds those controllers, and `cgroup.kill` to end the group at once). Being
//! below pearld's own group, the VRs stay inside whatever budget pearld was given.
//!
//! CPU: `cpu_percent` of one CPU per 100 ms period (v1 `cpu.cfs_quota_us`, v2 `cpu.max`).
//! Memory: v1 `memory.limit_in_bytes`, v2 `memory.max`; the kernel's OOM killer acts inside
//! the group, and the FRR supervisor restarts what it kills.

use crate::sys;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const CPU_PERIOD_US: u64 = 100_000;
/// How long a removal waits for SIGKILLed processes to leave the group.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct Cgroup {
    /// The VR's directory in each hierarchy used; the cgroup2 one, if any, is last.
    dirs: Vec<PathBuf>,
    /// Per dir: whether its hierarchy carries the cpu and memory controllers, and is cgroup2.
    limits: Vec<(bool, bool, bool)>,
    v2: bool,
}

/// Descriptors of a cgroup's `cgroup.procs` files, for a child to join between fork and exec.
#[derive(Default)]
pub struct Placement(Vec<File>);

impl Placement {
    /// Raw descriptors for a `pre_exec` hook; valid while `self` lives.
    pub fn fds(&self) -> Vec<RawFd> {
        self.0.iter().map(|f| f.as_raw_fd()).collect()
    }

    /// Whether there is no group to join (none was made for the VR).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Moves the calling process into the group. Async-signal-safe: one write(2) per hierarchy,
    /// "0" meaning "the writer" in both cgroup versions.
    pub fn join_self(fds: &[RawFd]) -> io::Result<()> {
        for &fd in fds {
            // SAFETY: writes one byte from a static buffer to a descriptor the parent opened.
            if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// A mounted hierarchy, seen from pearld's own place in it.
#[derive(Clone)]
struct Hierarchy {
    /// pearld's own cgroup directory in this hierarchy.
    own: PathBuf,
    v2: bool,
    cpu: bool,
    memory: bool,
}

impl Cgroup {
    /// Creates (or takes over, if a previous run left it) the VR's group and sets its limits.
    pub fn create(vr: &str, cpu_percent: u32, memory_bytes: u64) -> io::Result<Cgroup> {
        if vr.is_empty() || vr.contains('/') || vr == "." || vr == ".." {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{vr:?} cannot name a cgroup")));
        }
        if cpu_percent == 0 || memory_bytes == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "CPU and memory limits must be positive"));
        }
        let hierarchies = plan(&mounted_hierarchies()?)?;
        let mut cg = Cgroup { dirs: Vec::new(), limits: Vec::new(), v2: false };
        // On error `cg` drops, removing what was made so far.
        for h in &hierarchies {
            let dir = make_group(h, vr)?;
            cg.dirs.push(dir.clone());
            cg.limits.push((h.cpu, h.memory, h.v2));
            cg.v2 |= h.v2;
        }
        cg.set_limits(cpu_percent, memory_bytes)?;
        Ok(cg)
    }

    /// A placement into VR `vr`'s group as `create` made it (for another part of pearld that
    /// starts processes of the VR: a process plugin): its `cgroup.procs` in each hierarchy where
    /// the group exists; empty where none does.
    pub fn placement_of(vr: &str) -> io::Result<Placement> {
        let mut files = Vec::new();
        for h in plan(&mounted_hierarchies()?)? {
            let procs = h.own.join("pearl").join(vr).join("cgroup.procs");
            match OpenOptions::new().write(true).open(&procs) {
                Ok(f) => files.push(f),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(at(&procs, e)),
            }
        }
        Ok(Placement(files))
    }

    /// Sets the group's CPU (percent of one CPU) and memory limits, for the processes in it
    /// now and later.
    pub fn set_limits(&self, cpu_percent: u32, memory_bytes: u64) -> io::Result<()> {
        if cpu_percent == 0 || memory_bytes == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "CPU and memory limits must be positive"));
        }
        let quota = u64::from(cpu_percent) * CPU_PERIOD_US / 100;
        for (dir, &(cpu, memory, v2)) in self.dirs.iter().zip(&self.limits) {
            match (cpu, v2) {
                (false, _) => {}
                (true, false) => {
                    write(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                    write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                }
                (true, true) => write(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?,
            }
            match (memory, v2) {
                (false, _) => {}
                (true, false) => write(&dir.join("memory.limit_in_bytes"), &memory_bytes.to_string())?,
                (true, true) => write(&dir.join("memory.max"), &memory_bytes.to_string())?,
            }
        }
        Ok(())
    }

    /// The VR's directories, one per hierarchy.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Moves process `pid` (all its threads) into the group.
    pub fn add(&self, pid: u32) -> io::Result<()> {
        for dir in &self.dirs {
            write(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// The processes in the group, in any hierarchy.
    pub fn pids(&self) -> io::Result<Vec<u32>> {
        let mut pids = Vec::new();
        for dir in &self.dirs {
            let path = dir.join("cgroup.procs");
            let text = match fs::read_to_string(&path) {
                // A group someone else removed holds no process.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                r => r.map_err(|e| at(&path, e))?,
            };
            pids.extend(text.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }

    /// Each dir's `cgroup.procs`, opened for one spawn so that the forked child joins with one
    /// write(2) per hierarchy. Not kept open: thousands of VRs would hold three descriptors each.
    pub(crate) fn placement(&self) -> io::Result<Placement> {
        let open = |dir: &PathBuf| {
            let procs = dir.join("cgroup.procs");
            OpenOptions::new().write(true).open(&procs).map_err(|e| at(&procs, e))
        };
        Ok(Placement(self.dirs.iter().map(open).collect::<io::Result<_>>()?))
    }

    /// Kills whatever still runs in the group and removes its directories, and the `pearl`
    /// parents once no VR is left in them.
    pub fn remove(mut self) -> io::Result<()> {
        self.teardown()
    }

    fn teardown(&mut self) -> io::Result<()> {
        if self.dirs.is_empty() {
            return Ok(());
        }
        let deadline = Instant::now() + KILL_TIMEOUT;
        loop {
            let pids = self.pids()?;
            if pids.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!("{}: processes {pids:?} outlived SIGKILL", self.dirs[0].display())));
            }
            self.kill_all(&pids)?;
            std::thread::sleep(Duration::from_millis(10));
        }
        for dir in std::mem::take(&mut self.dirs) {
            match fs::remove_dir(&dir) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                r => r.map_err(|e| at(&dir, e))?,
            }
            // An empty `pearl` would keep pearld's own group from being removed by whoever
            // made it; while another VR's group is inside, this fails, as it should.
            if let Some(pearl) = dir.parent() {
                let _ = fs::remove_dir(pearl);
            }
        }
        Ok(())
    }

    fn kill_all(&self, pids: &[u32]) -> io::Result<()> {
        // cgroup.kill ends the group atomically, even processes forked while we look.
        if self.v2 {
            let kill = self.dirs.last().expect("the v2 dir").join("cgroup.kill");
            match write(&kill, "1") {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                r => return r,
            }
        }
        for &pid in pids {
            // A pidfd pins the process, so the membership check below cannot be fooled by a
            // recycled pid.
            let Ok(fd) = sys::pidfd_open(pid) else { continue };
            let member = fs::read_to_string(format!("/proc/{pid}/cgroup"))
                .map(|c| self.dirs.iter().any(|d| c.lines().any(|l| l.ends_with(&cgroup_suffix(d)))))
                .unwrap_or(false);
            if member {
                sys::pidfd_signal(&fd, libc::SIGKILL)?;
            }
        }
        Ok(())
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            tracing::warn!("cgroup: {e}");
        }
    }
}

/// Makes `pearl/<vr>` in one hierarchy, with the controllers it carries handed down to it.
fn make_group(h: &Hierarchy, vr: &str) -> io::Result<PathBuf> {
    let pearl = h.own.join("pearl");
    let dir = pearl.join(vr);
    // The last VR's removal may take `pearl` away between our two mkdirs: make it again.
    for _ in 0..3 {
        mkdir(&pearl)?;
        if h.v2 {
            let wanted = [("cpu", h.cpu), ("memory", h.memory)].into_iter().filter(|c| c.1).map(|c| c.0);
            for c in wanted {
                for parent in [&h.own, &pearl] {
                    write(&parent.join("cgroup.subtree_control"), &format!("+{c}")).map_err(busy_hint)?;
                }
            }
        }
        match mkdir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            r => return r.map(|()| dir),
        }
    }
    Err(io::Error::other(format!("{}: its parent keeps vanishing", dir.display())))
}

/// `/pearl/<vr>`: how the group's path ends in /proc/PID/cgroup.
fn cgroup_suffix(dir: &Path) -> String {
    let mut parts = dir.iter().rev().take(2).collect::<Vec<_>>();
    parts.reverse();
    format!("/{}/{}", parts[0].to_string_lossy(), parts[1].to_string_lossy())
}

/// The hierarchies to use: every v1 one with cpu or memory, and the v2 one if mounted, which
/// carries a controller only where no v1 hierarchy does.
fn plan(all: &[Hierarchy]) -> io::Result<Vec<Hierarchy>> {
    let v1 = |pick: fn(&Hierarchy) -> bool| all.iter().any(|h| !h.v2 && pick(h));
    let (cpu_v1, mem_v1) = (v1(|h| h.cpu), v1(|h| h.memory));
    let mut used: Vec<Hierarchy> = Vec::new();
    for h in all.iter().filter(|h| !h.v2 && (h.cpu || h.memory)) {
        used.push(Hierarchy { own: h.own.clone(), ..*h });
    }
    if let Some(h) = all.iter().find(|h| h.v2) {
        used.push(Hierarchy { own: h.own.clone(), v2: true, cpu: h.cpu && !cpu_v1, memory: h.memory && !mem_v1 });
    }
    let missing = |name: &str| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!("no mounted cgroup hierarchy offers the {name} controller (see /proc/self/mountinfo)"),
        )
    };
    if !used.iter().any(|h| h.cpu) {
        return Err(missing("cpu"));
    }
    if !used.iter().any(|h| h.memory) {
        return Err(missing("memory"));
    }
    Ok(used)
}

/// The hierarchies, found once: the mount table holds a mount per VR namespace, so reading it
/// for every VR made starting thousands of VRs quadratic; cgroup mounts do not move under a
/// running pearld.
fn mounted_hierarchies() -> io::Result<Vec<Hierarchy>> {
    static FOUND: OnceLock<Vec<Hierarchy>> = OnceLock::new();
    if let Some(h) = FOUND.get() {
        return Ok(h.clone());
    }
    let h = hierarchies()?;
    Ok(FOUND.get_or_init(|| h).clone())
}

fn hierarchies() -> io::Result<Vec<Hierarchy>> {
    let mountinfo = read("/proc/self/mountinfo")?;
    let own = read("/proc/self/cgroup")?;
    let mut found: Vec<(String, Hierarchy)> = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(mount), Some(fstype), Some(opts)) = (left.get(3), left.get(4), right.first(), right.get(2)) else {
            continue;
        };
        let opts: Vec<&str> = opts.split(',').collect();
        let (v2, own_line) = match *fstype {
            "cgroup2" => (true, own_cgroup(&own, |c| c.is_empty())),
            "cgroup" => (false, own_cgroup(&own, |c| !c.is_empty() && c.split(',').all(|x| opts.contains(&x)))),
            _ => continue,
        };
        // The same hierarchy may be mounted twice; the first mount serves.
        let Some((id, own_path)) = own_line else { continue };
        if found.iter().any(|(seen, _)| seen == id) {
            continue;
        }
        let within = own_path.strip_prefix(root.trim_end_matches('/')).unwrap_or(own_path);
        let own_dir = Path::new(mount).join(within.trim_start_matches('/'));
        let (cpu, memory) = if v2 {
            let c = fs::read_to_string(own_dir.join("cgroup.controllers")).unwrap_or_default();
            (c.split_whitespace().any(|x| x == "cpu"), c.split_whitespace().any(|x| x == "memory"))
        } else {
            (opts.contains(&"cpu"), opts.contains(&"memory"))
        };
        found.push((id.to_string(), Hierarchy { own: own_dir, v2, cpu, memory }));
    }
    Ok(found.into_iter().map(|(_, h)| h).collect())
}

/// The hierarchy id and pearld's path in the hierarchy whose controller list (the middle
/// field of a /proc/self/cgroup line) satisfies `which`.
fn own_cgroup(own: &str, which: impl Fn(&str) -> bool) -> Option<(&str, &str)> {
    own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, controllers, path) = (f.next()?, f.next()?, f.next()?);
        which(controllers).then_some((id, path))
    })
}

/// cgroup2 lets a group with processes hand no controller to its children (the root excepted).
fn busy_hint(e: io::Error) -> io::Error {
    if e.kind() != io::ErrorKind::ResourceBusy {
        return e;
    }
    io::Error::new(
        e.kind(),
        format!("{e} (pearld's cgroup holds processes: run pearld in a leaf of a delegated subtree, e.g. systemd's Delegate=yes)"),
    )
}

fn mkdir(dir: &Path) -> io::Result<()> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(at(dir, e)),
        _ => Ok(()),
    }
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path).map_err(|e| at(path, e))?;
    f.write_all(value.as_bytes()).map_err(|e| io::Error::new(e.kind(), format!("{}: {value}: {e}", path.display())))
}

fn read(path: &str) -> io::Result<String> {
    fs::read_to_string(path).map_err(|e| at(Path::new(path), e))
}

pub(crate) fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}
