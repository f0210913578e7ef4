//! `pearl-bench flood`: the frames of a pcap file sent round-robin out of one interface of a
//! namespace as fast as the e2e generator goes (~0.4–0.6 Mpps on veth), for the isolation
//! tests' floods, which a Python sender could not offer at a tenth of that.

use crate::args::Args;
use crate::generator::{Generator, Lane};
use pearl_dataplane::port::pcap_file::{PcapReader, Record};
use std::time::{Duration, Instant};

pub fn run(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &["netns", "interface", "pcap", "seconds", "cpu"])?;
    let (netns, ifname, pcap) = (a.required("netns")?, a.required("interface")?, a.required("pcap")?);
    let seconds: f64 = a.get("seconds", 10.0)?;
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(format!("--seconds: {seconds} is not a positive duration"));
    }
    let frames = read_frames(pcap)?;
    let generator = Generator::start(netns, vec![Lane { ifname: ifname.to_string(), frames }], a.get("cpu", 0)?, None)?;
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let sent = generator.sent();
    let took = start.elapsed().as_secs_f64();
    generator.stop()?;
    println!(r#"{{"bench":"flood","sent":{sent},"seconds":{took:.3},"pps":{:.0}}}"#, sent as f64 / took);
    Ok(())
}

fn read_frames(path: &str) -> Result<Vec<Vec<u8>>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("--pcap {path}: {e}"))?;
    let mut reader = PcapReader::new(std::io::BufReader::new(file)).map_err(|e| format!("--pcap {path}: {e}"))?;
    let mut buf = vec![0u8; 65536];
    let mut frames = Vec::new();
    loop {
        match reader.next_into(&mut buf).map_err(|e| format!("--pcap {path}: {e}"))? {
            Record::Frame(n) => frames.push(buf[..n].to_vec()),
            Record::Oversized(n) => return Err(format!("--pcap {path}: a {n}-byte frame is larger than any port sends")),
            Record::End => break,
        }
    }
    if frames.is_empty() {
        return Err(format!("--pcap {path}: no frames"));
    }
    Ok(frames)
}
