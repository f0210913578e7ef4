//! XDP programs as clang builds them (examples/xdp, `clang -O2 -g -target bpf`), loaded from
//! their object files and run on frames: the wire redirects and counts in an array map, the
//! router forwards by an LPM trie the test fills as an owner would (TTL −1, checksum still
//! right, MACs rewritten) and passes what it does not route, the reflector calls a function
//! clang kept apart and keeps its counters and setting in global variables. Needs clang and
//! libbpf-dev (scripts/setup.sh installs them).

use crate::clang::build;
use pearl_ebpf::{Map, Program, Vm, XDP_DROP, XDP_PASS, XDP_REDIRECT};

fn maps_of(p: &Program) -> Vec<Map> {
    p.maps.iter().map(|d| Map::new(d.clone()).unwrap()).collect()
}

fn ipv4_frame(dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0xaa, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![0x45, 0, 0, 28, 0, 1, 0, 0, ttl, 17, 0, 0, 10, 1, 0, 2];
    ip.extend(dst);
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend(ip);
    f.extend([0u8; 8]);
    f.resize(60, 0);
    f
}

fn checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[test]
fn the_wire_redirects_to_the_other_interface_and_counts_in_its_array() {
    let program = Program::load(&build("wire"), None).unwrap();
    assert_eq!(program.section, "xdp");
    assert_eq!((program.maps[0].name.as_str(), program.maps[0].key_size, program.maps[0].value_size), ("frames", 4, 8));
    let mut maps = maps_of(&program);
    let mut vm = Vm::default();
    let mut frame = vec![0xab; 60];
    for (ingress, out) in [(0, 1), (0, 1), (1, 0)] {
        let o = vm.run(&program, &mut maps, &mut frame, ingress, 1000, 0).unwrap();
        assert_eq!((o.action, o.redirect), (XDP_REDIRECT, Some(out)));
    }
    let counts: Vec<u64> = maps[0].entries().iter().map(|(_, v)| u64::from_le_bytes(v[..].try_into().unwrap())).collect();
    assert_eq!(counts, [2, 1]);
    assert_eq!(frame, vec![0xab; 60], "a wire leaves the frame alone");
}

#[test]
fn the_router_forwards_by_its_trie_and_passes_the_rest_to_the_kernel() {
    let program = Program::load(&build("router"), Some("xdp")).unwrap();
    let mut maps = maps_of(&program);
    let routes = program.maps.iter().position(|m| m.name == "routes").unwrap();
    let stats = program.maps.iter().position(|m| m.name == "stats").unwrap();
    // 10.2.0.0/16 by interface 1; 10.2.7.0/24 by interface 2, more specific.
    let hop = |iface: u32, last: u8| [&iface.to_le_bytes()[..], &[2, 0xbb, 0, 0, 0, last], &[2, 0, 0, 0, 9, last]].concat();
    assert_eq!(maps[routes].update(&[16, 0, 0, 0, 10, 2, 0, 0], &hop(1, 1), 0), 0);
    assert_eq!(maps[routes].update(&[24, 0, 0, 0, 10, 2, 7, 0], &hop(2, 2), 0), 0);
    let mut vm = Vm::default();
    for (dst, iface) in [([10, 2, 0, 5], 1), ([10, 2, 7, 9], 2)] {
        let mut f = ipv4_frame(dst, 64);
        let o = vm.run(&program, &mut maps, &mut f, 0, 10_000, 0).unwrap();
        assert_eq!((o.action, o.redirect), (XDP_REDIRECT, Some(iface)));
        assert_eq!(f[22], 63, "TTL −1");
        assert_eq!(checksum(&f[14..34]), 0, "the header checksum still verifies");
        assert_eq!((&f[0..6], &f[6..12]), (&[2, 0xbb, 0, 0, 0, iface as u8][..], &[2, 0, 0, 0, 9, iface as u8][..]));
    }
    let mut arp = ipv4_frame([10, 2, 0, 5], 64);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    for mut f in [ipv4_frame([10, 9, 0, 1], 64), ipv4_frame([10, 2, 0, 5], 1), arp, vec![0; 20]] {
        assert_eq!(vm.run(&program, &mut maps, &mut f, 0, 10_000, 0).unwrap().action, XDP_PASS);
    }
    let counted: Vec<u64> = maps[stats].entries().iter().map(|(_, v)| u64::from_le_bytes(v[..].try_into().unwrap())).collect();
    assert_eq!(counted, [2, 4], "forwarded, passed");
}

