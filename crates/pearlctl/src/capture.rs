//! `pearlctl capture VR [--interface I] [--point rx|tx|slow] [--count N] [--seconds S] -w FILE`:
//! pearld records the VR's frames where they enter (rx), leave (tx) or go to its kernel (slow)
//! and answers a pcap file, which goes to FILE (`-` for standard output, e.g. into tcpdump -r -).

use crate::cli::CaptureArgs;
use crate::client::Client;
use crate::failure::{Failure, DAEMON};
use crate::vr;
use serde_json::Value;
use std::io::Write;
use std::time::Duration;

const PCAP: &str = "application/vnd.tcpdump.pcap";
/// How long past the capture's own duration pearld may take to answer.
const GRACE: Duration = Duration::from_secs(10);

pub fn run(client: &Client, a: &CaptureArgs) -> Result<(), Failure> {
    let (name, file) = (a.vr.as_str(), a.write.as_str());
    let (count, seconds) = (a.count, a.seconds);
    let mut body = serde_json::Map::new();
    for (k, v) in [
        ("point", a.point.clone().map(Value::from)),
        ("interface", a.interface.clone().map(Value::from)),
        ("count", count.map(Value::from)),
        ("seconds", seconds.map(Value::from)),
    ] {
        if let Some(v) = v {
            body.insert(k.to_string(), v);
        }
    }
    let path = vr::path(name, "/capture");
    // Without --seconds the capture lasts as long as pearld decides (or until --count frames).
    let wait = seconds.map(|s| Duration::from_secs(s) + GRACE);
    let reply = client.fetch("POST", &path, Some(&Value::Object(body)), wait).map_err(|f| {
        if f.field.as_deref() == Some("path") {
            Failure::new(DAEMON, "this pearld does not capture (it has no /v1/vrs/NAME/capture); run a newer pearld")
        } else {
            vr::unknown(name)(f)
        }
    })?;
    if !reply.content_type.starts_with(PCAP) {
        return Err(Failure::new(DAEMON, format!("pearld answered the capture with {:?}, not {PCAP}", reply.content_type)));
    }
    let written = if file == "-" {
        std::io::stdout().lock().write_all(&reply.body).and_then(|_| std::io::stdout().flush())
    } else {
        std::fs::write(file, &reply.body)
    };
    written.map_err(|e| Failure::new(DAEMON, format!("-w {file}: {e}")))?;
    match packets(&reply.body) {
        Some(n) => eprintln!("pearlctl: captured {n} packet(s) of VR {name} to {file}"),
        None => eprintln!("pearlctl: wrote {} bytes of VR {name}'s capture to {file}", reply.body.len()),
    }
    Ok(())
}

/// The number of packets in a classic pcap file, if it is one.
fn packets(pcap: &[u8]) -> Option<usize> {
    let little = match pcap.get(..4)? {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => return None,
    };
    let (mut at, mut n) = (24, 0);
    while at + 16 <= pcap.len() {
        let b: [u8; 4] = pcap[at + 8..at + 12].try_into().ok()?;
        at += 16 + if little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) } as usize;
        n += 1;
    }
    (at == pcap.len()).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_counted_in_either_byte_order() {
        let mut le = vec![0xd4, 0xc3, 0xb2, 0xa1];
        le.resize(24, 0);
        for len in [60u32, 1514] {
            le.extend_from_slice(&[0; 8]);
            le.extend_from_slice(&len.to_le_bytes());
            le.extend_from_slice(&len.to_le_bytes());
            le.resize(le.len() + len as usize, 0);
        }
        assert_eq!(packets(&le), Some(2));
        assert_eq!(packets(&le[..le.len() - 1]), None, "a truncated record");
        let mut be = vec![0xa1, 0xb2, 0xc3, 0xd4];
        be.resize(24, 0);
        assert_eq!(packets(&be), Some(0));
        assert_eq!(packets(b"not a pcap file at all, no"), None);
    }
}
