//! `pearl-bench chain`: N fast VRs in a row in memory, each VR's second interface joined to the
//! next one's first by a wire (a net's link between two VRs, `pearl_dataplane::port::wire`), the
//! first fed by an in-memory port and the last sending into one: the rate out of the last VR,
//! for the frames every VR forwarded in turn, one worker.

use crate::args::Args;
use crate::pipeline::{config, mac, Family};
use crate::report::{median, round3, Figure};
use crate::table::{self, Order};
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{wire, MemoryPort, Port, WireEnd, WireState};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const OPTIONS: &[&str] = &["table", "vrs", "size", "seconds", "destinations", "repeat", "seed"];

pub fn run(argv: &[String]) -> Result<(), String> {
    let args = Args::parse(argv, OPTIONS)?;
    let list = table::load(args.required("table")?)?;
    let prefixes = &list.v4;
    let vrs: usize = args.get("vrs", 1)?;
    let size: usize = args.get("size", 64)?;
    let seconds: f64 = args.get("seconds", 3.0)?;
    let destinations: usize = args.get("destinations", 65_536)?;
    let repeat: usize = args.get("repeat", 3)?;
    if vrs == 0 || vrs > 100 || repeat == 0 || prefixes.is_empty() {
        return Err("--vrs (1..=100) and --repeat must be positive, --table must hold IPv4 prefixes".into());
    }
    let mut config = config(prefixes, vrs, 1);
    // Each VR's neighbour behind its second interface is the next VR's first.
    for v in 0..vrs - 1 {
        Arc::make_mut(&mut config.vrs[v]).neighbors[0].mac = mac(v + 1, 0);
    }
    let mut rng = SmallRng::seed_from_u64(args.get("seed", 1)?);
    let frames: Vec<Vec<u8>> = table::addresses(prefixes, destinations, Order::Uniform, &mut rng)
        .into_iter()
        .map(|dst| u32::frame(mac(0, 0), u32::vr_side(0, 0, 2), dst, size))
        .collect();
    let mut mpps = Vec::new();
    for _ in 0..repeat {
        let mut ends: HashMap<usize, WireEnd> = HashMap::new();
        for v in 0..vrs - 1 {
            let [a, b] = wire([(2 * v + 1) as u16, (2 * v + 2) as u16], Arc::new(WireState::default()));
            ends.insert(2 * v + 1, a);
            ends.insert(2 * v + 2, b);
        }
        let (dataplane, _slow_path) = Dataplane::start_programmed(&config, HashMap::new(), |p, _w, _pool| -> Result<Box<dyn Port>, _> {
            Ok(match (p, ends.remove(&p)) {
                (_, Some(end)) => Box::new(end),
                (0, None) => Box::new(MemoryPort::new(&frames)),
                _ => Box::new(MemoryPort::new(Vec::<Vec<u8>>::new())),
            })
        })
        .map_err(|e| e.to_string())?;
        let out = || dataplane.sum(|c| c.vrs[vrs - 1].forwarded_packets.get());
        std::thread::sleep(Duration::from_millis(500));
        if out() == 0 {
            return Err("the last VR forwarded nothing in the warm-up: the chain is broken".into());
        }
        let (t0, n0) = (Instant::now(), out());
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let rate = (out() - n0) as f64 / t0.elapsed().as_secs_f64();
        dataplane.stop();
        mpps.push(rate / 1e6);
    }
    Figure::new("chain").set("vrs", vrs).set("size", size).set("seconds", seconds).set("mpps", round3(median(mpps))).print();
    Ok(())
}
