//! pearld's side of a process plugin's calls (`pearl_plugin_sdk::abi`, `CALL_*`): the VR's
//! routes and the plugin's tables, answered by the worker while it waits for the batch, from
//! and into the call's bytes in the control block. What the process wrote there is untrusted:
//! an offset outside the call's bytes, an unknown operation or a table that does not exist is
//! answered `CALL_REFUSED`, never followed.

use crate::route_answer::code_of;
use crate::tables::{self, PluginTables, Table};
use pearl_plugin_sdk::abi::{
    CALL_ANSWER, CALL_ARGS, CALL_BATCH, CALL_DATA, CALL_OP, CALL_REFUSED, CALL_ROUTE_V4, CALL_ROUTE_V4_BATCH, CALL_ROUTE_V6,
    CALL_TABLE_FIND, CALL_TABLE_GET, CALL_TABLE_REMOVE, CALL_TABLE_SET, PROCESS_CONTROL_LEN, ROUTE_ANSWER_LEN, TABLE_NONE,
};
use pearl_program::Run;
use pearl_tables::nexthop::Adjacency;
use std::ops::Range;
use std::sync::MutexGuard;

/// Room the calls of a batch reuse.
#[derive(Default)]
pub struct CallScratch {
    addrs: Vec<u32>,
    hops: Vec<u32>,
    routes: Vec<Option<Adjacency>>,
}

/// What a call runs against: the run the batch belongs to, the VR's interface on each port,
/// and the plugin's tables with the guard a table call takes for the rest of the batch.
pub struct Against<'a, 't, 'r> {
    pub run: &'a Run<'r>,
    pub interface_of_port: &'a [u16],
    pub tables: &'t PluginTables,
    pub held: &'a mut Option<MutexGuard<'t, Vec<Table>>>,
    pub scratch: &'a mut CallScratch,
}

/// Answers the call in `call`: the control block from `CALL_OP` on (the words before it are
/// the protocol's, touched only as atomics).
pub fn answer(call: &mut [u8], cx: Against<'_, '_, '_>) {
    debug_assert_eq!(call.len(), PROCESS_CONTROL_LEN - CALL_OP);
    let word = |at: usize| [call[at - CALL_OP], call[at - CALL_OP + 1], call[at - CALL_OP + 2], call[at - CALL_OP + 3]];
    let op = u32::from_le_bytes(word(CALL_OP));
    let args: [i32; 5] = std::array::from_fn(|k| i32::from_le_bytes(word(CALL_ARGS + 4 * k)));
    let answer = serve(op, args, &mut call[CALL_DATA - CALL_OP..], cx).unwrap_or(CALL_REFUSED);
    call[CALL_ANSWER - CALL_OP..CALL_ANSWER - CALL_OP + 4].copy_from_slice(&answer.to_le_bytes());
}

/// `n` bytes at offset `at` of the call's bytes, if they are all there.
fn span(data: &[u8], at: i32, n: usize) -> Option<Range<usize>> {
    let at = usize::try_from(at).ok()?;
    let end = at.checked_add(n)?;
    (end <= data.len()).then_some(at..end)
}

fn serve(op: u32, args: [i32; 5], data: &mut [u8], cx: Against<'_, '_, '_>) -> Option<i32> {
    let Against { run, interface_of_port, tables, held, scratch } = cx;
    let route = |data: &mut [u8], route: Option<Adjacency>, out: i32| -> Option<i32> {
        let (code, macs) = code_of(route, interface_of_port);
        if let Some((dst, src)) = macs {
            let out = span(data, out, 12)?;
            data[out.start..out.start + 6].copy_from_slice(&dst);
            data[out.start + 6..out.end].copy_from_slice(&src);
        }
        Some(code)
    };
    match op {
        CALL_ROUTE_V4 => route(data, run.fib_v4(args[0] as u32), args[1]),
        CALL_ROUTE_V6 => {
            let at = span(data, args[0], 16)?;
            let addr = u128::from_be_bytes(data[at].try_into().ok()?);
            route(data, run.fib_v6(addr), args[1])
        }
        CALL_ROUTE_V4_BATCH => {
            let n = usize::try_from(args[1]).ok().filter(|&n| n <= CALL_BATCH)?;
            let (input, out) = (span(data, args[0], 4 * n)?, span(data, args[2], ROUTE_ANSWER_LEN * n)?);
            scratch.addrs.clear();
            scratch.addrs.extend(data[input].chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            run.fib_v4_batch(&scratch.addrs, &mut scratch.hops, &mut scratch.routes);
            for (route, a) in scratch.routes.iter().zip(data[out].chunks_exact_mut(ROUTE_ANSWER_LEN)) {
                let (code, macs) = code_of(*route, interface_of_port);
                a[..4].copy_from_slice(&code.to_le_bytes());
                if let Some((dst, src)) = macs {
                    a[4..10].copy_from_slice(&dst);
                    a[10..16].copy_from_slice(&src);
                }
            }
            Some(0)
        }
        CALL_TABLE_FIND => {
            let name = span(data, args[0], usize::try_from(args[1]).ok()?)?;
            Some(tables.find(&data[name]).map_or(TABLE_NONE, |t| t as i32))
        }
        CALL_TABLE_GET | CALL_TABLE_SET | CALL_TABLE_REMOVE if !tables.is_empty() => {
            let held = held.get_or_insert_with(|| tables.lock());
            let key = (args[0], args[1], args[2]);
            match op {
                CALL_TABLE_GET => tables::import_get(&mut held[..], data, key, args[3], args[4]).ok(),
                CALL_TABLE_SET => tables::import_set(&mut held[..], data, key, args[3], args[4]).ok(),
                _ => tables::import_remove(&mut held[..], data, key).ok(),
            }
        }
        _ => None,
    }
}
