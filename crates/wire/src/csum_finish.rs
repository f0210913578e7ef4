//! Partial L4 checksums: finishing one as a NIC would, and recognising one that arrived
//! without a mark.
//!
//! A sender with checksum offload stores the folded pseudo-header sum in the checksum field
//! and leaves the rest to the device: sum from `csum_start` to the end, complement, store. A
//! port that carries no offload metadata (AF_XDP) still receives such frames from a veth peer;
//! the field then equals the fold of the packet's own pseudo-header sum, which is how they are
//! recognised. Finishing is idempotent in the one coincidence that matters: a complete checksum
//! that happens to equal the pseudo-header sum finishes to itself, so recognising it as partial
//! changes nothing on the wire.

use crate::checksum::{fold, sum};
use crate::extract::{L3Info, L3Kind};
use crate::numbers::ip_proto;
use crate::offload::{BadOffload, Offload, NEEDS_CSUM};

/// Completes the partial checksum `off` describes, in place; nothing to do for a frame whose
/// checksum is not partial.
#[inline]
pub fn finish_checksum(frame: &mut [u8], off: &Offload) -> Result<(), BadOffload> {
    if !off.needs_csum() {
        return Ok(());
    }
    let start = usize::from(off.csum_start);
    let at = start + usize::from(off.csum_offset);
    if start >= frame.len() {
        return Err(BadOffload { field: "csum_start", offset: start });
    }
    if at + 2 > frame.len() {
        return Err(BadOffload { field: "csum_offset", offset: at });
    }
    // As Linux's skb_checksum_help: a sum that comes out zero is sent as 0xffff, its other
    // one's-complement spelling, so UDP does not read it as "no checksum".
    let c = match !fold(sum(&frame[start..])) {
        0 => 0xffff,
        c => c,
    };
    frame[at..at + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// The offload state of a TCP or UDP packet whose checksum field holds exactly its
/// pseudo-header sum (a partial checksum nobody marked); `None` for anything else. `protocol`
/// is the upper-layer protocol the extractor found (after any IPv6 extension headers).
#[inline]
pub fn detect_partial_checksum(frame: &[u8], info: &L3Info, protocol: u8) -> Option<Offload> {
    let l4 = info.l4_offset?;
    if info.fragment {
        return None;
    }
    let csum_offset = match protocol {
        ip_proto::TCP => 16,
        ip_proto::UDP => 6,
        _ => return None,
    };
    let l3 = info.l3_offset;
    let field = frame.get(l4 + csum_offset..l4 + csum_offset + 2)?;
    let field = u16::from_be_bytes([field[0], field[1]]);
    let (addrs, l4_len) = match info.kind {
        L3Kind::Ipv4 => {
            let ip = frame.get(l3..l3 + 20)?;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            if protocol == ip_proto::UDP && field == 0 {
                return None; // no checksum at all (RFC 768)
            }
            (&ip[12..20], total.checked_sub(l4 - l3)?)
        }
        L3Kind::Ipv6 => {
            let ip = frame.get(l3..l3 + 40)?;
            let payload = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            (&ip[8..40], payload.checked_sub(l4 - l3 - 40)?)
        }
        _ => return None,
    };
    let pseudo = sum(addrs) + u64::from(protocol) + l4_len as u64;
    (field == fold(pseudo)).then_some(Offload {
        flags: NEEDS_CSUM,
        csum_start: l4 as u16,
        csum_offset: csum_offset as u16,
        ..Offload::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::checksum;
    use crate::extract::extract;

    /// An IPv4 UDP or TCP frame with a complete checksum.
    fn frame(protocol: u8, payload: &[u8]) -> Vec<u8> {
        let l4_header = if protocol == ip_proto::TCP { 20 } else { 8 };
        let l4_len = l4_header + payload.len();
        let mut f = vec![0u8; 14 + 20 + l4_len];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14..34].copy_from_slice(&[0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, protocol, 0, 0, 10, 0, 0, 2, 198, 51, 100, 7]);
        f[16..18].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
        let c = checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f[34..38].copy_from_slice(&[0x04, 0x00, 0x0f, 0xa0]);
        if protocol == ip_proto::TCP {
            f[46] = 0x50;
        } else {
            f[38..40].copy_from_slice(&(l4_len as u16).to_be_bytes());
        }
        f[34 + l4_header..].copy_from_slice(payload);
        let pseudo = sum(&f[26..34]) + u64::from(protocol) + l4_len as u64;
        let at = 34 + if protocol == ip_proto::TCP { 16 } else { 6 };
        let c = !fold(pseudo + sum(&f[34..]));
        f[at..at + 2].copy_from_slice(&c.to_be_bytes());
        f
    }

    /// The same frame as a sender with checksum offload hands it over.
    fn partial(mut f: Vec<u8>, protocol: u8) -> Vec<u8> {
        let l4_len = f.len() - 34;
        let pseudo = fold(sum(&f[26..34]) + u64::from(protocol) + l4_len as u64);
        let at = 34 + if protocol == ip_proto::TCP { 16 } else { 6 };
        f[at..at + 2].copy_from_slice(&pseudo.to_be_bytes());
        f
    }

    #[test]
    fn a_partial_checksum_is_recognised_and_finished_to_the_complete_one() {
        for protocol in [ip_proto::UDP, ip_proto::TCP] {
            let whole = frame(protocol, b"hello, router");
            let mut f = partial(whole.clone(), protocol);
            let info = extract(&f, 0).unwrap().info;
            let off = detect_partial_checksum(&f, &info, protocol).expect("partial");
            assert_eq!((off.csum_start, off.needs_csum()), (34, true));
            finish_checksum(&mut f, &off).unwrap();
            assert_eq!(f, whole, "protocol {protocol}");
            assert_eq!(detect_partial_checksum(&whole, &info, protocol), None, "a complete checksum is not partial");
        }
    }

    #[test]
    fn udp_without_a_checksum_and_other_protocols_are_left_alone() {
        let mut f = frame(ip_proto::UDP, b"x");
        f[40..42].copy_from_slice(&[0, 0]);
        let info = extract(&f, 0).unwrap().info;
        assert_eq!(detect_partial_checksum(&f, &info, ip_proto::UDP), None);
        assert_eq!(detect_partial_checksum(&f, &info, ip_proto::ICMP), None);
    }

    #[test]
    fn finishing_refuses_offsets_beyond_the_frame_by_name() {
        let mut f = frame(ip_proto::UDP, b"x");
        let e = finish_checksum(&mut f, &Offload { flags: NEEDS_CSUM, csum_start: 200, csum_offset: 6, ..Offload::default() });
        assert_eq!(e.unwrap_err().field, "csum_start");
        let e = finish_checksum(&mut f, &Offload { flags: NEEDS_CSUM, csum_start: 34, csum_offset: 100, ..Offload::default() });
        assert_eq!(e.unwrap_err().field, "csum_offset");
        let plain = f.clone();
        finish_checksum(&mut f, &Offload::default()).unwrap();
        assert_eq!(f, plain, "nothing to finish");
    }
}
