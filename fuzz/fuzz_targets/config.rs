//! Fuzzes the YAML configuration parser (and through it the filter-rule grammar of `match:`):
//! any text is accepted or refused with an error naming a place in it, never a panic; what is
//! accepted re-validates the same from its own JSON document.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pearl_control::{config_from_document, document_from_yaml, parse_config};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = parse_config(text);
    if let Ok(doc) = document_from_yaml(text) {
        let from_doc = config_from_document(&doc, std::path::Path::new("/nonexistent"));
        if let (Ok(a), Ok(b)) = (&parsed, &from_doc) {
            assert_eq!(a.vrs.len(), b.vrs.len());
            assert_eq!(a.ports.len(), b.ports.len());
        }
    }
    if let Err(e) = parsed {
        assert!(!e.to_string().is_empty());
    }
});
