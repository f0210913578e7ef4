//! The audit trail: one line at info level per change asked of the API (any method but GET and
//! HEAD), saying who asked, what, and what came of it, so that the journal shows what changed a
//! node and who refused to be refused.

use crate::doc_diff::{compare, Diff};
use serde_json::Value;

/// What the router learned of a request before answering it.
#[derive(Default)]
pub struct Seen {
    /// Who is calling, once the guard said: "admin", "VR red's token", ….
    pub who: Option<String>,
    /// The VR and interface names it touches, as "vr red", "interface eth0".
    pub touches: Vec<String>,
}

/// At most this many names of what a whole document touches, then how many more.
const NAMED: usize = 12;

/// What a whole new document `after` changes of `before`: the VRs and ports by name ("vr
/// blue", "port p3"), the other keys by key.
pub fn touched(before: &Value, after: &Value) -> Vec<String> {
    let mut out: Vec<String> = compare(before, after)
        .into_iter()
        .map(|d| match d {
            Diff::Only { list, name, .. } | Diff::Changed { list, name, .. } => {
                format!("{} {name}", list.strip_suffix('s').unwrap_or(list))
            }
            Diff::Key(key) => key.to_string(),
        })
        .collect();
    if out.len() > NAMED {
        let more = out.len() - NAMED;
        out.truncate(NAMED);
        out.push(format!("{more} more"));
    }
    out
}

/// Whether a request of `method` is a change, and so audited.
pub fn audited(method: &str) -> bool {
    method != "GET" && method != "HEAD"
}

/// Logs the answer `status` (`body`: the JSON error of a refusal) to a change of `path`.
pub fn log(method: &str, path: &str, seen: &Seen, status: u16, body: &[u8]) {
    let who = seen.who.as_deref().unwrap_or("a caller without valid credentials");
    let touches = if seen.touches.is_empty() { String::new() } else { format!(" ({})", seen.touches.join(", ")) };
    if status < 400 {
        tracing::info!("audit: {who}: {method} {path}{touches}: applied ({status})");
        return;
    }
    let error = serde_json::from_slice::<Value>(body).unwrap_or_default();
    let message = error["message"].as_str().unwrap_or_default();
    let field = error["field"].as_str().map(|f| format!(" [{f}]")).unwrap_or_default();
    tracing::info!("audit: {who}: {method} {path}{touches}: refused ({status}){field}: {message}");
}
