//! The C header states the same interface as `abi.rs`: every constant of one has its twin, of
//! the same value, in the other.

use pearl_plugin_sdk::abi::*;
use std::collections::HashMap;

#[test]
fn the_c_header_agrees_with_the_abi() {
    let header = include_str!("../c/pearl_plugin.h");
    let defined: HashMap<&str, i64> = header
        .lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix("#define PEARL_")?.split_whitespace();
            let (name, value) = (words.next()?, words.next()?.trim_matches(|c| c == '(' || c == ')'));
            let value = match value.strip_prefix("0x") {
                Some(hex) => i64::from_str_radix(hex, 16).ok()?,
                None => value.parse().ok()?,
            };
            Some((name, value))
        })
        .collect();
    let abi: &[(&str, i64)] = &[
        ("HEADER_LEN", HEADER_LEN as i64),
        ("HEADER_COUNT", HEADER_COUNT as i64),
        ("HEADER_TIME_NS", HEADER_TIME_NS as i64),
        ("DESCRIPTOR_LEN", DESCRIPTOR_LEN as i64),
        ("DESC_OFFSET", DESC_OFFSET as i64),
        ("DESC_LEN", DESC_LEN as i64),
        ("DESC_CAP", DESC_CAP as i64),
        ("DESC_INTERFACE", DESC_INTERFACE as i64),
        ("DESC_VERDICT", DESC_VERDICT as i64),
        ("DESC_COPIES", DESC_COPIES as i64),
        ("MAX_BATCH", MAX_BATCH as i64),
        ("FRAMES_AT", FRAMES_AT as i64),
        ("HEADROOM", HEADROOM as i64),
        ("VERDICT_DROP", VERDICT_DROP.into()),
        ("VERDICT_SLOW", VERDICT_SLOW.into()),
        ("VERDICT_SEND", VERDICT_SEND.into()),
        ("ROUTE_NONE", ROUTE_NONE.into()),
        ("ROUTE_UNRESOLVED", ROUTE_UNRESOLVED.into()),
        ("ROUTE_LOCAL", ROUTE_LOCAL.into()),
        ("ROUTE_ANSWER_LEN", ROUTE_ANSWER_LEN as i64),
        ("TABLE_NONE", TABLE_NONE.into()),
        ("TABLE_FULL", TABLE_FULL.into()),
        ("TABLE_TOO_LONG", TABLE_TOO_LONG.into()),
        ("TABLE_KEY_MAX", TABLE_KEY_MAX as i64),
        ("TABLE_VALUE_MAX", TABLE_VALUE_MAX as i64),
        ("PROCESS_CONTROL_LEN", PROCESS_CONTROL_LEN as i64),
        ("PROCESS_AREA_SIZE", PROCESS_AREA_SIZE as i64),
        ("CTL_REQUEST", CTL_REQUEST as i64),
        ("CTL_DONE", CTL_DONE as i64),
        ("CTL_COUNT", CTL_COUNT as i64),
        ("CTL_ATTACHED", CTL_ATTACHED as i64),
        ("CTL_CALL", CTL_CALL as i64),
        ("CTL_ANSWERED", CTL_ANSWERED as i64),
        ("CTL_EVENT", CTL_EVENT as i64),
        ("CALL_OP", CALL_OP as i64),
        ("CALL_ARGS", CALL_ARGS as i64),
        ("CALL_ANSWER", CALL_ANSWER as i64),
        ("CALL_DATA", CALL_DATA as i64),
        ("CALL_DATA_LEN", CALL_DATA_LEN as i64),
        ("CALL_ROUTE_V4", CALL_ROUTE_V4.into()),
        ("CALL_ROUTE_V6", CALL_ROUTE_V6.into()),
        ("CALL_ROUTE_V4_BATCH", CALL_ROUTE_V4_BATCH.into()),
        ("CALL_TABLE_FIND", CALL_TABLE_FIND.into()),
        ("CALL_TABLE_GET", CALL_TABLE_GET.into()),
        ("CALL_TABLE_SET", CALL_TABLE_SET.into()),
        ("CALL_TABLE_REMOVE", CALL_TABLE_REMOVE.into()),
        ("CALL_REFUSED", CALL_REFUSED.into()),
        ("CALL_BATCH", CALL_BATCH as i64),
        ("CALL_KEY_ROOM", CALL_KEY_ROOM as i64),
    ];
    for &(name, value) in abi {
        assert_eq!(defined.get(name), Some(&value), "PEARL_{name} in pearl_plugin.h");
    }
    assert_eq!(defined.len(), abi.len(), "every constant of the header is one of abi.rs: {defined:?}");
}
