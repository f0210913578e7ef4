//! The rule for a configuration file edited while the stored state holds run-time changes.
//!
//! Documents are compared, not texts: a comment or another layout is no change, and the stored
//! state comes back as it was. A file whose document changed wins when the stored state holds
//! nothing but what the earlier file said (the operator edited the file). When it changed and the
//! stored state also holds run-time changes, neither is dropped silently: pearld refuses to start,
//! lists what differs, and waits to be told which wins (`--config-wins`, `--state-wins`).

use crate::doc_diff::{compare, Diff};
use serde_json::Value;

/// Which side the operator said wins when both the file and the stored state changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Winner {
    Undecided,
    Config,
    State,
}

/// What the stored state says about itself, beside its document.
pub struct Stored {
    pub doc: Value,
    /// The file's document is the one the stored state grew from (comments and layout aside).
    pub file_unchanged: bool,
    /// The stored document is what that earlier file said: nothing was changed at run time.
    /// False when the store cannot tell (saved by an older pearld, or kept over a newer file).
    pub as_file_said: bool,
}

/// Where the node starts from.
#[derive(Debug, PartialEq, Eq)]
pub enum Start {
    File,
    /// The stored state; `stale`: the file differs from it, and the operator chose the state.
    State {
        stale: bool,
    },
}

/// Decides where to start from the file's document `file` and the stored state; refuses (with
/// what differs and how to choose) when both changed and the operator did not say which wins.
/// `config_path` and `state_path` name the two in messages.
pub fn choose(file: &Value, stored: &Stored, winner: Winner, config_path: &str, state_path: &str) -> Result<Start, String> {
    if stored.file_unchanged {
        return Ok(Start::State { stale: false });
    }
    let differences = differences(file, &stored.doc);
    if stored.as_file_said || differences.is_empty() {
        tracing::info!("{config_path} changed since the stored state was saved, which held no run-time change: starting from the file");
        return Ok(Start::File);
    }
    match winner {
        Winner::Config => {
            for d in &differences {
                tracing::warn!("--config-wins: dropping the stored state's {d}");
            }
            Ok(Start::File)
        }
        Winner::State => {
            tracing::warn!(
                "--state-wins: starting from the stored state in {state_path}; {config_path} is stale ({}); \
                 `pearlctl config export --output {config_path}` makes it current",
                differences.join("; ")
            );
            Ok(Start::State { stale: true })
        }
        Winner::Undecided => Err(format!(
            "{config_path} changed since the stored state in {state_path} was saved, and the stored state holds run-time changes; \
             they differ in:\n  {}\nstart with --state-wins to keep the stored state (then `pearlctl config export --output {config_path}` \
             makes the file current), or with --config-wins to start from the file, dropping the stored state's changes",
            differences.join("\n  ")
        )),
    }
}

/// At most this many differences are listed, then how many more there are.
const LISTED: usize = 12;

/// What differs between the file's document and the stored one, one short line each: the VRs
/// and ports by name, the other keys by key.
pub fn differences(file: &Value, state: &Value) -> Vec<String> {
    let mut out: Vec<String> = compare(file, state)
        .into_iter()
        .map(|d| match d {
            Diff::Only { list, name, in_first: true } => format!("{list} {name}: only in the file"),
            Diff::Only { list, name, in_first: false } => format!("{list} {name}: only in the stored state"),
            Diff::Changed { list, name, keys } => format!("{list} {name}: {} differ", keys.join(", ")),
            Diff::Key(key) => format!("{key}: differs"),
        })
        .collect();
    if out.len() > LISTED {
        let more = out.len() - LISTED;
        out.truncate(LISTED);
        out.push(format!("… and {more} more"));
    }
    out
}

