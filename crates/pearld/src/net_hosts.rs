//! What a net makes outside the document: its hosts' namespaces (interfaces, addresses,
//! routes, a command) and the veths of links with a host at one end; and a link's carrier. Made
//! with `ip`, as an operator would (these are made once per apply, never per packet); every
//! name made here derives from the net (`NET-HOST` namespaces, `pv…` devices), so a destroy
//! removes exactly these.

use crate::host_mounts::in_starter_mounts;
use pearl_control::{HostPlan, LinkEnd, LinkPlan};
use std::io;
use std::process::Command;

/// Why a net's host, veth or carrier is not as planned.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// ip: ERROR (the `ip` command did not run)
    #[error("ip: {0}")]
    NoIp(io::Error),
    /// ip ARGS: what it said (the kernel refused)
    #[error("ip {args}: {said}")]
    Refused { args: String, said: String },
    /// ERROR (the mount namespace of pearld's starter, where namespaces are named, was not entered)
    #[error("{0}")]
    StarterMounts(io::Error),
    /// hosts NAME: command: ERROR (the host's `command` did not start)
    #[error("hosts {host}: command: {error}")]
    Command { host: String, error: io::Error },
}

fn ip(args: &[&str]) -> Result<(), HostsError> {
    let out = Command::new("ip").args(args).output().map_err(HostsError::NoIp)?;
    if out.status.success() {
        return Ok(());
    }
    Err(HostsError::Refused { args: args.join(" "), said: String::from_utf8_lossy(&out.stderr).trim().to_string() })
}

/// `ip netns ...` where pearld's starter sees the name (see `host_mounts`).
fn ip_netns(args: &[&str]) -> Result<(), HostsError> {
    in_starter_mounts(|| Ok(ip(args))).map_err(HostsError::StarterMounts)?
}

/// Makes host `h`'s namespace with its loopback up (its interfaces come with its links).
pub fn make_host(h: &HostPlan) -> Result<(), HostsError> {
    ip_netns(&["netns", "add", &h.netns])?;
    ip(&["-n", &h.netns, "link", "set", "lo", "up"])
}

/// Sets up host `h`'s interfaces (made by its links), addresses and routes, then starts its command.
pub fn configure_host(h: &HostPlan) -> Result<(), HostsError> {
    let ns = h.netns.as_str();
    for i in &h.interfaces {
        if let Some(mac) = &i.mac {
            ip(&["-n", ns, "link", "set", &i.name, "address", mac])?;
        }
        if let Some(mtu) = i.mtu {
            ip(&["-n", ns, "link", "set", &i.name, "mtu", &mtu.to_string()])?;
        }
        for a in &i.addresses {
            ip(&["-n", ns, "addr", "add", a, "dev", &i.name])?;
        }
        ip(&["-n", ns, "link", "set", &i.name, "up"])?;
    }
    for (to, via) in &h.routes {
        ip(&["-n", ns, "route", "add", to, "via", via])?;
    }
    if let Some(cmd) = &h.command {
        Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", cmd])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|error| HostsError::Command { host: h.name.clone(), error })?;
    }
    Ok(())
}

/// Removes host `h`: what runs in it is killed (by PID), then its namespace goes, and with it
/// its ends of veths (the other ends go with them).
pub fn remove_host(h: &HostPlan) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", &h.netns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            // SAFETY: kill with a PID the kernel listed in the host's namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    if let Err(e) = ip_netns(&["netns", "del", &h.netns]) {
        tracing::warn!("nets: {e}");
    }
}

/// Makes the veth of link `l` (a host at one end at least).
pub fn make_veth(l: &LinkPlan) -> Result<(), HostsError> {
    let [(a_ns, a), (b_ns, b)] = [l.ends[0].veth(), l.ends[1].veth()];
    let mut args = vec!["link", "add", a];
    if let Some(ns) = a_ns {
        args.extend(["netns", ns]);
    }
    args.extend(["type", "veth", "peer", "name", b]);
    if let Some(ns) = b_ns {
        args.extend(["netns", ns]);
    }
    ip(&args)?;
    for end in &l.ends {
        if let LinkEnd::Vr { port, .. } = end {
            ip(&["link", "set", port, "up"])?;
        }
    }
    Ok(())
}

/// Removes link `l`'s veth (both ends go with either).
pub fn remove_veth(l: &LinkPlan) {
    let (ns, dev) = l.ends[0].veth();
    let mut args = vec![];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    args.extend(["link", "del", dev]);
    if let Err(e) = ip(&args) {
        tracing::debug!("nets: {e}");
    }
}

/// Carrier on or off at both ends of `l`, as their kernels see it: a VR's TAP (its FRR sees the
/// link go down at once), a veth's end in pearld's namespace (the host at the other end loses
/// its carrier). A wire's own state is the caller's.
/// The carrier of VR `vr`'s interface `interface` (a tunnel end whose far node is up or down).
pub fn set_vr_carrier(vr: &str, interface: &str, up: bool) -> Result<(), HostsError> {
    ip(&["-n", vr, "link", "set", interface, "carrier", if up { "on" } else { "off" }])
}

pub fn set_carrier(l: &LinkPlan, up: bool) -> Result<(), HostsError> {
    let word = if up { "on" } else { "off" };
    for end in &l.ends {
        if let LinkEnd::Vr { vr, interface, port } = end {
            ip(&["-n", vr, "link", "set", interface, "carrier", word])?;
            if l.is_veth() {
                ip(&["link", "set", port, if up { "up" } else { "down" }])?;
            }
        }
    }
    Ok(())
}
