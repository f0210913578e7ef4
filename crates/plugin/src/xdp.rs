//! An owner's XDP program (`plugin: {xdp: prog.o}`) as a VR's program: each frame of the VR's
//! runs through the eBPF interpreter of `pearl-ebpf`, in place (no copy: the program reads and
//! rewrites the packet buffer itself), and its XDP action becomes the frame's fate. The
//! program's maps are the VR's tables (`/v1/vrs/{name}/tables`): the worker holds them for a
//! batch, the owner reads and writes them between batches.
//!
//! In PEARL an XDP program's interface numbers are the VR's interfaces, in the configuration's
//! order: `ingress_ifindex` is the one a frame came in by, `bpf_redirect(i, 0)` sends it out
//! of interface `i`. A fault (a wild access, exhausted fuel) drops that frame alone, counted by
//! reason; the program has no state but its maps, so nothing needs restarting.

use crate::area::{vr_ports, NO_INTERFACE};
use crate::PluginTables;
use pearl_control::VrConfig;
use pearl_ebpf::insn::CALL;
use pearl_ebpf::{Fault, LoadError, Map, Outcome, Program, Vm, ADJUST_HEAD, XDP_PASS, XDP_REDIRECT, XDP_TX};
use pearl_program::reasons::{Exception, VrDrop};
use pearl_program::{Decision, Run, VrProgram};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub struct XdpProgram {
    program: Program,
    tables: PluginTables,
    vm: Mutex<Vm>,
    fuel_per_packet: u64,
    /// `[VR interface]`: its port.
    ports: Vec<u16>,
    /// `[port]`: the VR's interface there, or `NO_INTERFACE`.
    interface_of_port: Arc<[u16]>,
    epoch: Instant,
    /// The program calls `bpf_xdp_adjust_head`: its frames get XDP's headroom.
    moves_head: bool,
    vr: String,
    printed: Mutex<PrintedLog>,
}

/// The most `bpf_printk` lines of one VR logged a second; the rest are counted.
const PRINTED_PER_SECOND: u32 = 20;

/// How much of this second's allowance of `bpf_printk` lines the program used.
#[derive(Default)]
struct PrintedLog {
    second: u64,
    logged: u32,
    suppressed: u64,
}

/// What XDP leaves in front of a frame for a program to grow its head into.
const XDP_HEADROOM: usize = 256;

/// Why an XDP object was refused.
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    /// ERROR (the object's ELF, BTF, maps or code, as the loader says)
    #[error(transparent)]
    Load(#[from] LoadError),
    /// ERROR (a map the object declares that PEARL cannot hold)
    #[error("{0}")]
    Map(String),
}

impl XdpProgram {
    /// Loads and checks the program in `object` (its `section`, or the first `xdp...` one);
    /// its maps carry over the entries of `previous`'s maps of the same name and shape.
    pub fn new(vr: &VrConfig, object: &[u8], section: Option<&str>, previous: Option<&PluginTables>) -> Result<XdpProgram, XdpError> {
        let program = Program::load(object, section)?;
        let maps = program.maps.iter().map(|d| Map::new(d.clone())).collect::<Result<Vec<_>, _>>().map_err(XdpError::Map)?;
        let (ports, interface_of_port) = vr_ports(vr);
        let programs: Vec<String> = program.programs.iter().map(|p| p.0.clone()).collect();
        let moves_head = program.insns.iter().any(|i| i.op == CALL && i.src == 0 && i.imm == ADJUST_HEAD);
        Ok(XdpProgram {
            moves_head,
            vr: vr.name.clone(),
            printed: Mutex::new(PrintedLog::default()),
            program,
            tables: PluginTables::of_maps(maps, &programs, previous),
            vm: Mutex::new(Vm::default()),
            fuel_per_packet: vr.limits.fuel_per_packet,
            ports,
            interface_of_port,
            epoch: Instant::now(),
        })
    }

    pub fn tables(&self) -> PluginTables {
        self.tables.clone()
    }

    /// Logs what the program printed with `bpf_printk` during a batch, at most
    /// `PRINTED_PER_SECOND` lines a second (the kernel's trace pipe is PEARL's log).
    fn log_printed(&self, trace: &mut pearl_ebpf::Trace, now_ns: u64) {
        let mut log = self.printed.lock().unwrap_or_else(|p| p.into_inner());
        let second = now_ns / 1_000_000_000;
        if second != log.second {
            if log.suppressed > 0 {
                tracing::info!("VR {:?}: {} bpf_printk lines not logged (at most {PRINTED_PER_SECOND} a second)", self.vr, log.suppressed);
            }
            *log = PrintedLog { second, ..PrintedLog::default() };
        }
        let dropped = trace.take(|line| {
            if log.logged < PRINTED_PER_SECOND {
                log.logged += 1;
                tracing::info!("VR {:?}: bpf_printk: {line}", self.vr);
            } else {
                log.suppressed += 1;
            }
        });
        log.suppressed += dropped;
    }

    fn decision(&self, answer: Result<Outcome, Fault>, in_port: u16) -> Decision {
        match answer {
            Ok(Outcome { action: XDP_PASS, .. }) => Decision::Slow(Exception::Program),
            Ok(Outcome { action: XDP_TX, .. }) => Decision::Send { port: in_port },
            Ok(Outcome { action: XDP_REDIRECT, redirect, .. }) => match redirect.and_then(|i| self.ports.get(i as usize)) {
                Some(&port) => Decision::Send { port },
                None => Decision::Drop(VrDrop::ProgramBadPort),
            },
            // XDP_DROP; XDP_ABORTED and actions XDP does not have drop too.
            Ok(_) => Decision::Drop(VrDrop::Program),
            Err(Fault::Fuel) => Decision::Drop(VrDrop::ProgramFuel),
            Err(_) => Decision::Drop(VrDrop::ProgramTrap),
        }
    }
}

impl VrProgram for XdpProgram {
    fn run(&self, run: &mut Run<'_>) {
        let mut vm = self.vm.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mut maps) = self.tables.lock_maps() else { return };
        let now_ns = self.epoch.elapsed().as_nanos() as u64;
        for i in 0..run.len() {
            let p = &mut run.packets[i];
            let in_port = p.in_port;
            let ingress = self.interface_of_port.get(usize::from(in_port)).copied().unwrap_or(NO_INTERFACE);
            if self.moves_head {
                // The room XDP gives a program in front of a frame, where the driver left less.
                p.reserve_headroom(XDP_HEADROOM);
            }
            let (buffer, start, len) = p.room_mut();
            let answer = vm.run_in(&self.program, &mut maps, buffer, (start, len), u32::from(ingress), self.fuel_per_packet, now_ns);
            let mut cuttable = true;
            if let Ok(o) = &answer {
                p.set_bounds(o.start, o.len);
                // Headers that are no tunnel's in front of a super-packet are the program's
                // fault, found here rather than at the port.
                cuttable = p.follow_head(start as i32 - o.start as i32, run.info[i].l3_offset);
            }
            let d = if cuttable { self.decision(answer, in_port) } else { Decision::Drop(VrDrop::Program) };
            run.decide(i, d);
        }
        if !vm.trace.is_empty() {
            self.log_printed(&mut vm.trace, now_ns);
        }
    }
}
