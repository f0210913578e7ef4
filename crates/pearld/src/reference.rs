//! The configuration reference, generated from the grammar's own schema (the serde + schemars
//! types of `pearl_control::grammar`, as `GET /openapi.json` has them): every key by its path
//! in the document, its type, allowed values, range, default and example where the types state
//! them, and what it means. `pearld --print-reference markdown` writes docs/config-reference.md,
//! `--print-reference man` docs/man/pearl.yaml.5; a test holds both checked-in copies current.

use serde_json::Value;

/// One key of the document.
struct Key {
    path: String,
    kind: String,
    required: bool,
    facts: Vec<String>,
    description: String,
}

pub fn markdown(schema: &Value) -> String {
    let mut out = String::from(
        "# pearl.yaml: the configuration reference\n\n\
         Generated from the grammar's types by `pearld --print-reference markdown` (do not edit; \
         `man 5 pearl.yaml` is the same text). `pearld --check FILE` validates a file as a start \
         would. `[]` in a path is an item of a list. A key not marked required may be left out.\n\n\
         | key | type | meaning |\n|---|---|---|\n",
    );
    for k in keys(schema) {
        let mut meaning = k.description.replace('\n', " ").replace('|', "\\|");
        for f in &k.facts {
            meaning += &format!(" {}.", f.replace('|', "\\|"));
        }
        let required = if k.required { ", required" } else { "" };
        out += &format!("| `{}` | {}{required} | {} |\n", k.path, k.kind.replace('|', "\\|"), meaning.trim());
    }
    out
}

pub fn man(schema: &Value) -> String {
    let mut out = format!(
        ".TH PEARL.YAML 5 \"\" \"pearl {}\" \"File Formats\"\n.SH NAME\npearl.yaml \\- the configuration of a PEARL node\n\
         .SH DESCRIPTION\npearld(1) reads a YAML document whose keys follow. \\fBpearld \\-\\-check\\fR \\fIFILE\\fR validates one as \
         a start would; an error names the key by its path. [] in a path is an item of a list. Generated from the grammar's types \
         (\\fBpearld \\-\\-print\\-reference man\\fR).\n.SH KEYS\n",
        env!("CARGO_PKG_VERSION")
    );
    for k in keys(schema) {
        let required = if k.required { ", required" } else { "" };
        out += &format!(".TP\n\\fB{}\\fR ({}{required})\n", roff(&k.path), roff(&k.kind));
        let mut text = k.description.clone();
        for f in &k.facts {
            text += &format!(" {f}.");
        }
        out += &format!("{}\n", roff(text.trim()));
    }
    out += ".SH SEE ALSO\npearld(1), pearlctl(1), /usr/share/doc/pearl/README.md\n";
    out
}

/// Text in roff: backslashes and hyphens escaped, no line starting with a control character.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
}

fn keys(schema: &Value) -> Vec<Key> {
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}

/// The alternatives of a schema that may be one of several (`anyOf`, `oneOf`), null left out.
fn alternatives(schema: &Value) -> Vec<&Value> {
    let listed = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array);
    match listed {
        Some(list) => list.iter().filter(|s| s.get("type").and_then(Value::as_str) != Some("null")).collect(),
        None => vec![schema],
    }
}

fn walk(schema: &Value, path: &str, out: &mut Vec<Key>) {
    for alt in alternatives(schema) {
        let Some(props) = alt.get("properties").and_then(Value::as_object) else {
            if let Some(items) = alt.get("items") {
                walk(items, &format!("{path}[]"), out);
            } else if let Some(entry @ Value::Object(_)) = alt.get("additionalProperties") {
                // A map's entries, by a placeholder for their key (`nets.NAME.links`).
                walk(entry, &format!("{path}.NAME"), out);
            }
            continue;
        };
        let required: Vec<&str> = alt.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (name, p) in props {
            let at = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
            if out.iter().any(|k| k.path == at) {
                continue;
            }
            out.push(Key {
                kind: kind(p),
                required: required.contains(&name.as_str()),
                facts: facts(p),
                description: description(p),
                path: at.clone(),
            });
            walk(p, &at, out);
        }
    }
}

