//! `GET /v1/vrs/{name}/capture`: a bounded pcap of one VR's frames at a chosen point (rx, tx,
//! slow path), taken while forwarding goes on.

use crate::node::Node;
use pearl_dataplane::capture::{CapturePoint, TapSpec};
use pearl_dataplane::port::pcap_file::PcapWriter;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Bounds a capture may ask for.
pub const MAX_COUNT: u64 = 100_000;
pub const MAX_SECONDS: u64 = 60;
/// A capture's pcap never grows past this, whatever the count.
const MAX_BYTES: usize = 64 << 20;
const SNAPLEN: u32 = 2048;

pub struct Request<'a> {
    pub vr: &'a str,
    pub point: CapturePoint,
    pub interface: Option<&'a str>,
    pub count: u64,
    pub seconds: u64,
}

/// A capture refused before it started: the field at fault and why.
pub struct Refused {
    pub status: u16,
    pub field: &'static str,
    pub message: String,
}

/// Captures until `count` frames, `seconds` or the byte bound; returns the pcap.
pub fn capture(node: &Node, req: &Request) -> Result<Vec<u8>, Refused> {
    let config = node.config();
    let vr = config.vrs.iter().find(|v| v.name == req.vr).ok_or_else(|| Refused {
        status: 404,
        field: "name",
        message: format!("no VR named {:?}", req.vr),
    })?;
    let port = match req.interface {
        None => None,
        Some(name) => Some(vr.interfaces.iter().find(|i| i.name == name).map(|i| i.port as u16).ok_or_else(|| Refused {
            status: 404,
            field: "interface",
            message: format!(
                "VR {} has no interface {name:?} (it has {})",
                vr.name,
                vr.interfaces.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })?),
    };
    let mut rings = node.dataplane.capture_start(TapSpec { vr: vr.id, point: req.point, port }).map_err(|e| Refused {
        status: 503,
        field: "point",
        message: format!("cannot start a capture: {e}"),
    })?;
    let mut pcap = PcapWriter::new(Vec::new(), SNAPLEN).expect("writing to memory");
    let deadline = Instant::now() + Duration::from_secs(req.seconds);
    let mut taken = 0u64;
    let mut bytes = 0usize;
    while taken < req.count && bytes < MAX_BYTES && Instant::now() < deadline {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut got = 0;
        for ring in rings.rings.iter_mut() {
            got += ring.drain(usize::MAX, |_, frame| {
                if taken < req.count && bytes < MAX_BYTES {
                    pcap.write_frame(now.as_secs() as u32, now.subsec_micros(), frame).expect("writing to memory");
                    taken += 1;
                    bytes += frame.len() + 16;
                }
            });
        }
        if got == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    node.dataplane.capture_stop(rings.id);
    let dropped = rings.dropped.load(std::sync::atomic::Ordering::Relaxed);
    if dropped > 0 {
        tracing::warn!(vr = %vr.name, "capture: {dropped} frame copies dropped (the reader fell behind)");
    }
    Ok(pcap.into_inner())
}
