//! Moving a run's frames into a plugin's batch area and its verdicts back out (the layout is
//! `pearl_plugin_sdk::abi`). What the plugin may have scribbled over (offsets, capacities) is
//! never read back: the host keeps its own copy of where each frame is.

use pearl_control::VrConfig;
use pearl_dataplane::counters::{Exception, VrDrop};
use pearl_dataplane::packet::Packet;
use pearl_dataplane::program::Decision;
use pearl_plugin_sdk::abi::*;
use std::sync::Arc;

/// Where the host put one frame in the area: its offset and capacity.
#[derive(Clone, Copy, Default)]
pub struct Slot {
    offset: usize,
    cap: usize,
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
        let d = HEADER_LEN + slots.len() * DESCRIPTOR_LEN;
        let interface = interface_of_port.get(usize::from(p.in_port)).copied().unwrap_or(NO_INTERFACE);
        put32(area, d + DESC_OFFSET, at);
        put32(area, d + DESC_LEN, p.len());
        put32(area, d + DESC_CAP, cap);
        area[d + DESC_INTERFACE..d + DESC_INTERFACE + 2].copy_from_slice(&interface.to_le_bytes());
        area[d + DESC_VERDICT..d + DESC_VERDICT + 2].copy_from_slice(&VERDICT_DROP.to_le_bytes());
        area[d + DESC_COPIES..d + DESC_COPIES + 8].fill(0);
        slots.push(Slot { offset: at, cap });
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
    packet.set_len(len);
    if packet.len() != len {
        return false;
    }
    packet.data_mut().copy_from_slice(&area[slot.offset..slot.offset + len]);
    true
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
    use pearl_dataplane::packet::PacketPool;

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
