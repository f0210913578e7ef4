//! The VR lifecycle (PEARL's vmmd): each VR gets a network namespace named after it, with one
//! TAP device per VR interface (the interface's name, MAC and addresses, link up), a kernel
//! that forwards and answers ARP/ND and ICMP, and the configured static routes and neighbours,
//! so that the namespace's kernel is the VR's control-plane truth. Removing a VR removes all of
//! it, including any process left running inside. A namespace PEARL did not make (`owned.rs`)
//! is never taken, changed or removed.

use crate::fresh_netns::{self, FreshNetns};
use crate::holder::Holder;
use crate::netconf::{self, Op};
use crate::owned::Owned;
use crate::spare_spaces::Spares;
use crate::stopwatch::Stopwatch;
use crate::sysctl::{self, Setting};
use pearl_control::VrConfig;
use pearl_control::{ControlPlane, Urpf};
use pearl_dataplane::port::{Adoption, Port, TapPort};
use pearl_vrproc::{Bird, Cgroup, Daemons, Frr, OwnProgram, Suite};
use std::os::unix::fs::MetadataExt;

/// Kernel settings of every VR namespace for the devices still to come (its TAPs).
const SYSCTLS_FOR_NEW_DEVICES: &[(&str, u8)] = &[("net.ipv6.conf.default.accept_dad", 0)];

/// Kernel settings of every VR namespace: a router, not a host. Set once its TAPs exist:
/// turning IPv6 forwarding on joins each existing interface to the all-routers groups
/// (ff02::2, ff05::2), as on a Linux router whose forwarding is turned on after its links come
/// up; a device made later joins ff02::2 only. ICMP errors keep Linux's rate limits
/// (RFC 1812 §4.3.2.8, RFC 4443 §2.4(f)): a flood of packets that draw errors draws no more
/// than from a Linux router (the owner may change them in the namespace).
const SYSCTLS: &[(&str, u8)] = &[
    ("net.ipv4.ip_forward", 1),
    ("net.ipv6.conf.all.forwarding", 1),
    ("net.ipv4.conf.all.rp_filter", 0),
    ("net.ipv4.conf.default.rp_filter", 0),
];

/// A VR's namespace; the TAPs are handed to the slow path separately.
pub struct VrSpace {
    pub name: String,
    interfaces: Vec<String>,
    /// Limits the CPU and memory of the VR's processes.
    cgroup: Option<Cgroup>,
    /// The VR's routing daemons, when its config names some.
    daemons: Option<Daemons>,
    /// Whether the namespace ran before this pearld (live restore, or a killed pearld's).
    adopted: bool,
}

/// `accept_source_route` in the VR's kernel, which acts on IPv4 source route options (the fast
/// path hands every packet with options to it): Linux heeds them only where both `all` and the
/// arrival interface say so, so `all` alone turns them off, leaving the rest at the kernel's
/// defaults; turning them on sets the interfaces too (`default` for those made later).
fn set_source_route(dirs: &sysctl::Dirs, vr: &VrConfig) -> Result<(), String> {
    let on = vr.accept_source_route;
    let devices =
        if on { ["all", "default"].into_iter().chain(vr.interfaces.iter().map(|i| i.name.as_str())).collect() } else { vec!["all"] };
    let settings: Vec<Setting> = devices.iter().map(|dev| Setting::conf("ipv4", dev, "accept_source_route", u8::from(on))).collect();
    dirs.write(&settings).map_err(|e| format!("accept_source_route: {e}"))
}

/// The suite that runs the VR's `control_plane:` (its `kind()` is the key there).
fn suite_of(vr: &VrConfig) -> Option<Box<dyn Suite>> {
    Some(match vr.control_plane.as_ref()? {
        ControlPlane::Frr(f) => Box::new(Frr::new(&vr.name, &f.daemons, &f.config)),
        ControlPlane::Bird(b) => Box::new(Bird::new(&vr.name, &b.config)),
        ControlPlane::Command(c) => Box::new(OwnProgram::new(&vr.name, &c.argv, &c.dir)),
    })
}

