//! A node's record (`/pearl/nodes/NODE`, bound to its lease) and where its tunnels end
//! (`/pearl/underlay/NODE`, kept while it is down).

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub name: String,
    /// Its API's TCP address, when it serves one (`--api-tcp`).
    pub api: Option<String>,
    pub underlay: Underlay,
    /// `GET /v1/node`'s capacity, granted and free (the resource manager's figures).
    pub capacity: Value,
    /// The VRs it runs, `NET/VR`.
    pub vrs: Vec<String>,
    /// When it registered (Unix seconds).
    pub since: u64,
    pub lease: i64,
    pub lease_ttl: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Underlay {
    /// The device its tunnels' UDP leaves by.
    pub device: String,
    pub address: String,
    pub mtu: u32,
}

impl Underlay {
    /// The underlay `device` as the kernel has it: its first address (IPv4 first) and MTU.
    pub fn of(device: &str) -> Result<Underlay, String> {
        let mtu = std::fs::read_to_string(format!("/sys/class/net/{device}/mtu"))
            .map_err(|e| format!("--underlay {device}: {e}"))?
            .trim()
            .parse()
            .map_err(|_| format!("--underlay {device}: no MTU"))?;
        let out = std::process::Command::new("ip")
            .args(["-j", "addr", "show", "dev", device])
            .output()
            .map_err(|e| format!("ip addr show {device}: {e}"))?;
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let addrs: Vec<(String, String)> = shown[0]["addr_info"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["scope"] == "global")
            .filter_map(|a| Some((a["family"].as_str()?.to_string(), a["local"].as_str()?.to_string())))
            .collect();
        let address = addrs
            .iter()
            .find(|(f, _)| f == "inet")
            .or(addrs.first())
            .map(|(_, a)| a.clone())
            .ok_or_else(|| format!("--underlay {device}: the device has no global address"))?;
        Ok(Underlay { device: device.to_string(), address, mtu })
    }

    /// The device of the route to `host` (the cluster's first member): the default underlay.
    pub fn device_towards(host: &str) -> Result<String, String> {
        let out = std::process::Command::new("ip")
            .args(["-j", "route", "get", host])
            .output()
            .map_err(|e| format!("ip route get {host}: {e}"))?;
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        shown[0]["dev"]
            .as_str()
            .map(String::from)
            .ok_or_else(|| format!("no route to the cluster at {host}; name the device with --underlay"))
    }
}
