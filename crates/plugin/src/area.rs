//! Moving a run's frames into a plugin's batch area and its verdicts back out (the layout is
//! `pearl_plugin_sdk::abi`). What the plugin may have scribbled over (offsets, capacities) is
//! never read back: the host keeps its own copy of where each frame is.
//!
//! Offloads: a frame whose sender left its L4 checksum partial reaches the plugin with the
//! checksum finished, so that what the plugin makes of it (headers in front, a trailer, new
//! addresses) needs no offsets kept true. A GSO super-packet keeps its partial checksum (it is
//! made for each segment when it is cut); one that comes back longer had headers put in front
//! (an encapsulation, as an XDP program's grown head) and is cut in software on the way out;
//! one that comes back shorter had headers taken off the front.

use pearl_control::VrConfig;
use pearl_plugin_sdk::abi::*;
use pearl_program::packet::Packet;
use pearl_program::reasons::{Exception, VrDrop};
use pearl_program::Decision;
use pearl_wire::{finish_checksum, EthernetRepr, Offload};
use std::sync::Arc;

/// Where the host put one frame in the area: its offset and capacity.
#[derive(Clone, Copy, Default)]
pub struct Slot {
    offset: usize,
    cap: usize,
    /// The frame in the area is complete: its partial checksum (if any, but a super-packet's)
    /// was finished there.
    complete: bool,
}

/// A VR interface index for a frame from a port the VR has no interface on.
pub const NO_INTERFACE: u16 = u16::MAX;

/// A VR's ports by interface (`[VR interface]`: its port) and the other way round (`[port]`:
/// the VR's first interface there, or `NO_INTERFACE`), as packing and verdicts need them.
pub fn vr_ports(vr: &VrConfig) -> (Vec<u16>, Arc<[u16]>) {
    let ports: Vec<u16> = vr.interfaces.iter().map(|i| i.port as u16).collect();
    let mut interface_of_port = vec![NO_INTERFACE; ports.iter().map(|&p| usize::from(p) + 1).max().unwrap_or(0)];
    for (i, &p) in ports.iter().enumerate().rev() {
        interface_of_port[usize::from(p)] = i as u16;
    }
    (ports, interface_of_port.into())
}

/// Writes the first frames of `packets` into `area`, as many as fit (at most `MAX_BATCH`),
/// recording where each went in `slots`; returns how many. 0: the first frame alone is
/// larger than the area's frame room.
pub fn pack(area: &mut [u8], packets: &[Packet], interface_of_port: &[u16], time_ns: u64, slots: &mut Vec<Slot>) -> usize {
    slots.clear();
    let mut at = FRAMES_AT;
    for p in packets.iter().take(MAX_BATCH) {
        let cap = (p.len() + HEADROOM).next_multiple_of(8);
        if at + cap > area.len() {
            break;
        }
        area[at..at + p.len()].copy_from_slice(p.data());
        // Offsets the plugin cannot be trusted to keep. A frame they do not fit stays as it
        // came, partial, and the port drops it.
        let complete = p.offload.is_gso() || finish_checksum(&mut area[at..at + p.len()], &p.offload).is_ok();
        let d = HEADER_LEN + slots.len() * DESCRIPTOR_LEN;
        let interface = interface_of_port.get(usize::from(p.in_port)).copied().unwrap_or(NO_INTERFACE);
        put32(area, d + DESC_OFFSET, at);
        put32(area, d + DESC_LEN, p.len());
        put32(area, d + DESC_CAP, cap);
        area[d + DESC_INTERFACE..d + DESC_INTERFACE + 2].copy_from_slice(&interface.to_le_bytes());
        area[d + DESC_VERDICT..d + DESC_VERDICT + 2].copy_from_slice(&VERDICT_DROP.to_le_bytes());
        area[d + DESC_COPIES..d + DESC_COPIES + 8].fill(0);
        slots.push(Slot { offset: at, cap, complete });
        at += cap;
    }
    put32(area, HEADER_COUNT, slots.len());
    area[HEADER_TIME_NS..HEADER_TIME_NS + 8].copy_from_slice(&time_ns.to_le_bytes());
    slots.len()
}

