//! Rates for `/metrics`: a sampler thread takes the counters once per interval and keeps the
//! rates over the last complete interval, so every scraper sees the same values however often
//! or seldom it scrapes. Worker utilisation is the rate of the workers' CPU time.
//!
//! Nobody watching, nothing sampled: the sampler sleeps until `/metrics` is first read, and again
//! once nobody has read it for [`IDLE_AFTER`]. A read that wakes it waits for one fresh interval,
//! so its rates are as current as a watched node's.

use crate::metrics::{Families, Family, Kind};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const INTERVAL: Duration = Duration::from_secs(1);
/// The sampler's work is at most this share of its interval: with thousands of VRs a sampling
/// takes tens of milliseconds, and the interval stretches rather than an idle node spending a
/// share of a core on rates (`pearl_rate_interval_seconds` says how long it is).
const MAX_DUTY: u32 = 200;
/// The sampler stops after this long without a reader (longer than any usual scrape interval).
const IDLE_AFTER: Duration = Duration::from_secs(120);
/// How long a read waits for the woken sampler's first interval beyond the interval itself.
const WAKE_GRACE: Duration = Duration::from_secs(5);

/// A gauge derived from a counter family: its change per second, times `scale`.
struct Rate {
    counter: &'static str,
    gauge: &'static str,
    scale: f64,
    help: &'static str,
}

const RATES: &[Rate] = &[
    Rate {
        counter: "pearl_port_rx_packets_total",
        gauge: "pearl_port_rx_packets_per_second",
        scale: 1.0,
        help: "Frames received per second.",
    },
    Rate { counter: "pearl_port_rx_bytes_total", gauge: "pearl_port_rx_bits_per_second", scale: 8.0, help: "Bits received per second." },
    Rate { counter: "pearl_port_tx_packets_total", gauge: "pearl_port_tx_packets_per_second", scale: 1.0, help: "Frames sent per second." },
    Rate { counter: "pearl_port_tx_bytes_total", gauge: "pearl_port_tx_bits_per_second", scale: 8.0, help: "Bits sent per second." },
    Rate {
        counter: "pearl_port_drops_total",
        gauge: "pearl_port_drops_per_second",
        scale: 1.0,
        help: "Frames dropped per second, by reason.",
    },
    Rate {
        counter: "pearl_vr_rx_packets_total",
        gauge: "pearl_vr_rx_packets_per_second",
        scale: 1.0,
        help: "Packets given to the VR per second.",
    },
    Rate { counter: "pearl_vr_rx_bytes_total", gauge: "pearl_vr_rx_bits_per_second", scale: 8.0, help: "Bits given to the VR per second." },
    Rate {
        counter: "pearl_vr_forwarded_packets_total",
        gauge: "pearl_vr_forwarded_packets_per_second",
        scale: 1.0,
        help: "Packets the VR's fast path forwarded per second, offloaded ones included.",
    },
    Rate {
        counter: "pearl_vr_forwarded_bytes_total",
        gauge: "pearl_vr_forwarded_bits_per_second",
        scale: 8.0,
        help: "Bits the VR's fast path forwarded per second, offloaded ones included.",
    },
    Rate {
        counter: "pearl_vr_offloaded_bytes_total",
        gauge: "pearl_vr_offloaded_bits_per_second",
        scale: 8.0,
        help: "Of the VR's forwarded bits per second, those the kernel forwarded for it (flow offload).",
    },
    Rate {
        counter: "pearl_vr_drops_total",
        gauge: "pearl_vr_drops_per_second",
        scale: 1.0,
        help: "Packets of the VR dropped per second, by reason.",
    },
    Rate {
        counter: "pearl_queue_sent_packets_total",
        gauge: "pearl_queue_sent_packets_per_second",
        scale: 1.0,
        help: "Packets sent from the queue per second.",
    },
    Rate {
        counter: "pearl_queue_sent_bytes_total",
        gauge: "pearl_queue_sent_bits_per_second",
        scale: 8.0,
        help: "Bits sent from the queue per second.",
    },
    Rate {
        counter: "pearl_queue_dropped_packets_total",
        gauge: "pearl_queue_dropped_packets_per_second",
        scale: 1.0,
        help: "Packets the full queue dropped per second.",
    },
    Rate {
        counter: "pearl_vr_exceptions_total",
        gauge: "pearl_vr_exceptions_per_second",
        scale: 1.0,
        help: "Packets sent to the VR's slow path per second, by reason.",
    },
    Rate {
        counter: "pearl_vr_kernel_drops_total",
        gauge: "pearl_vr_kernel_drops_per_second",
        scale: 1.0,
        help: "Packets the VR's kernel dropped per second, by its MIB counter.",
    },
    Rate {
        counter: "pearl_worker_drops_total",
        gauge: "pearl_worker_drops_per_second",
        scale: 1.0,
        help: "Frames the worker dropped per second, by reason.",
    },
    Rate {
        counter: "pearl_worker_cpu_seconds_total",
        gauge: "pearl_worker_utilisation_ratio",
        scale: 1.0,
        help: "Fraction of one CPU the worker used.",
    },
];

