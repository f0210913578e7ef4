//! One node with N VRs, as its user meets it: pearld started from `--config` with N VRs of one
//! kind (two interfaces each on two veth ports, no routing daemon, no traffic), and measured:
//! the time until the API answers, threads and resident memory, CPU over an idle spell after
//! settling, `/v1/stats` latency, one more VR created and deleted through the API (p50), and the
//! time `POST /v1/node/stop` (`pearlctl node stop`: every VR removed, then pearld exits) takes,
//! with what it left behind (SIGTERM leaves the VRs running for the next pearld). The peer: the same N routers made with iproute2
//! (the namespaces in one `ip -batch`, then per namespace one `ip -n NS -batch` making two TAPs
//! with MACs and addresses, up), and removed with `ip -batch`; it has no process, so no idle
//! CPU or memory to compare, and its stop only unmounts (the kernel frees namespaces later).

use crate::netns::sh;
use crate::report::{median, round3};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Names of everything this benchmark makes: namespaces, veths, cgroups.
pub const PREFIX: &str = "scb";

pub struct Settings {
    pub pearld: PathBuf,
    pub kind: String,
    pub settle: Duration,
    pub idle: Duration,
    pub creates: usize,
}

/// The two veth ports every VR sits on; removed on drop.
pub struct Ports;

impl Ports {
    pub fn make() -> Result<Ports, String> {
        for i in 0..2 {
            let _ = sh(&["ip", "link", "del", &format!("{PREFIX}p{i}")]);
            sh(&["ip", "link", "add", &format!("{PREFIX}p{i}"), "type", "veth", "peer", "name", &format!("{PREFIX}q{i}")])?;
            sh(&["ip", "link", "set", &format!("{PREFIX}p{i}"), "up"])?;
            sh(&["ip", "link", "set", &format!("{PREFIX}q{i}"), "up"])?;
        }
        Ok(Ports)
    }
}

impl Drop for Ports {
    fn drop(&mut self) {
        for i in 0..2 {
            let _ = sh(&["ip", "link", "del", &format!("{PREFIX}p{i}")]);
        }
    }
}

fn mac(vr: usize, interface: usize, kind: &str) -> String {
    if kind == "shared" {
        format!("02:{:02x}:{:02x}:00:00:{interface:02x}", vr & 0xff, vr >> 8)
    } else {
        format!("02:00:{:02x}:{:02x}:01:{interface:02x}", vr >> 8, vr & 0xff)
    }
}

fn vr_item(vr: usize, kind: &str) -> Value {
    let interfaces: Vec<Value> = (0..2)
        .map(|i| json!({"name": format!("eth{i}"), "port": format!("p{i}"), "mac": mac(vr, i, kind), "addresses": [format!("10.{}.0.1/24", i + 1)]}))
        .collect();
    json!({"name": format!("{PREFIX}{vr}"), "id": vr, "kind": kind, "interfaces": interfaces})
}

/// pearld, killed if the benchmark stops early.
struct Pearld(Child);

