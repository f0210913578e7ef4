//! `pearlctl stats [--name TEXT] [--sort busiest] [--limit N] … [--json] [--watch]`: the live counters as tables (or JSON); with `--watch`,
//! again every second until interrupted, with rates computed between consecutive snapshots on
//! pearld's clock (`time_seconds`).

use crate::client::Client;
use crate::failure::Failure;
use crate::table::Table;
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const PERIOD: Duration = Duration::from_secs(1);

/// `query` picks the VRs (`?name=…&limit=…`, or "" for all).
pub fn run(client: &Client, query: &str, json: bool, watch: bool) -> Result<(), Failure> {
    let mut prev: Option<Value> = None;
    let clear = watch && !json && std::io::stdout().is_terminal();
    let mut next = Instant::now();
    loop {
        let cur = client.get(&format!("/v1/stats{query}"))?;
        let text = if json { format!("{cur}\n") } else { render(&cur, prev.as_ref()) };
        let mut out = std::io::stdout().lock();
        let shown = if clear { write!(out, "\x1b[H\x1b[2J{text}") } else { write!(out, "{text}") };
        // A reader that went away (`| head`) ends the watch; it is not an error.
        if shown.and_then(|_| out.flush()).is_err() || !watch {
            return Ok(());
        }
        // Piped, frames follow each other: a rule tells them apart.
        if !clear && !json {
            let _ = writeln!(out, "----");
        }
        drop(out);
        prev = Some(cur);
        next += PERIOD;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn name(v: &Value) -> String {
    v["name"].as_str().unwrap_or("?").to_string()
}

/// Per-second change of `get` between `prev` and `cur`, formatted; `None` without a previous
/// snapshot.
struct Rates<'a> {
    prev: Option<&'a Value>,
    dt: f64,
}

impl Rates<'_> {
    fn of(&self, cur: &Value, find_prev: impl Fn(&Value) -> Option<Value>, get: impl Fn(&Value) -> f64) -> String {
        let Some(p) = self.prev.and_then(find_prev) else { return "-".into() };
        let d = get(cur) - get(&p);
        if self.dt <= 0.0 || d < 0.0 {
            "-".into()
        } else {
            human(d / self.dt)
        }
    }
}

/// Three significant digits and an SI prefix: 1.80, 320k, 5.02G read alike at any rate.
fn human(x: f64) -> String {
    // Rounded first, so that 999.7 reads 1.00k rather than 1000.
    let digits = |v: f64| {
        if v >= 100.0 {
            0
        } else if v >= 10.0 {
            1
        } else {
            2
        }
    };
    let r: f64 = if x > 0.0 { format!("{:.*e}", 2, x).parse().unwrap_or(x) } else { 0.0 };
    let (v, prefix) = match r {
        r if r >= 1e12 => (r / 1e12, "T"),
        r if r >= 1e9 => (r / 1e9, "G"),
        r if r >= 1e6 => (r / 1e6, "M"),
        r if r >= 1e3 => (r / 1e3, "k"),
        r => (r, ""),
    };
    if r == 0.0 {
        "0".into()
    } else {
        format!("{v:.*}{prefix}", digits(v))
    }
}