#[test]
fn a_program_with_a_function_it_calls_and_global_variables_runs_as_libbpf_would_load_it() {
    let program = Program::load(&build("reflect"), None).unwrap();
    let table = |name: &str| program.maps.iter().position(|m| m.name == name).unwrap_or_else(|| panic!("no table {name}"));
    let (bss, data, rodata) = (table(".bss"), table(".data"), table(".rodata"));
    let mut maps = maps_of(&program);
    let global = |maps: &[Map], m: usize| maps[m].entries()[0].1.clone();
    assert_eq!(global(&maps, data), 1000u64.to_le_bytes(), ".data starts as the object says");
    assert_eq!(global(&maps, bss), [0; 8], ".bss starts zeroed");
    let mut vm = Vm::default();
    let mut frame = [&[2, 0, 0, 0, 0, 1][..], &[2, 0, 0, 0, 0, 2], &[0x08, 0x00], &[0; 46]].concat();
    let o = vm.run(&program, &mut maps, &mut frame, 1, 1000, 0).unwrap();
    assert_eq!((o.action, o.redirect), (XDP_REDIRECT, Some(0)), "out_interface as compiled");
    assert_eq!((&frame[0..6], &frame[6..12]), (&[2, 0, 0, 0, 0, 2][..], &[2, 0, 0, 0, 0, 1][..]), "the called function swapped the MACs");
    // The owner sets the program's setting as a libbpf skeleton would before loading it.
    assert_eq!(maps[rodata].update(&0u32.to_le_bytes(), &2u32.to_le_bytes(), 0), 0);
    for _ in 0..2 {
        let o = vm.run(&program, &mut maps, &mut frame, 0, 1000, 0).unwrap();
        assert_eq!((o.action, o.redirect), (XDP_REDIRECT, Some(2)));
    }
    assert_eq!(global(&maps, bss), 3u64.to_le_bytes(), "frames counted in .bss");
    assert_eq!(global(&maps, data), 1003u64.to_le_bytes(), "swaps counted in .data, by the called function");
    assert_eq!(vm.run(&program, &mut maps, &mut [0; 10], 0, 1000, 0).unwrap().action, XDP_DROP, "too short to swap");
}

#[test]
fn an_object_that_is_not_an_xdp_program_is_refused_saying_why() {
    let wire = build("wire");
    assert!(Program::load(b"\x7fELF", None).unwrap_err().0.contains("64-bit little-endian"));
    assert!(Program::load(b"MZ not elf", None).unwrap_err().0.contains("ELF magic"));
    let no_section = Program::load(&wire, Some("tc")).unwrap_err().0;
    assert!(no_section.contains("no section or program \"tc\"") && no_section.contains("xdp"), "{no_section}");
    assert!(Program::load(&wire[..wire.len() / 2], None).is_err(), "truncated");
}

#[test]
fn a_tunnel_end_grows_and_shrinks_its_frames_heads_around_an_outer_header() {
    let program = Program::load(&build("ipip"), None).unwrap();
    let mut maps = maps_of(&program);
    let mut vm = Vm::default();
    let inner = ipv4_frame([10, 9, 0, 2], 64);
    // The frame behind 256 bytes of room, as pearld gives a program that moves its head.
    let mut buffer = vec![0u8; 256 + inner.len()];
    buffer[256..].copy_from_slice(&inner);
    let o = vm.run_in(&program, &mut maps, &mut buffer, (256, inner.len()), 0, 10_000, 0).unwrap();
    assert_eq!((o.action, o.redirect, o.start, o.len), (XDP_REDIRECT, Some(1), 236, inner.len() + 20));
    let out = buffer[o.start..o.start + o.len].to_vec();
    assert_eq!(&out[..14], &inner[..14], "the Ethernet header in front, as it was");
    let outer = &out[14..34];
    assert_eq!((outer[0], outer[9], &outer[12..16], &outer[16..20]), (0x45, 4, &[10, 9, 0, 1][..], &[10, 9, 0, 2][..]));
    assert_eq!(u16::from_be_bytes([outer[2], outer[3]]) as usize, 20 + 28, "the outer length counts the inner packet");
    assert_eq!(checksum(outer), 0, "the outer header's checksum is right");
    assert_eq!(&out[34..], &inner[14..], "the inner packet behind it, byte for byte");
    // Back through the other interface: the outer header comes off.
    let o = vm.run_in(&program, &mut maps, &mut buffer, (236, out.len()), 1, 10_000, 0).unwrap();
    assert_eq!((o.action, o.redirect, o.start, o.len), (XDP_REDIRECT, Some(0), 256, inner.len()));
    assert_eq!(&buffer[256..], &inner[..]);
    // Without room in front, the program's adjust is refused and it drops the frame.
    let mut tight = inner.clone();
    assert_eq!(vm.run(&program, &mut maps, &mut tight, 0, 10_000, 0).unwrap().action, XDP_DROP);
}