fn description(schema: &Value) -> String {
    let own = schema.get("description").and_then(Value::as_str);
    let first = alternatives(schema).into_iter().find_map(|a| a.get("description").and_then(Value::as_str));
    own.or(first).unwrap_or("").to_string()
}

fn kind(schema: &Value) -> String {
    let alts = alternatives(schema);
    let kinds: Vec<String> = alts.iter().map(|a| one_kind(a)).collect();
    let mut unique: Vec<String> = Vec::new();
    for k in kinds {
        if !unique.contains(&k) {
            unique.push(k);
        }
    }
    unique.join(" or ")
}

fn one_kind(s: &Value) -> String {
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values.iter().filter(|v| !v.is_null()).map(|v| v.as_str().map_or(v.to_string(), str::to_string)).collect();
        return format!("one of {}", names.join(", "));
    }
    if let Some(c) = s.get("const") {
        return c.as_str().map_or(c.to_string(), |t| format!("`{t}`"));
    }
    match s.get("type") {
        Some(Value::String(t)) if t == "array" => format!("list of {}", s.get("items").map_or("anything".into(), kind)),
        Some(Value::String(t)) if t == "object" && s.get("properties").is_none() => match s.get("additionalProperties") {
            Some(v @ Value::Object(_)) => format!("map of {}", kind(v)),
            _ => "map".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" or "),
        _ if s.get("anyOf").is_some() || s.get("oneOf").is_some() => kind(s),
        _ => "any".into(),
    }
}

/// Range, length, pattern, default and example, where the schema states them.
fn facts(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in alternatives(schema) {
        let n = |k: &str| s.get(k).map(|v| v.to_string());
        match (n("minimum"), n("maximum")) {
            (Some(lo), Some(hi)) => out.push(format!("From {lo} to {hi}")),
            (Some(lo), None) => out.push(format!("At least {lo}")),
            (None, Some(hi)) => out.push(format!("At most {hi}")),
            (None, None) => {}
        }
        if let Some(p) = s.get("pattern").and_then(Value::as_str) {
            out.push(format!("Matches `{p}`"));
        }
    }
    if let Some(d) = schema.get("default") {
        out.push(format!("Default: `{d}`"));
    }
    let examples = schema.get("examples").and_then(Value::as_array).cloned().or_else(|| schema.get("example").map(|e| vec![e.clone()]));
    if let Some(e) = examples.and_then(|e| e.first().cloned()) {
        out.push(format!("Example: `{}`", e.as_str().map_or(e.to_string(), str::to_string)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn checked_in(relative: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn the_checked_in_reference_and_man_page_are_what_the_grammar_says() {
        let schema = crate::schemas::document();
        assert!(
            checked_in("docs/config-reference.md") == markdown(&schema),
            "docs/config-reference.md is stale: target/release/pearld --print-reference markdown > docs/config-reference.md"
        );
        assert!(
            checked_in("docs/man/pearl.yaml.5") == man(&schema),
            "docs/man/pearl.yaml.5 is stale: target/release/pearld --print-reference man > docs/man/pearl.yaml.5"
        );
    }

    #[test]
    fn every_key_of_a_vr_interface_is_listed_with_its_type() {
        let text = markdown(&crate::schemas::document());
        for key in ["name", "port", "mac", "addresses", "mtu", "urpf", "impair.delay_ms"] {
            assert!(text.contains(&format!("| `vrs[].interfaces[].{key}` |")), "{key} missing");
        }
        assert!(text.contains("| `vrs[].interfaces[].urpf` | one of strict, loose, off |"), "{text}");
        assert!(text.contains("| `workers` | integer |"), "{text}");
    }
}