impl Drop for Pearld {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The node's figures at `n` VRs and its iproute2 peer's.
pub fn point(n: usize, s: &Settings) -> Result<Value, String> {
    let dir = std::env::temp_dir().join(format!("pearl-scale-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ports: Vec<Value> =
        (0..2).map(|i| json!({"name": format!("p{i}"), "interface": format!("{PREFIX}p{i}"), "driver": "af_packet"})).collect();
    let vrs: Vec<Value> = (0..n).map(|v| vr_item(v, &s.kind)).collect();
    let config = dir.join("pearl.yaml");
    std::fs::write(&config, json!({"ports": ports, "vrs": vrs}).to_string()).map_err(|e| e.to_string())?;
    let api = dir.join("api.sock");
    let log = std::fs::File::create(dir.join("pearld.log")).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut pearld = Pearld(
        Command::new(&s.pearld)
            .arg("--config")
            .arg(&config)
            .arg("--api")
            .arg(&api)
            .arg("--state")
            .arg(dir.join("state"))
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", s.pearld.display()))?,
    );
    let pid = pearld.0.id();
    while call(&api, "GET", "/healthz", None).is_err() {
        if let Ok(Some(status)) = pearld.0.try_wait() {
            let log = std::fs::read_to_string(dir.join("pearld.log")).unwrap_or_default();
            return Err(format!("pearld exited ({status}): {}", &log[log.len().saturating_sub(2000)..]));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let up = started.elapsed().as_secs_f64();
    // The VRs' kernels announce themselves for a while after their TAPs come up (DAD, MLD
    // reports): idle is what follows.
    std::thread::sleep(s.settle);
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| e.to_string())?.count();
    let rss_mib = rss_kib(pid)? as f64 / 1024.0;
    let (t0, c0) = (Instant::now(), cpu_ticks(pid)?);
    std::thread::sleep(s.idle);
    let idle_cpu = (cpu_ticks(pid)? - c0) as f64 / clock_ticks() / t0.elapsed().as_secs_f64();
    let stats_ms = median((0..5).map(|_| timed(|| call(&api, "GET", "/v1/stats", None))).collect::<Result<_, _>>()?);
    let (mut create_ms, mut delete_ms) = (Vec::new(), Vec::new());
    for k in 0..s.creates {
        // Ids above the N present: one more VR with N there.
        let item = vr_item(n + k, &s.kind);
        create_ms.push(timed(|| call(&api, "POST", "/v1/vrs", Some(&item)))?);
        delete_ms.push(timed(|| call(&api, "DELETE", &format!("/v1/vrs/{PREFIX}{}", n + k), None))?);
    }
    let stopping = Instant::now();
    call(&api, "POST", "/v1/node/stop", None)?;
    pearld.0.wait().map_err(|e| e.to_string())?;
    let stop = stopping.elapsed().as_secs_f64();
    let left = leftovers()?;
    let _ = std::fs::remove_dir_all(&dir);
    drop(pearld);
    // The kernel frees the namespaces of the run above for a while after it (~7 ms each).
    let freeing = Duration::from_millis(8 * n as u64).min(Duration::from_secs(30));
    std::thread::sleep(freeing);
    let (peer_up, peer_stop) = kernel_peer(n, &s.kind)?;
    std::thread::sleep(freeing);
    let opt = |xs: Vec<f64>| if xs.is_empty() { Value::Null } else { json!(round1(median(xs))) };
    Ok(json!({
        "vrs": n, "kind": s.kind, "start_s": round3(up), "threads": threads, "rss_mib": round1(rss_mib),
        "rss_per_vr_kib": round1(rss_mib * 1024.0 / n as f64), "idle_cpu_percent": (idle_cpu * 1e4).round() / 100.0,
        "idle_seconds": s.idle.as_secs_f64(), "settle_seconds": s.settle.as_secs_f64(), "stats_ms_p50": round1(stats_ms),
        "create_ms_p50": opt(create_ms), "delete_ms_p50": opt(delete_ms), "stop_s": round3(stop), "left_behind": left,
        "kernel_peer": {"start_s": round3(peer_up), "stop_s": round3(peer_stop)},
        "start_vs_kernel": round3(up / peer_up), "stop_vs_kernel": round3(stop / peer_stop.max(1e-3)),
    }))
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn timed(f: impl FnOnce() -> Result<String, String>) -> Result<f64, String> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// One HTTP/1.1 request on pearld's Unix socket; the body of a 2xx answer.
fn call(api: &Path, method: &str, path: &str, body: Option<&Value>) -> Result<String, String> {
    let mut s = UnixStream::connect(api).map_err(|e| format!("{}: {e}", api.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(120))).map_err(|e| e.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: pearld\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).map_err(|e| format!("{method} {path}: {e}"))?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).map_err(|e| format!("{method} {path}: {e}"))?;
    let status: u16 = reply.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let payload = reply.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    if !(200..300).contains(&status) {
        return Err(format!("{method} {path}: {status} {}", &payload[..payload.len().min(300)]));
    }
    Ok(payload)
}

fn cpu_ticks(pid: u32) -> Result<u64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).ok_or("unreadable /proc/PID/stat");
    Ok(field(11)? + field(12)?)
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

fn rss_kib(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    Ok(status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0))
}

/// Namespaces and cgroups with the benchmark's prefix still there.
fn leftovers() -> Result<Value, String> {
    let namespaces = std::fs::read_dir("/run/netns")
        .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX)).count())
        .unwrap_or(0);
    let found = Command::new("find")
        .args(["/sys/fs/cgroup", "-maxdepth", "4", "-type", "d", "-name", &format!("{PREFIX}*")])
        .output()
        .map_err(|e| format!("find: {e}"))?;
    Ok(json!({"namespaces": namespaces, "cgroups": String::from_utf8_lossy(&found.stdout).lines().count()}))
}

fn batch(lines: &[String], netns: Option<&str>) -> Result<(), String> {
    let mut cmd = Command::new("ip");
    if let Some(ns) = netns {
        cmd.args(["-n", ns]);
    }
    let mut child = cmd
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("ip: {e}"))?;
    child.stdin.take().expect("piped").write_all((lines.join("\n") + "\n").as_bytes()).map_err(|e| format!("ip -batch: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("ip -batch: {e}"))?;
    if !out.status.success() {
        return Err(format!("ip -batch: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// Seconds to make and to remove N namespaces with two configured TAPs each.
fn kernel_peer(n: usize, kind: &str) -> Result<(f64, f64), String> {
    let names: Vec<String> = (0..n).map(|v| format!("{PREFIX}k{v}")).collect();
    let started = Instant::now();
    let made = (|| {
        batch(&names.iter().map(|ns| format!("netns add {ns}")).collect::<Vec<_>>(), None)?;
        for (v, ns) in names.iter().enumerate() {
            let mut lines = vec!["link set lo up".to_string()];
            for i in 0..2 {
                lines.push(format!("tuntap add dev eth{i} mode tap"));
                lines.push(format!("link set eth{i} address {}", mac(v, i, kind)));
                lines.push(format!("addr add 10.{}.0.1/24 dev eth{i}", i + 1));
                lines.push(format!("link set eth{i} up"));
            }
            batch(&lines, Some(ns))?;
        }
        Ok::<_, String>(started.elapsed().as_secs_f64())
    })();
    let stopping = Instant::now();
    let present: Vec<String> =
        names.iter().filter(|ns| Path::new("/run/netns").join(ns).exists()).map(|ns| format!("netns del {ns}")).collect();
    if !present.is_empty() {
        batch(&present, None)?;
    }
    Ok((made?, stopping.elapsed().as_secs_f64()))
}