/// Why a VR's TAPs were not made or taken back.
#[derive(Debug, thiserror::Error)]
pub enum TapError {
    /// interfaces "NAME": ERROR (its TAP, or the holder keeping it)
    #[error("interfaces {ifname:?}: {error}")]
    Interface { ifname: String, error: std::io::Error },
    /// interfaces "NAME": the namespace has a device of that name this pearld did not make
    #[error(
        "interfaces {ifname:?}: namespace {ns} already has an interface {ifname} that this pearld did not make \
         (is another pearld running a VR named {ns}?)"
    )]
    Taken { ns: String, ifname: String },
    /// interfaces: ERROR (the namespace was not entered, or a TAP not made in it)
    #[error("interfaces: {0}")]
    Namespace(std::io::Error),
}

/// The TAP of interface `ifname` in namespace `ns`: the holder's, if it kept one from an
/// earlier run (the device, its addresses and the sessions over it lived on), else a new one,
/// which the holder then keeps too.
fn tap(holder: &Holder, ns: &str, ifname: &str) -> Result<TapPort, TapError> {
    let key = format!("{ns}/{ifname}");
    let at = |error: std::io::Error| TapError::Interface { ifname: ifname.to_string(), error };
    if let Some(fd) = holder.get(&key).map_err(at)? {
        return match TapPort::adopt(fd, ifname).map_err(at)? {
            Adoption::Adopted(tap) => Ok(tap),
            // Kept since an earlier pearld, which made its TAPs without virtio-net headers:
            // the same device, opened again with them (its addresses and routes stay).
            Adoption::WithoutVnetHdr(fd) => {
                let tap = TapPort::reopen_in_netns(fd, ns, ifname, || holder.delete(&key)).map_err(at)?;
                holder.put(&key, tap.rx_fd().expect("a TAP has a descriptor")).map_err(at)?;
                tracing::info!("{key}: the TAP kept from an earlier run had no virtio-net header; re-opened with one");
                Ok(tap)
            }
        };
    }
    // A device of that name that our holder does not keep belongs to someone else (another
    // pearld with a VR of the same name): taking it over would steal that VR's traffic.
    if netconf::has_link(ns, ifname).map_err(at)? {
        return Err(TapError::Taken { ns: ns.to_string(), ifname: ifname.to_string() });
    }
    let tap = TapPort::open_in_netns(ns, ifname).map_err(at)?;
    holder.put(&key, tap.rx_fd().expect("a TAP has a descriptor")).map_err(at)?;
    Ok(tap)
}

/// The TAPs of `ifnames` in `ns`, a namespace just made: it has no devices but its loopback, so
/// the holder keeps none of its TAPs (one kept under its name belonged to a namespace gone since,
/// and is replaced); all are made on one thread that enters it.
fn new_taps(holder: &Holder, ns: &str, ifnames: &[&str]) -> Result<Vec<TapPort>, TapError> {
    let taps = pearl_vrproc::in_netns(ns, || ifnames.iter().map(|i| TapPort::open(i)).collect::<std::io::Result<Vec<_>>>())
        .map_err(TapError::Namespace)?;
    for tap in &taps {
        let ifname = tap.ifname();
        holder
            .put(&format!("{ns}/{ifname}"), tap.rx_fd().expect("a TAP has a descriptor"))
            .map_err(|error| TapError::Interface { ifname: ifname.to_string(), error })?;
    }
    Ok(taps)
}

