//! `pearlctl plugin table VR [TABLE [get KEY | set KEY VALUE | del KEY]]`: a plugin VR's
//! key-value tables, which its program reads and writes while it runs. Keys and values are
//! bytes, given as `0x` and hexadecimal digits, as an IP address (its bytes in network order)
//! or as text; a listing shows each the way it most likely means.

use crate::client::{segment, Client};
use crate::failure::Failure;
use crate::table::Table;
use crate::vr;
use core::net::IpAddr;
use serde_json::{json, Value};

pub fn table(client: &Client, name: &str, table: Option<&str>, op: &[String], json: bool) -> Result<(), Failure> {
    let Some(table) = table else { return tables(client, name, json) };
    let at = |key: &str| Ok::<_, Failure>(vr::path(name, &format!("/tables/{}/{}", segment(table), hex(&bytes(key)?))));
    let words: Vec<&str> = op.iter().map(String::as_str).collect();
    let v = match words[..] {
        [] => return entries(client, name, table, None, json),
        ["get", key] => return entries(client, name, table, Some(bytes(key)?), json),
        ["set", key, value] => client.call("PUT", &at(key)?, Some(&json!({"value": hex(&bytes(value)?)})))?,
        ["del", key] => client.call("DELETE", &at(key)?, None)?,
        _ => return Err(Failure::usage("plugin table VR TABLE takes: get KEY | set KEY VALUE | del KEY")),
    };
    if json {
        println!("{v}");
    } else if words[0] == "set" {
        println!("set {} = {} in table {table} of VR {name}", words[1], words[2]);
    } else {
        println!("removed {} from table {table} of VR {name}", words[1]);
    }
    Ok(())
}

fn tables(client: &Client, name: &str, json: bool) -> Result<(), Failure> {
    let v = client.get(&vr::path(name, "/tables"))?;
    if json {
        println!("{v}");
        return Ok(());
    }
    let mut t = Table::new(&["table", "entries", "max_entries"], 1);
    for r in v["tables"].as_array().into_iter().flatten() {
        t.row(vec![r["name"].as_str().unwrap_or("").into(), r["entries"].to_string(), r["max_entries"].to_string()]);
    }
    print!("{}", t.render());
    Ok(())
}

/// The table's entries, or the one whose key is `only`.
fn entries(client: &Client, name: &str, table: &str, only: Option<Vec<u8>>, json: bool) -> Result<(), Failure> {
    let v = client.get(&vr::path(name, &format!("/tables/{}", segment(table))))?;
    let all = v["entries"].as_array().cloned().unwrap_or_default();
    let wanted: Vec<&Value> = all.iter().filter(|e| only.as_ref().is_none_or(|k| e["key"].as_str() == Some(&hex(k)))).collect();
    if let (Some(k), true) = (&only, wanted.is_empty()) {
        return Err(Failure::new(crate::failure::NOT_FOUND, format!("table {table} of VR {name} has no key {}", show_key(k))));
    }
    if json {
        println!("{}", if only.is_some() { wanted[0].clone() } else { v });
        return Ok(());
    }
    let mut t = Table::new(&["key", "value"], 2);
    for e in wanted {
        let field = |f: &str| unhex(e[f].as_str().unwrap_or(""));
        t.row(vec![show_key(&field("key")), show_value(&field("value"))]);
    }
    print!("{}", t.render());
    Ok(())
}

/// `0x0a000001`, `10.0.0.1`, or text.
fn bytes(word: &str) -> Result<Vec<u8>, Failure> {
    if let Some(digits) = word.strip_prefix("0x") {
        return match unhex(digits) {
            b if hex(&b) == digits.to_ascii_lowercase() => Ok(b),
            _ => Err(Failure::usage(format!("{word:?}: after 0x give an even number of hexadecimal digits"))),
        };
    }
    Ok(match word.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => a.octets().to_vec(),
        Ok(IpAddr::V6(a)) => a.octets().to_vec(),
        Err(_) => word.as_bytes().to_vec(),
    })
}

fn printable(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(|c| (0x20..0x7f).contains(c))
}

fn show_key(k: &[u8]) -> String {
    match k.len() {
        _ if printable(k) => String::from_utf8_lossy(k).into_owned(),
        4 => IpAddr::from(<[u8; 4]>::try_from(k).expect("4 bytes")).to_string(),
        16 => IpAddr::from(<[u8; 16]>::try_from(k).expect("16 bytes")).to_string(),
        _ => format!("0x{}", hex(k)),
    }
}

/// Text, or hexadecimal with the little-endian number of a 4- or 8-byte value (a counter).
fn show_value(v: &[u8]) -> String {
    if printable(v) {
        return String::from_utf8_lossy(v).into_owned();
    }
    let number = match v.len() {
        4 | 8 => format!(" ({})", v.iter().rev().fold(0u64, |n, &b| n << 8 | u64::from(b))),
        _ => String::new(),
    };
    format!("0x{}{number}", hex(v))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hexadecimal digits as bytes; what is not a pair of digits is left out (the caller compares).
fn unhex(text: &str) -> Vec<u8> {
    text.as_bytes().chunks(2).filter_map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok().filter(|_| p.len() == 2)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_hex_addresses_or_text() {
        assert_eq!(bytes("0x0A0b").unwrap(), vec![0x0a, 0x0b]);
        assert_eq!(bytes("10.9.0.1").unwrap(), vec![10, 9, 0, 1]);
        assert_eq!(bytes("2001:db8::1").unwrap().len(), 16);
        assert_eq!(bytes("dropped").unwrap(), b"dropped".to_vec());
        assert!(bytes("0xabc").is_err() && bytes("0xzz").is_err());
        assert_eq!(
            (show_key(&[10, 9, 0, 1]), show_key(b"dropped"), show_key(&[1, 2])),
            ("10.9.0.1".into(), "dropped".into(), "0x0102".into())
        );
        assert_eq!(show_value(&7u64.to_le_bytes()), "0x0700000000000000 (7)");
        assert_eq!(show_value(b"yes"), "yes");
    }
}