/// The plugin's verdict on frame `k` (at `slot`), the frame rewritten as it left it when it is
/// sent; `ports` maps the VR's interfaces to the data plane's ports.
pub fn verdict(area: &[u8], k: usize, slot: Slot, packet: &mut Packet, ports: &[u16]) -> Decision {
    let d = HEADER_LEN + k * DESCRIPTOR_LEN;
    let v = u16::from_le_bytes([area[d + DESC_VERDICT], area[d + DESC_VERDICT + 1]]);
    let copies = u64::from_le_bytes(area[d + DESC_COPIES..d + DESC_COPIES + 8].try_into().expect("8 bytes"));
    let send = (v & VERDICT_SEND != 0).then(|| usize::from(v & !VERDICT_SEND));
    let decision = match (v, send) {
        (_, Some(i)) => match ports.get(i) {
            None => return Decision::Drop(VrDrop::ProgramBadPort),
            Some(_) if copies != 0 => Decision::Copies { interfaces: copies | 1u64.checked_shl(i as u32).unwrap_or(0), slow: false },
            Some(&port) => Decision::Send { port },
        },
        (VERDICT_SLOW, _) if copies == 0 => return Decision::Slow(Exception::Program),
        (VERDICT_SLOW, _) => Decision::Copies { interfaces: copies, slow: true },
        _ if copies != 0 => Decision::Copies { interfaces: copies, slow: false },
        _ => return Decision::Drop(VrDrop::Program),
    };
    if !take_rewritten(area, d, slot, packet) {
        return Decision::Drop(VrDrop::Program);
    }
    decision
}

/// Makes `packet` the frame as the plugin left it at `slot` (descriptor at `d`); false if
/// the plugin made it longer than its room.
fn take_rewritten(area: &[u8], d: usize, slot: Slot, packet: &mut Packet) -> bool {
    let len = get32(area, d + DESC_LEN);
    if len > slot.cap {
        return false;
    }
    let (before, l3) = (packet.len(), EthernetRepr::l3_offset(packet.data()).unwrap_or(0));
    packet.set_len(len);
    if packet.len() != len {
        return false;
    }
    packet.data_mut().copy_from_slice(&area[slot.offset..slot.offset + len]);
    if !packet.offload.is_gso() {
        if slot.complete {
            packet.offload = Offload::default();
        }
        return true;
    }
    // A super-packet the plugin made longer had headers put in front of it; what it made of
    // one must still be one, or it is the plugin's fault.
    packet.follow_head(len as i32 - before as i32, l3)
}