#[test]
fn a_dispatcher_tail_calls_the_programs_its_program_array_names_and_goes_on_at_an_empty_slot() {
    let object = build("stages");
    let several = Program::load(&object, None).unwrap_err().0;
    assert!(several.contains("section xdp holds 3 programs (cross, dispatch, drop_all)"), "{several}");
    let program = Program::load(&object, Some("dispatch")).unwrap();
    let names: Vec<&str> = program.programs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, ["cross", "dispatch", "drop_all"], "numbered by name");
    let mut maps = maps_of(&program);
    let stages = program.maps.iter().position(|m| m.name == "stages").unwrap();
    let bss = program.maps.iter().position(|m| m.name == ".bss").unwrap();
    let slot = |i: u32| i.to_le_bytes();
    let entries = |maps: &[Map]| maps[stages].entries().iter().map(|(k, v)| (k[0], v[0])).collect::<Vec<_>>();
    assert_eq!(entries(&maps), [(0, 0), (1, 0)], "both slots start with cross, as the object initialises them");
    let decided =
        |maps: &[Map]| -> Vec<u64> { maps[bss].entries()[0].1.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect() };
    let mut vm = Vm::default();
    let ipv4 = ipv4_frame([10, 2, 0, 9], 64);
    let mut arp = ipv4.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);

    let run = |vm: &mut Vm, maps: &mut [Map], frame: &[u8], ingress: u32| {
        let mut f = frame.to_vec();
        let o = vm.run(&program, maps, &mut f, ingress, 10_000, 0).unwrap();
        (o.action, o.redirect)
    };
    assert_eq!(run(&mut vm, &mut maps, &ipv4, 0), (XDP_REDIRECT, Some(1)), "IPv4 to slot 0: cross");
    assert_eq!(run(&mut vm, &mut maps, &arp, 1), (XDP_REDIRECT, Some(0)), "the rest to slot 1: cross");
    assert_eq!(decided(&maps), [0, 2, 0]);

    // The owner points slot 0 at drop_all: IPv4 is dropped, the rest still crosses.
    assert_eq!(maps[stages].update(&slot(0), &slot(2), 0), 0);
    assert_eq!(run(&mut vm, &mut maps, &ipv4, 0).0, XDP_DROP);
    assert_eq!(run(&mut vm, &mut maps, &arp, 0), (XDP_REDIRECT, Some(1)));
    assert_eq!(decided(&maps), [0, 3, 1]);
    assert!(maps[stages].update(&slot(0), &slot(3), 0) < 0, "there is no program 3");
    assert!(maps[stages].update(&slot(2), &slot(0), 0) < 0, "there is no slot 2");

    // An empty slot: the dispatcher goes on after its tail call, and prints with five arguments.
    assert_eq!(maps[stages].delete(&slot(0)), 0);
    assert_eq!(run(&mut vm, &mut maps, &ipv4, 1).0, XDP_DROP);
    assert_eq!(decided(&maps), [1, 3, 1]);
    let mut lines = Vec::new();
    vm.trace.take(|l| lines.push(l.to_string()));
    assert_eq!(lines, ["dispatch: slot 0 is empty: dropped a frame of 60 bytes from interface 1, type 800"]);

    // A slot naming the dispatcher itself: it jumps to itself 33 times (the kernel's bound),
    // then goes on as at an empty slot.
    assert_eq!(maps[stages].update(&slot(0), &slot(1), 0), 0);
    assert_eq!(run(&mut vm, &mut maps, &ipv4, 0).0, XDP_DROP);
    assert_eq!(decided(&maps), [2, 3, 1]);
}
