//! pearld's log: one line per event on stderr, `pearld: message` (`routed[NS]: message` for
//! the route mirroring of VR namespace NS), `warning: ` or `error: ` after the prefix by level,
//! `vr NAME: ` before the message of an event about one VR, other fields as ` key=value` after
//! it. Under systemd (`JOURNAL_STREAM` set) each line starts with its syslog priority (`<4>`),
//! which journald keeps as the entry's level. `--log-level` (or `PEARL_LOG`) says how much.

use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

pub const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

/// Sends events at `level` and above to stderr, one line each.
pub fn init(level: &str) {
    let level = match level {
        "error" => Level::ERROR,
        "warn" => Level::WARN,
        "debug" => Level::DEBUG,
        "trace" => Level::TRACE,
        _ => Level::INFO,
    };
    let line = Line { journald: std::env::var_os("JOURNAL_STREAM").is_some() };
    tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr).event_format(line).init();
}

struct Line {
    journald: bool,
}

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        let meta = event.metadata();
        write!(w, "{}", render(self.journald, *meta.level(), meta.target(), &f))
    }
}

fn render(journald: bool, level: Level, target: &str, f: &Fields) -> String {
    let mut out = String::new();
    if journald {
        // sd-daemon(3): <3> error, <4> warning, <6> info, <7> debug.
        let priority = match level {
            Level::ERROR => 3,
            Level::WARN => 4,
            Level::INFO => 6,
            _ => 7,
        };
        out += &format!("<{priority}>");
    }
    out += if target.starts_with("pearl_routed") { "routed" } else { "pearld" };
    if let Some(ns) = &f.netns {
        out += &format!("[{ns}]");
    }
    out += ": ";
    match level {
        Level::ERROR => out += "error: ",
        Level::WARN => out += "warning: ",
        _ => {}
    }
    if let Some(vr) = &f.vr {
        out += &format!("vr {vr}: ");
    }
    out += &f.message;
    for (key, value) in &f.rest {
        out += &format!(" {key}={value}");
    }
    out.push('\n');
    out
}

#[derive(Default)]
struct Fields {
    message: String,
    vr: Option<String>,
    netns: Option<String>,
    rest: Vec<(&'static str, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field.name(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field.name(), format!("{value:?}"));
    }
}

impl Fields {
    fn put(&mut self, name: &'static str, value: String) {
        match name {
            "message" => self.message = value,
            "vr" => self.vr = Some(value),
            "netns" => self.netns = Some(value),
            _ => self.rest.push((name, value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(message: &str, vr: Option<&str>, netns: Option<&str>) -> Fields {
        Fields { message: message.into(), vr: vr.map(Into::into), netns: netns.map(Into::into), rest: vec![("pid", "7".into())] }
    }

    #[test]
    fn lines_keep_the_program_prefix_and_say_level_vr_and_namespace() {
        let f = fields("ports[0] (p0): AF_PACKET", None, None);
        assert_eq!(render(false, Level::INFO, "pearld::ports", &f), "pearld: ports[0] (p0): AF_PACKET pid=7\n");
        let f = fields("zebra ended; restarting in 100ms", Some("red"), None);
        assert_eq!(
            render(false, Level::WARN, "pearl_vrproc::daemons", &f),
            "pearld: warning: vr red: zebra ended; restarting in 100ms pid=7\n"
        );
        let f = fields("resynchronising: ENOBUFS", None, Some("blue"));
        assert_eq!(render(true, Level::ERROR, "pearl_routed::runner", &f), "<3>routed[blue]: error: resynchronising: ENOBUFS pid=7\n");
    }
}