/// A hash of the document itself: the same whatever the order of its keys, or the comments and
/// layout of the text it was read from.
pub fn document_hash(doc: &Value) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    hash_into(doc, &mut h);
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn eat(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

fn hash_into(v: &Value, h: &mut Fnv) {
    // A tag byte per value, and lengths, so that different trees never write the same bytes.
    match v {
        Value::Null => h.eat(b"n"),
        Value::Bool(b) => h.eat(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            h.eat(b"#");
            h.eat(n.to_string().as_bytes());
            h.eat(b";");
        }
        Value::String(s) => {
            h.eat(b"s");
            h.eat(&(s.len() as u64).to_le_bytes());
            h.eat(s.as_bytes());
        }
        Value::Array(items) => {
            h.eat(b"[");
            h.eat(&(items.len() as u64).to_le_bytes());
            items.iter().for_each(|i| hash_into(i, h));
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            h.eat(b"{");
            h.eat(&(keys.len() as u64).to_le_bytes());
            for k in keys {
                h.eat(&(k.len() as u64).to_le_bytes());
                h.eat(k.as_bytes());
                hash_into(&m[k], h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pearl_control::document_from_yaml;
    use serde_json::json;

    fn yaml(text: &str) -> Value {
        document_from_yaml(text).unwrap()
    }

    fn stored(doc: Value, file_unchanged: bool, as_file_said: bool) -> Stored {
        Stored { doc, file_unchanged, as_file_said }
    }

    #[test]
    fn comments_layout_and_key_order_are_no_change() {
        let a = yaml("workers: 1\nvrs:\n  - name: red\n    kind: kernel\n");
        let b = yaml("# a comment\nvrs: [{kind: kernel, name: red}]   # another\nworkers: 1\n");
        assert_eq!(document_hash(&a), document_hash(&b));
        assert_ne!(document_hash(&a), document_hash(&yaml("workers: 2\nvrs: [{kind: kernel, name: red}]")));
        assert_ne!(document_hash(&json!({"a": "1"})), document_hash(&json!({"a": 1})));
    }

    #[test]
    fn differences_say_on_which_side_each_is() {
        let file = json!({"workers": 1, "vrs": [{"name": "red", "kind": "kernel"}, {"name": "blue"}]});
        let state = json!({"vrs": [{"name": "red", "kind": "fast", "id": 3, "routes": []}, {"name": "green", "id": 4}]});
        assert_eq!(
            differences(&file, &state),
            ["vrs red: kind, routes differ", "vrs green: only in the stored state", "vrs blue: only in the file", "workers: differs"]
        );
    }

    #[test]
    fn an_edited_file_over_run_time_changes_is_refused_until_told_which_wins() {
        let old = json!({"vrs": [{"name": "red", "id": 0}]});
        let file = json!({"workers": 2, "vrs": [{"name": "red"}]});
        let changed = json!({"vrs": [{"name": "red", "id": 0}, {"name": "blue", "id": 1}]});
        let pick = |s: &Stored, w| choose(&file, s, w, "c.yaml", "/state");
        assert_eq!(pick(&stored(changed.clone(), true, false), Winner::Undecided), Ok(Start::State { stale: false }));
        assert_eq!(pick(&stored(old.clone(), false, true), Winner::Undecided), Ok(Start::File));
        let refused = pick(&stored(changed.clone(), false, false), Winner::Undecided).unwrap_err();
        assert!(refused.contains("vrs blue: only in the stored state"), "{refused}");
        assert!(refused.contains("workers: differs") && refused.contains("--state-wins") && refused.contains("--config-wins"), "{refused}");
        assert_eq!(pick(&stored(changed.clone(), false, false), Winner::Config), Ok(Start::File));
        assert_eq!(pick(&stored(changed, false, false), Winner::State), Ok(Start::State { stale: true }));
        // A state that is what the new file says (the file made current by an export) is no conflict.
        let current = json!({"workers": 2, "vrs": [{"name": "red", "id": 0}]});
        assert_eq!(pick(&stored(current, false, false), Winner::Undecided), Ok(Start::File));
    }

    #[test]
    fn a_long_list_of_differences_is_cut_short() {
        let vrs: Vec<Value> = (0..20).map(|i| json!({"name": format!("vr{i}")})).collect();
        let d = differences(&json!({}), &json!({ "vrs": vrs }));
        assert_eq!(d.len(), LISTED + 1);
        assert_eq!(d[LISTED], "… and 8 more");
    }
}