pub fn render(s: &Value, prev: Option<&Value>) -> String {
    let dt = prev.map_or(0.0, |p| s["time_seconds"].as_f64().unwrap_or(0.0) - p["time_seconds"].as_f64().unwrap_or(0.0));
    let r = Rates { prev, dt };
    let with_rates = prev.is_some();
    let by_name = |list: &'static str, v: &Value| {
        let wanted = v["name"].clone();
        move |p: &Value| p[list].as_array().and_then(|a| a.iter().find(|x| x["name"] == wanted).cloned())
    };
    let bits = |bytes: &Value| n(bytes) as f64 * 8.0;

    let mut header =
        vec!["port", "interface", "rx pkts", "rx offloaded", "rx lost", "tx pkts", "tx offloaded", "tx errors", "unclaimed", "malformed"];
    if with_rates {
        header.extend(["rx pkt/s", "tx pkt/s", "rx bit/s", "tx bit/s"]);
    }
    let mut ports = Table::new(&header, 2);
    for p in s["ports"].as_array().into_iter().flatten() {
        let malformed: u64 = p["malformed"].as_object().into_iter().flatten().map(|(_, v)| n(v)).sum();
        let mut row = vec![
            name(p),
            p["interface"].as_str().unwrap_or("").into(),
            n(&p["rx_packets"]).to_string(),
            n(&p["offloaded_rx_packets"]).to_string(),
            n(&p["rx_dropped"]).to_string(),
            n(&p["tx_packets"]).to_string(),
            n(&p["offloaded_tx_packets"]).to_string(),
            n(&p["tx_errors"]).to_string(),
            n(&p["unclaimed"]).to_string(),
            malformed.to_string(),
        ];
        if with_rates {
            let f = || by_name("ports", p);
            row.extend([
                r.of(p, f(), |x| n(&x["rx_packets"]) as f64),
                r.of(p, f(), |x| n(&x["tx_packets"]) as f64),
                r.of(p, f(), |x| bits(&x["rx_bytes"])),
                r.of(p, f(), |x| bits(&x["tx_bytes"])),
            ]);
        }
        ports.row(row);
    }

    let mut header = vec!["vr", "kind", "rx pkts", "forwarded", "offloaded", "queue drops", "slow drops"];
    if with_rates {
        header.extend(["rx pkt/s", "fwd pkt/s", "fwd bit/s", "offl bit/s"]);
    }
    // A kernel VR's own kernel forwards its packets: they are the VR's forwarded ones.
    let forwarded = |v: &Value| n(&v["forwarded_packets"]) + n(&v["kernel_forwarded_packets"]);
    header.push("exceptions");
    let mut vrs = Table::new(&header, 2).text_last();
    let mut queues = Table::new(
        &if with_rates {
            vec!["vr/port/queue", "weight", "sent pkts", "offloaded", "drops", "backlog", "sent pkt/s", "sent bit/s"]
        } else {
            vec!["vr/port/queue", "weight", "sent pkts", "offloaded", "drops", "backlog"]
        },
        1,
    );
    for vr in s["vrs"].as_array().into_iter().flatten() {
        let exceptions: Vec<String> =
            vr["exceptions"].as_object().into_iter().flatten().filter(|(_, v)| n(v) != 0).map(|(k, v)| format!("{k}={v}")).collect();
        let mut row = vec![
            name(vr),
            vr["kind"].as_str().unwrap_or("").into(),
            n(&vr["rx_packets"]).to_string(),
            forwarded(vr).to_string(),
            n(&vr["offloaded_packets"]).to_string(),
            n(&vr["queue_drops"]).to_string(),
            n(&vr["exception_drops"]).to_string(),
        ];
        if with_rates {
            let f = || by_name("vrs", vr);
            row.extend([
                r.of(vr, f(), |x| n(&x["rx_packets"]) as f64),
                r.of(vr, f(), |x| forwarded(x) as f64),
                r.of(vr, f(), |x| bits(&x["forwarded_bytes"])),
                r.of(vr, f(), |x| bits(&x["offloaded_bytes"])),
            ]);
        }
        row.push(exceptions.join(" "));
        vrs.row(row);
        for q in vr["queues"].as_array().into_iter().flatten() {
            let mut row = vec![
                format!("{}/{}/{}", name(vr), q["port"].as_str().unwrap_or("?"), q["queue"]),
                n(&q["weight"]).to_string(),
                n(&q["sent_packets"]).to_string(),
                n(&q["offloaded_packets"]).to_string(),
                n(&q["dropped_packets"]).to_string(),
                n(&q["backlog_packets"]).to_string(),
            ];
            if with_rates {
                let (port, index) = (q["port"].clone(), q["queue"].clone());
                let f = || {
                    let find_vr = by_name("vrs", vr);
                    let (port, index) = (port.clone(), index.clone());
                    move |p: &Value| find_vr(p)?["queues"].as_array()?.iter().find(|x| x["port"] == port && x["queue"] == index).cloned()
                };
                row.extend([r.of(q, f(), |x| n(&x["sent_packets"]) as f64), r.of(q, f(), |x| bits(&x["sent_bytes"]))]);
            }
            queues.row(row);
        }
    }

    let mut workers = Table::new(
        &if with_rates { vec!["worker", "rx pkts", "tx pkts", "CPU s", "CPU %"] } else { vec!["worker", "rx pkts", "tx pkts", "CPU s"] },
        1,
    );
    for (i, w) in s["workers"].as_array().into_iter().flatten().enumerate() {
        let cpu = w["cpu_seconds"].as_f64().unwrap_or(0.0);
        let mut row = vec![i.to_string(), n(&w["rx_packets"]).to_string(), n(&w["tx_packets"]).to_string(), format!("{cpu:.1}")];
        if with_rates {
            row.push(r.of(w, |p| p["workers"].get(i).cloned(), |x| x["cpu_seconds"].as_f64().unwrap_or(0.0) * 100.0));
        }
        workers.row(row);
    }
    let shown = s["vrs"].as_array().map_or(0, Vec::len) as u64;
    let paged = match s["vrs_total"].as_u64() {
        Some(total) if shown < total => format!("{shown} of {total} VRs (--offset and --limit page through them)\n"),
        _ => String::new(),
    };
    format!("{}\n{}{paged}\n{}\n{}", ports.render(), vrs.render(), queues.render(), workers.render())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot(t: f64, rx: u64, sent_bytes: u64, cpu: f64) -> Value {
        json!({
            "time_seconds": t,
            "ports": [{"name": "p0", "interface": "veth0", "rx_packets": rx, "rx_bytes": rx * 100, "tx_packets": 0, "tx_bytes": 0,
                       "tx_errors": 0, "unclaimed": 0, "malformed": {"truncated": 2}}],
            "vrs": [{"name": "red", "kind": "fast", "rx_packets": rx, "forwarded_packets": rx, "forwarded_bytes": rx * 100,
                     "queue_drops": 0, "exception_drops": 0, "exceptions": {"arp": 1, "local": 0},
                     "queues": [{"port": "p1", "queue": 0, "weight": 1, "sent_packets": rx, "sent_bytes": sent_bytes,
                                 "dropped_packets": 0, "backlog_packets": 0}]}],
            "workers": [{"rx_packets": rx, "tx_packets": rx, "cpu_seconds": cpu}]
        })
    }

    #[test]
    fn a_single_snapshot_shows_counters_only() {
        let text = render(&snapshot(1.0, 10, 1000, 0.5), None);
        assert!(text.contains("red") && text.contains("p0") && text.contains("arp=1") && !text.contains("local="), "{text}");
        assert!(text.contains("red/p1/0") && !text.contains("pkt/s"), "{text}");
    }

    #[test]
    fn rates_read_with_three_digits_and_a_prefix_at_any_rate() {
        for (x, shown) in
            [(0.0, "0"), (0.04, "0.04"), (1.8, "1.80"), (999.7, "1.00k"), (320e3, "320k"), (5.0234e9, "5.02G"), (12.34, "12.3")]
        {
            assert_eq!(human(x), shown, "{x}");
        }
    }

    #[test]
    fn a_kernel_vrs_kernel_forwarded_packets_are_its_forwarded_ones_and_offloaded_ones_show() {
        let mut s = snapshot(1.0, 10, 1000, 0.5);
        s["vrs"][0]["kind"] = json!("kernel");
        s["vrs"][0]["forwarded_packets"] = json!(0);
        s["vrs"][0]["kernel_forwarded_packets"] = json!(118_062);
        s["vrs"][0]["offloaded_packets"] = json!(7);
        let text = render(&s, None);
        let row: Vec<&str> = text.lines().find(|l| l.starts_with("red ")).unwrap().split_whitespace().collect();
        assert_eq!((row[3], row[4]), ("118062", "7"), "forwarded, offloaded: {text}");
    }

    #[test]
    fn consecutive_snapshots_show_rates_on_pearlds_clock() {
        let prev = snapshot(10.0, 1000, 0, 1.0);
        let cur = snapshot(12.0, 3000, 2_500_000, 2.0);
        let text = render(&cur, Some(&prev));
        let line =
            |start: &str| text.lines().find(|l| l.starts_with(start)).unwrap().split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(line("p0")[10], "1.00k", "rx pkt/s: {text}");
        assert_eq!(line("red/p1/0").last().unwrap(), "10.0M", "sent bit/s: {text}");
        assert_eq!(line("0 ").last().unwrap(), "50.0", "CPU %: {text}");
    }
}