impl VrSpace {
    /// Creates the namespace (adopting PEARL's own that survived an earlier run, else naming one made
    /// ahead from `spares`, else making and naming one now) and its TAPs, addresses,
    /// routes and neighbours. On error, whatever was made is removed again.
    /// `mtus[i]` is the MTU of the VR's interface `i` (its `mtu:`, else its port's), which its
    /// TAP gets, so the VR's kernel and daemons see the truth.
    pub fn create(
        vr: &VrConfig,
        mtus: &[u32],
        holder: &Holder,
        owned: &Owned,
        spares: Option<&Spares<FreshNetns>>,
    ) -> Result<(VrSpace, Vec<TapPort>), String> {
        let ns = &vr.name;
        let mut watch = Stopwatch::start();
        // A namespace of this name is taken only if PEARL made it (an earlier run's VR, which
        // is adopted as it runs); anyone else's is refused untouched.
        owned.check_free(ns).map_err(|e| format!("vrs {ns:?}: name: {e}"))?;
        let (mut made, mut dirs) = (false, None);
        if !owned.is_ours(ns) {
            made = true;
            let fresh = match spares.and_then(Spares::take) {
                Some(fresh) => fresh,
                None => fresh_netns::prepare_names()
                    .and_then(|()| FreshNetns::make())
                    .map_err(|e| format!("vrs {ns:?}: creating its namespace: {e}"))?,
            };
            dirs = Some(fresh.name(ns).map_err(|e| format!("vrs {ns:?}: naming its namespace: {e}"))?);
            let interfaces: Vec<String> = vr.interfaces.iter().map(|i| i.name.clone()).collect();
            let suite = suite_of(vr).map_or("-", |s| s.kind());
            if let Err(e) = owned.record(ns, suite, &interfaces) {
                let _ = fresh_netns::remove_name(ns);
                return Err(format!("vrs {ns:?}: recording its namespace as PEARL's: {e}"));
            }
        }
        watch.lap("namespace");
        let mut space = VrSpace {
            name: ns.clone(),
            interfaces: vr.interfaces.iter().map(|i| i.name.clone()).collect(),
            cgroup: None,
            daemons: None,
            adopted: !made,
        };
        // The cgroup is made beside the network: neither needs the other, and setting its CPU
        // limit walks every task group on the node (about a millisecond at 4,096 VRs).
        let (populated, cgroup) = std::thread::scope(|s| {
            let cgroup = s.spawn(|| Cgroup::create(&vr.name, vr.limits.cpu_percent, vr.limits.memory_mb << 20));
            let populated = space.populate(vr, mtus, holder, made, dirs, &mut watch);
            (populated, cgroup.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        let done = populated.and_then(|taps| {
            let cgroup = cgroup.map_err(|e| format!("limits: cgroup: {e}"))?;
            space.start_processes(vr, cgroup).map(|()| taps)
        });
        watch.lap("cgroup and daemons");
        match done {
            Ok(taps) => {
                tracing::debug!(vr = %ns, "namespace set up in {}", watch.summary());
                Ok((space, taps))
            }
            // A VR that ran before this pearld is left as it was found.
            Err(e) if space.adopted => {
                space.leave();
                Err(format!("vrs {ns:?}: {e}"))
            }
            Err(e) => {
                space.remove(holder, owned);
                Err(format!("vrs {ns:?}: {e}"))
            }
        }
    }

    /// `made`: whether the namespace was made now (else it survived an earlier run); `dirs`: its
    /// /proc/sys/net directories, if it came with them opened (made ahead, as a `FreshNetns`).
    fn populate(
        &self,
        vr: &VrConfig,
        mtus: &[u32],
        holder: &Holder,
        made: bool,
        dirs: Option<sysctl::Dirs>,
        watch: &mut Stopwatch,
    ) -> Result<Vec<TapPort>, String> {
        let ns = &self.name;
        let from_spare = dirs.is_some();
        let dirs = match dirs {
            Some(dirs) => dirs,
            None => sysctl::Dirs::open(ns).map_err(|e| format!("setting its kernel up: {e}"))?,
        };
        watch.lap("sysctl dirs");
        let sysctl = |settings: &[(&str, u8)]| {
            let settings: Vec<Setting> = settings.iter().map(|&(k, v)| Setting::dotted(k, v)).collect();
            dirs.write(&settings).map_err(|e| format!("setting its kernel up: {e}"))
        };
        sysctl(SYSCTLS_FOR_NEW_DEVICES)?;
        let taps = if made {
            new_taps(holder, ns, &vr.interfaces.iter().map(|i| i.name.as_str()).collect::<Vec<_>>())
        } else {
            vr.interfaces.iter().map(|i| tap(holder, ns, &i.name)).collect::<Result<Vec<_>, _>>()
        }
        .map_err(|e| e.to_string())?;
        watch.lap("taps");
        sysctl(SYSCTLS)?;
        watch.lap("sysctls");
        // A namespace made ahead (it came with `dirs`) has its loopback up.
        let mut ops = if from_spare { Vec::new() } else { vec![Op::LinkUp { dev: "lo", mac: None, mtu: None }] };
        for (i, &mtu) in vr.interfaces.iter().zip(mtus) {
            ops.push(Op::LinkUp { dev: &i.name, mac: Some(i.mac), mtu: Some(mtu) });
            ops.extend(i.addresses.iter().map(|&addr| Op::AddrReplace { dev: &i.name, addr }));
        }
        for n in &vr.neighbors {
            ops.push(Op::NeighReplace { dev: &vr.interfaces[n.interface].name, ip: n.ip, mac: n.mac });
        }
        for r in &vr.routes {
            ops.push(Op::RouteReplace { prefix: r.prefix, via: r.via, dev: &vr.interfaces[r.interface].name });
        }
        netconf::apply(ns, &ops).map_err(|e| format!("configuring its interfaces: {e}"))?;
        set_source_route(&dirs, vr)?;
        // The VR's kernel checks what reaches it the way its fast path does (RFC 3704; Linux's
        // rp_filter: 1 strict, 2 loose).
        for i in vr.interfaces.iter().filter(|i| i.urpf != Urpf::Off) {
            let mode = if i.urpf == Urpf::Strict { 1 } else { 2 };
            dirs.write(&[Setting::conf("ipv4", &i.name, "rp_filter", mode)]).map_err(|e| format!("interfaces: {}: urpf: {e}", i.name))?;
        }
        watch.lap("links and routes");
        Ok(taps)
    }

    /// Keeps the VR's cgroup, `cg`, and starts its routing daemons inside it (they see the
    /// TAPs, which exist by now).
    fn start_processes(&mut self, vr: &VrConfig, cg: Cgroup) -> Result<(), String> {
        if let Some(suite) = suite_of(vr) {
            let key = suite.kind();
            // Daemons that survived a killed pearld are taken over, not restarted: their
            // sessions stay up.
            let (daemons, adoption) = Daemons::adopt_or_start(suite, &cg).map_err(|e| format!("control_plane.{key}: {e}"))?;
            if !adoption.adopted.is_empty() {
                let names: Vec<&str> = adoption.adopted.iter().map(|(d, _)| d.as_str()).collect();
                tracing::info!(vr = %vr.name, "re-adopted its running {key} daemons ({})", names.join(", "));
            }
            self.daemons = Some(daemons);
        }
        self.cgroup = Some(cg);
        Ok(())
    }

    /// Whether the VR ran before this pearld and was taken over.
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// The VR's routing daemons, if it has any.
    pub fn daemons(&self) -> Option<&Daemons> {
        self.daemons.as_ref()
    }

    /// Brings the VR's processes from `old`'s limits and control plane to `new`'s: the cgroup's
    /// limits change in place; a control plane that changed (suite, daemons, command or
    /// configuration file, or with `reread` what that file holds) restarts the VR's daemons
    /// with it, which is checked first, so that a set-up the suite would refuse leaves the
    /// running daemons alone. Returns whether the daemons restarted.
    pub fn update_processes(&mut self, old: &VrConfig, new: &VrConfig, reread: bool) -> Result<bool, String> {
        let at = |e: std::io::Error| format!("vrs {:?}: {e}", new.name);
        if old.accept_source_route != new.accept_source_route {
            sysctl::Dirs::open(&self.name)
                .map_err(|e| e.to_string())
                .and_then(|dirs| set_source_route(&dirs, new))
                .map_err(|e| format!("vrs {:?}: {e}", new.name))?;
        }
        if (old.limits.cpu_percent, old.limits.memory_mb) != (new.limits.cpu_percent, new.limits.memory_mb) {
            if let Some(cg) = &self.cgroup {
                cg.set_limits(new.limits.cpu_percent, new.limits.memory_mb << 20)
                    .map_err(|e| format!("vrs {:?}: limits: cgroup: {e}", new.name))?;
            }
        }
        let unchanged = match &self.daemons {
            Some(running) => old.control_plane == new.control_plane && (!reread || running.runs_config()),
            None => new.control_plane.is_none(),
        };
        if unchanged {
            return Ok(false);
        }
        let suite = suite_of(new);
        if let Some(suite) = &suite {
            Daemons::check(&**suite).map_err(|e| format!("control_plane.{}: {}", suite.kind(), at(e)))?;
        }
        if let Some(running) = self.daemons.take() {
            let key = running.kind();
            running.stop().map_err(|e| format!("control_plane.{key}: stopping the running daemons: {}", at(e)))?;
        }
        if let (Some(suite), Some(cg)) = (suite, &self.cgroup) {
            let key = suite.kind();
            self.daemons = Some(Daemons::start(suite, cg).map_err(|e| format!("control_plane.{key}: {}", at(e)))?);
        }
        Ok(true)
    }

    /// Brings the namespace's static routes and neighbours from `old`'s to `new`'s (same
    /// interfaces); the VR's kernel is where routed learns them from.
    pub fn sync_static(&self, old: &VrConfig, new: &VrConfig) -> Result<(), String> {
        let mut ops = Vec::new();
        for r in old.routes.iter().filter(|r| !new.routes.iter().any(|n| n.prefix == r.prefix)) {
            ops.push(Op::RouteDel { prefix: r.prefix });
        }
        for n in old.neighbors.iter().filter(|n| !new.neighbors.iter().any(|m| m.ip == n.ip)) {
            ops.push(Op::NeighDel { dev: &old.interfaces[n.interface].name, ip: n.ip });
        }
        for n in new.neighbors.iter().filter(|n| !old.neighbors.contains(n)) {
            ops.push(Op::NeighReplace { dev: &new.interfaces[n.interface].name, ip: n.ip, mac: n.mac });
        }
        for r in new.routes.iter().filter(|r| !old.routes.contains(r)) {
            ops.push(Op::RouteReplace { prefix: r.prefix, via: r.via, dev: &new.interfaces[r.interface].name });
        }
        netconf::apply(&self.name, &ops).map_err(|e| format!("vrs {:?}: static routes: {e}", self.name))
    }

    /// Kills every process still in the namespace, then deletes it, with the daemons' log. The
    /// TAPs must be closed first (they vanish with their file descriptors).
    pub fn remove(mut self, holder: &Holder, owned: &Owned) {
        // Daemons first: their supervisor would restart what the cgroup removal kills.
        if let Some(daemons) = self.daemons.take() {
            let log = daemons.log();
            if let Err(e) = daemons.stop() {
                tracing::warn!("{e}");
            }
            match std::fs::remove_file(&log) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => tracing::warn!("removing {}: {e}", log.display()),
                _ => {}
            }
        }
        if let Some(cg) = self.cgroup.take() {
            if let Err(e) = cg.remove() {
                tracing::warn!(vr = %self.name, "removing its cgroup: {e}");
            }
        }
        remove_namespace(&self.name, &self.interfaces, holder, owned);
    }

    /// Leaves the VR running as it is (namespace, TAPs in the holder, cgroup, daemons) for the
    /// next pearld to adopt: pearld is about to exit, and its daemons' supervisor thread ends
    /// with it, as when pearld is killed, which adoption is made for.
    pub fn leave(mut self) {
        std::mem::forget(self.daemons.take());
        std::mem::forget(self.cgroup.take());
    }
}

/// Removes a VR namespace PEARL made, whatever still runs in it, and its TAPs from the holder;
/// a namespace of that name that is not PEARL's is left alone.
pub fn remove_namespace(ns: &str, interfaces: &[String], holder: &Holder, owned: &Owned) {
    if owned.is_ours(ns) {
        for pid in pids_in(ns) {
            // SAFETY: signalling a process by pid; a pid that is gone returns ESRCH.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if let Err(e) = fresh_netns::remove_name(ns) {
            tracing::warn!("removing namespace {ns}: {e}");
        }
    }
    if let Err(e) = owned.forget(ns) {
        tracing::warn!("the registry of PEARL's namespaces: {e}");
    }
    for i in interfaces {
        if let Err(e) = holder.delete(&format!("{ns}/{i}")) {
            tracing::warn!("the TAP holder: {e}");
        }
    }
}

/// The processes whose network namespace is `ns` (what `ip netns pids` lists), found by
/// comparing each process's namespace with the name's.
fn pids_in(ns: &str) -> Vec<i32> {
    let Ok(target) = std::fs::metadata(format!("/run/netns/{ns}")) else { return Vec::new() };
    let Ok(procs) = std::fs::read_dir("/proc") else { return Vec::new() };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::metadata(format!("/proc/{pid}/ns/net")).is_ok_and(|m| m.dev() == target.dev() && m.ino() == target.ino()))
        .collect()
}
