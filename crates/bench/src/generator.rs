//! The e2e traffic generator: one thread inside the generator namespace, pinned to one CPU,
//! sending prebuilt frames round-robin over the VRs' links as fast as it can, or at an offered
//! rate. Each link is an AF_PACKET port with a TPACKET tx ring (the data plane's own driver): a
//! batch is copied into ring slots and sent with one syscall, which is what lets one core offer
//! ~0.4–0.6 Mpps on veth. A rate is kept per batch, never per frame: before each round the loop
//! waits until the round is due (sleeping when that is more than a timer slack away, spinning
//! otherwise), so the offered load is exact over any whole number of rounds and the syscall count
//! stays that of the unpaced loop.

use crate::netns::{enter_netns, pin_to_cpu};
use pearl_dataplane::packet::PacketPool;
use pearl_dataplane::port::{AfPacketConfig, AfPacketPort, Port};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Frames per link per syscall.
const BATCH: usize = 64;

/// One VR's input link and the frames to send on it (cycled).
pub struct Lane {
    pub ifname: String,
    pub frames: Vec<Vec<u8>>,
}

/// What a stopped generator sent over its whole run.
pub struct Totals {
    /// Frames handed to the links: what the schedule offered.
    pub offered: u64,
    /// The part of them the links' tx rings took (the rest found a ring full).
    pub accepted: u64,
    /// From the first round to the last: the time the schedule ran.
    pub seconds: f64,
}

pub struct Generator {
    stop: Arc<AtomicBool>,
    /// Frames the links accepted so far, published once per round.
    sent: Arc<AtomicU64>,
    /// Frames handed to the links so far (accepted or refused by a full ring): the offered load.
    offered: Arc<AtomicU64>,
    /// The sending loop's run time, once it ended.
    thread: Option<JoinHandle<Result<Duration, String>>>,
}

impl Generator {
    /// Starts sending; returns once every link is open and the first batch is about to go.
    /// `rate_pps`: frames per second over all links, or `None` for as fast as they take them.
    pub fn start(netns: &str, lanes: Vec<Lane>, cpu: usize, rate_pps: Option<f64>) -> Result<Generator, String> {
        let path = format!("/run/netns/{netns}");
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let (sent, offered) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (stopped, counted, handed) = (Arc::clone(&stop), Arc::clone(&sent), Arc::clone(&offered));
        let thread = std::thread::Builder::new()
            .name("e2e-generator".into())
            .spawn(move || {
                let setup = || -> Result<Vec<AfPacketPort>, String> {
                    enter_netns(&path)?;
                    pin_to_cpu(cpu)?;
                    // Transmit only: the smallest rx ring the driver accepts, not promiscuous.
                    let config = AfPacketConfig { rx_frames: 1, rx_super_frames: 0, promiscuous: false, ..AfPacketConfig::default() };
                    lanes.iter().map(|l| AfPacketPort::with_config(&l.ifname, &config).map_err(|e| e.to_string())).collect()
                };
                let mut ports = match setup() {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                let _ = ready_tx.send(Ok(()));
                blast(&lanes, &mut ports, rate_pps, &stopped, [&counted, &handed])
            })
            .map_err(|e| format!("spawning the generator: {e}"))?;
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("generator: {e}")),
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                return Err("generator: its links did not open within 10 s".into());
            }
        }
        Ok(Generator { stop, sent, offered, thread: Some(thread) })
    }

    /// Frames the links have accepted so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Stops sending; returns the frames offered and those the links accepted, in all, or fails
    /// if the sending loop failed.
    pub fn stop(mut self) -> Result<Totals, String> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("a running generator has its thread");
        let ran = thread.join().map_err(|_| "the generator thread panicked".to_string())??;
        Ok(Totals {
            offered: self.offered.load(Ordering::Relaxed),
            accepted: self.sent.load(Ordering::Relaxed),
            seconds: ran.as_secs_f64(),
        })
    }
}

impl Drop for Generator {
    /// A generator abandoned on an error path still stops (its thread ends within one round).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Below this wait the loop spins: a sleep this short overshoots by about as much again.
const SPIN_BELOW: Duration = Duration::from_micros(100);

/// The sending loop: a batch per link in turn until told to stop, each round when it is due.
fn blast(
    lanes: &[Lane],
    ports: &mut [AfPacketPort],
    rate_pps: Option<f64>,
    stop: &AtomicBool,
    totals: [&AtomicU64; 2],
) -> Result<Duration, String> {
    let mut pool = PacketPool::new(BATCH);
    let mut batch = Vec::with_capacity(BATCH);
    let mut next = vec![0usize; lanes.len()];
    let mut sent = 0u64;
    // Frames handed to the links so far, accepted or not: what the schedule paces.
    let mut offered = 0u64;
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if let Some(rate) = rate_pps {
            let due = start + Duration::from_secs_f64(offered as f64 / rate);
            let wait = due.saturating_duration_since(Instant::now());
            if wait > SPIN_BELOW {
                std::thread::sleep(wait - SPIN_BELOW);
                continue;
            }
            if !wait.is_zero() {
                std::hint::spin_loop();
                continue;
            }
        }
        for ((lane, port), next) in lanes.iter().zip(ports.iter_mut()).zip(next.iter_mut()) {
            while let Some(mut p) = pool.take() {
                p.fill(&lane.frames[*next]);
                *next = (*next + 1) % lane.frames.len();
                batch.push(p);
            }
            offered += batch.len() as u64;
            sent += port.tx_batch(&mut batch, &mut pool).map_err(|e| format!("generator: {e}"))? as u64;
        }
        totals[0].store(sent, Ordering::Relaxed);
        totals[1].store(offered, Ordering::Relaxed);
    }
    Ok(start.elapsed())
}
