//! The audit trail: one line at info level per change asked of the API (any method but GET and
//! HEAD), saying who asked, what, and what came of it, so that the journal shows what changed a
//! node and who refused to be refused.

use serde_json::Value;

/// What the router learned of a request before answering it.
#[derive(Default)]
pub struct Seen {
    /// Who is calling, once the guard said: "admin", "VR red's token", ….
    pub who: Option<String>,
    /// The VR and interface names it touches, as "vr red", "interface eth0".
    pub touches: Vec<String>,
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