fn put32(area: &mut [u8], at: usize, v: usize) {
    area[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
}

fn get32(area: &[u8], at: usize) -> usize {
    u32::from_le_bytes([area[at], area[at + 1], area[at + 2], area[at + 3]]) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_program::packet::PacketPool;
    use pearl_wire::GsoSegments;

    fn packets(pool: &mut PacketPool, frames: &[(u16, Vec<u8>)]) -> Vec<Packet> {
        frames
            .iter()
            .map(|(port, f)| {
                let mut p = pool.take().unwrap();
                p.fill(f);
                p.in_port = *port;
                p
            })
            .collect()
    }

    fn desc(area: &[u8], k: usize, field: usize) -> usize {
        get32(area, HEADER_LEN + k * DESCRIPTOR_LEN + field)
    }

    #[test]
    fn frames_are_laid_out_as_the_sdk_reads_them_and_come_back_as_rewritten() {
        let mut pool = PacketPool::new(8);
        let mut batch = packets(&mut pool, &[(4, vec![0xaa; 60]), (7, vec![0xbb; 70])]);
        let mut area = vec![0u8; 8192];
        let mut slots = Vec::new();
        // Port 4 is the VR's interface 1, port 7 its interface 0.
        let interface_of_port = [NO_INTERFACE, NO_INTERFACE, NO_INTERFACE, NO_INTERFACE, 1, NO_INTERFACE, NO_INTERFACE, 0];
        assert_eq!(pack(&mut area, &batch, &interface_of_port, 99, &mut slots), 2);
        assert_eq!((get32(&area, HEADER_COUNT), u64::from_le_bytes(area[8..16].try_into().unwrap())), (2, 99));
        let (o0, o1) = (desc(&area, 0, DESC_OFFSET), desc(&area, 1, DESC_OFFSET));
        assert_eq!(o0, FRAMES_AT);
        assert!(desc(&area, 0, DESC_CAP) >= 60 + HEADROOM && o1 >= o0 + 60 + HEADROOM);
        assert_eq!((&area[o0..o0 + 60], &area[o1..o1 + 70]), (&[0xaa; 60][..], &[0xbb; 70][..]));
        assert_eq!(u16::from_le_bytes([area[HEADER_LEN + DESC_INTERFACE], area[HEADER_LEN + DESC_INTERFACE + 1]]), 1);
        assert_eq!(
            u16::from_le_bytes([
                area[HEADER_LEN + DESCRIPTOR_LEN + DESC_INTERFACE],
                area[HEADER_LEN + DESCRIPTOR_LEN + DESC_INTERFACE + 1]
            ]),
            0
        );

        // The plugin sends frame 0 out of interface 0, 4 bytes longer and rewritten, and
        // scribbles over the offset it was given: the host's own record of it counts.
        area[o0..o0 + 64].fill(0xcc);
        put32(&mut area, HEADER_LEN + DESC_LEN, 64);
        put32(&mut area, HEADER_LEN + DESC_OFFSET, 0);
        area[HEADER_LEN + DESC_VERDICT..][..2].copy_from_slice(&VERDICT_SEND.to_le_bytes());
        area[HEADER_LEN + DESCRIPTOR_LEN + DESC_VERDICT..][..2].copy_from_slice(&VERDICT_SLOW.to_le_bytes());
        let ports = [7, 4];
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &ports), Decision::Send { port: 7 });
        assert_eq!(batch[0].data(), &[0xcc; 64][..]);
        assert_eq!(verdict(&area, 1, slots[1], &mut batch[1], &ports), Decision::Slow(Exception::Program));
        assert_eq!(batch[1].data(), &[0xbb; 70][..], "what goes to the kernel goes as it arrived");
    }

    #[test]
    fn bad_verdicts_drop_the_frame_by_reason() {
        let mut pool = PacketPool::new(8);
        let mut batch = packets(&mut pool, &[(0, vec![1; 60])]);
        let mut area = vec![0u8; 8192];
        let mut slots = Vec::new();
        pack(&mut area, &batch, &[0], 0, &mut slots);
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &[0]), Decision::Drop(VrDrop::Program), "undecided");
        area[HEADER_LEN + DESC_VERDICT..][..2].copy_from_slice(&(VERDICT_SEND | 3).to_le_bytes());
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &[0]), Decision::Drop(VrDrop::ProgramBadPort));
        area[HEADER_LEN + DESC_VERDICT..][..2].copy_from_slice(&VERDICT_SEND.to_le_bytes());
        put32(&mut area, HEADER_LEN + DESC_LEN, slots[0].cap + 1);
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &[0]), Decision::Drop(VrDrop::Program), "longer than its room");
        assert_eq!(batch[0].data(), &[1; 60][..]);
    }

    #[test]
    fn copies_add_interfaces_to_the_verdict_and_carry_the_frame_as_rewritten() {
        let mut pool = PacketPool::new(8);
        let mut batch = packets(&mut pool, &[(0, vec![1; 60])]);
        let mut area = vec![0u8; 8192];
        let mut slots = Vec::new();
        let set = |area: &mut [u8], verdict: u16, copies: u64| {
            area[HEADER_LEN + DESC_VERDICT..][..2].copy_from_slice(&verdict.to_le_bytes());
            area[HEADER_LEN + DESC_COPIES..][..8].copy_from_slice(&copies.to_le_bytes());
        };
        area[HEADER_LEN + DESC_COPIES..][..8].fill(0xff);
        pack(&mut area, &batch, &[0], 0, &mut slots);
        assert_eq!(get32(&area, HEADER_LEN + DESC_COPIES) + get32(&area, HEADER_LEN + DESC_COPIES + 4), 0, "copies start empty");
        let ports = [5, 6, 7];
        area[slots[0].offset..][..60].fill(2);
        set(&mut area, VERDICT_SEND | 1, 0b101);
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &ports), Decision::Copies { interfaces: 0b111, slow: false });
        assert_eq!(batch[0].data(), &[2; 60][..]);
        set(&mut area, VERDICT_SLOW, 0b10);
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &ports), Decision::Copies { interfaces: 0b10, slow: true });
        set(&mut area, VERDICT_DROP, 0b1);
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &ports), Decision::Copies { interfaces: 0b1, slow: false });
        set(&mut area, VERDICT_SEND | 3, 0b1);
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &ports), Decision::Drop(VrDrop::ProgramBadPort));
    }

    /// An IPv4 TCP frame with `payload`, its checksum partial (the pseudo-header sum), as a host
    /// with checksum offload hands it over; a super-packet of `gso_size` segments if not 0.
    fn offloaded_tcp(pool: &mut PacketPool, payload: &[u8], gso_size: u16) -> Packet {
        use pearl_wire::checksum::{fold, sum};
        let mut f = vec![2, 0, 0, 0, 7, 0, 2, 0xaa, 0, 0, 0, 1, 0x08, 0x00];
        let total = 40 + payload.len();
        f.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2]);
        let c = !fold(sum(&f[14..34]));
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&[0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(payload);
        let pseudo = fold(sum(&f[26..34]) + 6 + (total - 20) as u64);
        f[50..52].copy_from_slice(&pseudo.to_be_bytes());
        let mut p = pool.take_for(f.len()).unwrap();
        p.fill(&f);
        p.offload = Offload {
            flags: pearl_wire::offload::NEEDS_CSUM,
            gso: if gso_size > 0 { pearl_wire::Gso::TcpV4 } else { pearl_wire::Gso::None },
            gso_size,
            csum_start: 34,
            csum_offset: 16,
            hdr_len: 54,
            ..Offload::default()
        };
        p
    }

    #[test]
    fn a_partial_checksum_reaches_the_plugin_finished_and_its_rewrite_leaves_complete() {
        use pearl_wire::checksum::{fold, sum};
        let mut pool = PacketPool::with_large(8, 2);
        let mut batch = vec![offloaded_tcp(&mut pool, b"forty bytes of payload, give or take it", 0)];
        let mut area = vec![0u8; 8192];
        let mut slots = Vec::new();
        pack(&mut area, &batch, &[0], 0, &mut slots);
        let at = slots[0].offset;
        let tcp = |f: &[u8]| fold(sum(&f[26..34]) + 6 + (f.len() - 34) as u64 + sum(&f[34..]));
        assert_eq!(tcp(&area[at..at + 93]), 0xffff, "the plugin sees a complete checksum");
        // The plugin adds a 4-byte trailer (the IP length stays: a trailer is past the packet).
        area[at + 93..at + 97].copy_from_slice(b"tail");
        put32(&mut area, HEADER_LEN + DESC_LEN, 97);
        area[HEADER_LEN + DESC_VERDICT..][..2].copy_from_slice(&VERDICT_SEND.to_le_bytes());
        assert_eq!(verdict(&area, 0, slots[0], &mut batch[0], &[1]), Decision::Send { port: 1 });
        assert!(batch[0].offload.is_plain(), "nothing left to finish");
        assert_eq!(tcp(&batch[0].data()[..93]), 0xffff);

        // Offsets the frame does not fit: it stays partial, for the port to drop.
        let mut bad = vec![offloaded_tcp(&mut pool, b"x", 0)];
        bad[0].offload.csum_offset = 400;
        pack(&mut area, &bad, &[0], 0, &mut slots);
        area[HEADER_LEN + DESC_VERDICT..][..2].copy_from_slice(&VERDICT_SEND.to_le_bytes());
        assert_eq!(verdict(&area, 0, slots[0], &mut bad[0], &[1]), Decision::Send { port: 1 });
        assert!(bad[0].offload.needs_csum(), "not made to look complete");
    }

    #[test]
    fn a_super_packet_the_plugin_put_a_header_in_front_of_leaves_to_be_cut_as_encapsulated() {
        let mut pool = PacketPool::with_large(8, 4);
        let payload = [7u8; 3000];
        for (outer_protocol, kept) in [(4u8, true), (6, false)] {
            let mut batch = vec![offloaded_tcp(&mut pool, &payload, 1000)];
            let mut area = vec![0u8; 16384];
            let mut slots = Vec::new();
            pack(&mut area, &batch, &[0], 0, &mut slots);
            let (at, len) = (slots[0].offset, batch[0].len());
            assert_eq!(&area[at..at + len], batch[0].data(), "a super-packet's checksum stays partial");
            // IP in IP: the inner packet moves 20 bytes on, an outer header goes in front of it
            // (or, the second time, a header that is no tunnel's: protocol 6).
            area.copy_within(at + 14..at + len, at + 34);
            let outer = [0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, outer_protocol, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2];
            area[at + 14..at + 34].copy_from_slice(&outer);
            put32(&mut area, HEADER_LEN + DESC_LEN, len + 20);
            area[HEADER_LEN + DESC_VERDICT..][..2].copy_from_slice(&VERDICT_SEND.to_le_bytes());
            let d = verdict(&area, 0, slots[0], &mut batch[0], &[1]);
            if kept {
                assert_eq!(d, Decision::Send { port: 1 });
                let o = batch[0].offload;
                assert_eq!((o.encapsulated, o.csum_start, o.gso_size), (34, 54, 1000), "the inner packet, 20 bytes on");
                assert_eq!(GsoSegments::of_frame(batch[0].data(), &o).unwrap().remaining(), 3);
            } else {
                assert_eq!(d, Decision::Drop(VrDrop::Program), "no tunnel's header: the plugin's fault");
            }
        }
    }

    #[test]
    fn a_batch_is_cut_where_the_area_is_full() {
        let mut pool = PacketPool::new(8);
        let batch = packets(&mut pool, &[(0, vec![1; 1000]), (0, vec![2; 1000]), (0, vec![3; 1000])]);
        let mut slots = Vec::new();
        let mut area = vec![0u8; FRAMES_AT + 2 * (1000 + HEADROOM) + 8];
        assert_eq!(pack(&mut area, &batch, &[0], 0, &mut slots), 2);
        assert_eq!(pack(&mut area, &batch[2..], &[0], 0, &mut slots), 1);
        let mut small = vec![0u8; FRAMES_AT + 500];
        assert_eq!(pack(&mut small, &batch, &[0], 0, &mut slots), 0, "a frame larger than the area");
    }
}