/// Rates between two samplings `dt` seconds apart. A series missing from the earlier one, or
/// whose counter went down (its VR was recreated), gets no rate until the next interval.
pub fn rates(prev: &[Family], cur: &[Family], dt: f64) -> Vec<Family> {
    let mut out = Families::default();
    out.add("pearl_rate_interval_seconds", "The interval the *_per_second and ratio gauges are measured over.", Kind::Gauge, &[], dt);
    let family = |set: &'_ [Family], name: &str| set.iter().find(|f| f.name == name).map(|f| f.samples.clone()).unwrap_or_default();
    // Series are matched by their labels through a map: thousands of VRs make thousands of
    // series per family.
    let delta = |name: &str| -> Vec<(Vec<(&'static str, String)>, f64)> {
        let before: HashMap<Vec<(&'static str, String)>, f64> = family(prev, name).into_iter().map(|s| (s.labels, s.value)).collect();
        family(cur, name)
            .into_iter()
            .filter_map(|s| {
                let old = *before.get(&s.labels)?;
                (s.value >= old).then_some((s.labels, s.value - old))
            })
            .collect()
    };
    for r in RATES {
        for (labels, d) in delta(r.counter) {
            let labels: Vec<(&'static str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            out.add(r.gauge, r.help, Kind::Gauge, &labels, d / dt * r.scale);
        }
    }
    let idle: HashMap<_, _> = delta("pearl_worker_idle_polls_total").into_iter().collect();
    for (labels, rounds) in delta("pearl_worker_batches_total") {
        let Some(idle) = idle.get(&labels) else { continue };
        let busy = if rounds > 0.0 { 1.0 - idle / rounds } else { 0.0 };
        let labels: Vec<(&'static str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        out.add("pearl_worker_busy_ratio", "Fraction of the worker's poll rounds that moved packets.", Kind::Gauge, &labels, busy);
    }
    out.0
}

/// The sampler thread and the rates it last computed.
pub struct Sampler {
    state: Mutex<State>,
    published: Condvar,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct State {
    latest: Vec<Family>,
    /// Counts publications, so a woken reader knows when fresh rates are in.
    generation: u64,
    last_read: Option<Instant>,
    asleep: bool,
}

impl Sampler {
    /// Starts the sampler, asleep until the first read; awake, it samples `take()` every
    /// `INTERVAL` or longer (see [`MAX_DUTY`]).
    pub fn start(take: impl Fn() -> Vec<Family> + Send + 'static) -> std::io::Result<Arc<Sampler>> {
        let sampler = Arc::new(Sampler {
            state: Mutex::new(State { latest: Vec::new(), generation: 0, last_read: None, asleep: true }),
            published: Condvar::new(),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        let s = Arc::clone(&sampler);
        let handle = std::thread::Builder::new().name("pearl-sampler".into()).spawn(move || s.run(take))?;
        *sampler.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(sampler)
    }

    fn run(&self, take: impl Fn() -> Vec<Family>) {
        let mut prev: Option<(Instant, Vec<Family>)> = None;
        while !self.stop.load(Ordering::Relaxed) {
            if self.sleep_while_unwatched() {
                prev = None;
                continue;
            }
            let cur = (Instant::now(), take());
            let interval = INTERVAL.max(cur.0.elapsed() * MAX_DUTY);
            if let Some(p) = &prev {
                let computed = rates(&p.1, &cur.1, (cur.0 - p.0).as_secs_f64());
                let mut st = self.lock();
                st.latest = computed;
                st.generation += 1;
                self.published.notify_all();
            }
            prev = Some(cur);
            let since = prev.as_ref().map_or(Instant::now(), |p| p.0);
            while !self.stop.load(Ordering::Relaxed) && since.elapsed() < interval {
                std::thread::park_timeout(interval.saturating_sub(since.elapsed()));
            }
        }
        self.published.notify_all();
    }

    /// Parks while nobody reads; true if it slept (its previous sample is then stale).
    fn sleep_while_unwatched(&self) -> bool {
        let mut st = self.lock();
        if st.last_read.is_some_and(|t| t.elapsed() < IDLE_AFTER) {
            return false;
        }
        st.asleep = true;
        while st.asleep && !self.stop.load(Ordering::Relaxed) {
            drop(st);
            std::thread::park();
            st = self.lock();
        }
        true
    }

    /// The rates of the last complete interval; wakes the sampler if it sleeps and waits for
    /// its first interval.
    pub fn latest(&self) -> Vec<Family> {
        let mut st = self.lock();
        st.last_read = Some(Instant::now());
        if st.asleep {
            st.asleep = false;
            if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                t.thread().unpark();
            }
            let (woken, deadline) = (st.generation, Instant::now() + INTERVAL + WAKE_GRACE);
            while st.generation == woken && !self.stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                st = self.published.wait_timeout(st, deadline - Instant::now()).unwrap_or_else(|p| p.into_inner()).0;
            }
        }
        st.latest.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops the thread and waits for it, so whatever `take` holds is released.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Sample;

    fn counter(name: &'static str, samples: &[(&str, f64)]) -> Family {
        Family {
            name,
            help: "",
            kind: Kind::Counter,
            samples: samples.iter().map(|(w, v)| Sample { labels: vec![("worker", w.to_string())], value: *v }).collect(),
        }
    }

    fn value(fams: &[Family], name: &str, worker: &str) -> Option<f64> {
        fams.iter().find(|f| f.name == name)?.samples.iter().find(|s| s.labels[0].1 == worker).map(|s| s.value)
    }

    #[test]
    fn rates_are_differences_over_the_interval_scaled_and_skip_new_or_reset_series() {
        let prev = [
            counter("pearl_worker_cpu_seconds_total", &[("0", 1.0), ("1", 5.0)]),
            counter("pearl_worker_tx_bytes_total", &[("0", 0.0)]),
            counter("pearl_worker_batches_total", &[("0", 100.0)]),
            counter("pearl_worker_idle_polls_total", &[("0", 50.0)]),
        ];
        let cur = [
            counter("pearl_worker_cpu_seconds_total", &[("0", 1.5), ("1", 1.0), ("2", 3.0)]),
            counter("pearl_worker_batches_total", &[("0", 300.0)]),
            counter("pearl_worker_idle_polls_total", &[("0", 100.0)]),
        ];
        let r = rates(&prev, &cur, 2.0);
        assert_eq!(value(&r, "pearl_worker_utilisation_ratio", "0"), Some(0.25));
        assert_eq!(value(&r, "pearl_worker_utilisation_ratio", "1"), None, "a counter that went down has no rate");
        assert_eq!(value(&r, "pearl_worker_utilisation_ratio", "2"), None, "a new series has no rate yet");
        assert_eq!(value(&r, "pearl_worker_busy_ratio", "0"), Some(0.75));
        assert_eq!(r[0].name, "pearl_rate_interval_seconds");
        assert_eq!(r[0].samples[0].value, 2.0);
    }

    #[test]
    fn bytes_become_bits() {
        let port = |v: f64| Family {
            name: "pearl_port_rx_bytes_total",
            help: "",
            kind: Kind::Counter,
            samples: vec![Sample { labels: vec![("port", "p0".into())], value: v }],
        };
        let r = rates(&[port(1000.0)], &[port(2000.0)], 0.5);
        let bits = r.iter().find(|f| f.name == "pearl_port_rx_bits_per_second").unwrap();
        assert_eq!(bits.samples[0].value, 16000.0);
    }

    /// A sampler of one worker's CPU counter, which rises by 10 at each sample; `n` is that
    /// counter, held by the sampler's source too.
    fn counting_sampler() -> (Arc<std::sync::atomic::AtomicU64>, Arc<Sampler>) {
        let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let source = Arc::clone(&n);
        let sampler = Sampler::start(move || {
            let v = source.fetch_add(10, Ordering::Relaxed) as f64;
            vec![counter("pearl_worker_cpu_seconds_total", &[("0", v)])]
        })
        .unwrap();
        (n, sampler)
    }

    #[test]
    fn the_sampler_publishes_rates_and_stops() {
        let (n, sampler) = counting_sampler();
        let deadline = Instant::now() + Duration::from_secs(5);
        while value(&sampler.latest(), "pearl_worker_utilisation_ratio", "0").is_none() {
            assert!(Instant::now() < deadline, "no rate after 5 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        let started = Instant::now();
        sampler.stop();
        assert!(started.elapsed() < Duration::from_millis(500), "stop is prompt");
        assert_eq!(Arc::strong_count(&n), 1, "the sampler let go of its source");
    }

    #[test]
    fn nobody_reading_nothing_sampled_and_the_first_read_gets_a_fresh_interval() {
        let (n, sampler) = counting_sampler();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(n.load(Ordering::Relaxed), 0, "an unwatched sampler takes no counters");
        let rate = value(&sampler.latest(), "pearl_worker_utilisation_ratio", "0");
        assert!(rate.is_some_and(|r| r > 0.0), "the read that woke it waited for a rate: {rate:?}");
        let started = Instant::now();
        sampler.stop();
        assert!(started.elapsed() < Duration::from_millis(500), "stop is prompt");
        assert_eq!(Arc::strong_count(&n), 1, "the sampler let go of its source");
    }
}
