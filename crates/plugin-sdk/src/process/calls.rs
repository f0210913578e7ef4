//! A process plugin's routes and tables: each call is written into the control block of the
//! memory shared with pearld and answered by the worker waiting for the batch (`abi.rs`), with
//! the signatures of the WebAssembly imports (`host.rs`).

use crate::abi::{
    CALL_ANSWER, CALL_ARGS, CALL_BATCH, CALL_DATA, CALL_DATA_LEN, CALL_KEY_ROOM, CALL_OP, CALL_REFUSED, CALL_ROUTE_V4, CALL_ROUTE_V4_BATCH,
    CALL_ROUTE_V6, CALL_TABLE_FIND, CALL_TABLE_GET, CALL_TABLE_REMOVE, CALL_TABLE_SET, CTL_ANSWERED, CTL_CALL, CTL_EVENT, ROUTE_ANSWER_LEN,
    ROUTE_NONE, TABLE_NONE, TABLE_TOO_LONG,
};
use core::ptr::{self, null_mut};
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// The shared memory, once `serve` mapped it.
static SHM: AtomicPtr<u8> = AtomicPtr::new(null_mut());

pub(crate) fn attach(base: *mut u8) {
    SHM.store(base, Ordering::Release);
}

fn word(base: *mut u8, at: usize) -> &'static AtomicU32 {
    // SAFETY: the control words are inside the mapping, 4-aligned; it stays mapped for the
    // process's life.
    unsafe { &*base.add(at).cast::<AtomicU32>() }
}

/// The call's bytes.
fn data(base: *mut u8) -> *mut u8 {
    // SAFETY: CALL_DATA is inside the control block.
    unsafe { base.add(CALL_DATA) }
}

/// Makes call `op` with `args`, its bytes already in place; pearld's answer.
fn call(base: *mut u8, op: u32, args: [i32; 5]) -> i32 {
    // SAFETY: the call's words are inside the control block, which pearld reads only after
    // CTL_CALL moves and writes only before CTL_ANSWERED does.
    unsafe {
        ptr::write_unaligned(base.add(CALL_OP).cast::<u32>(), op.to_le());
        for (k, a) in args.iter().enumerate() {
            ptr::write_unaligned(base.add(CALL_ARGS + 4 * k).cast::<i32>(), a.to_le());
        }
    }
    let n = word(base, CTL_CALL).load(Ordering::Relaxed).wrapping_add(1);
    word(base, CTL_CALL).store(n, Ordering::Release);
    word(base, CTL_EVENT).fetch_add(1, Ordering::Release);
    super::futex(word(base, CTL_EVENT), libc::FUTEX_WAKE, 1);
    loop {
        let answered = word(base, CTL_ANSWERED).load(Ordering::Acquire);
        if answered == n {
            break;
        }
        super::futex(word(base, CTL_ANSWERED), libc::FUTEX_WAIT, answered);
    }
    // SAFETY: as above.
    i32::from_le(unsafe { ptr::read_unaligned(base.add(CALL_ANSWER).cast::<i32>()) })
}

fn shm() -> Option<*mut u8> {
    let base = SHM.load(Ordering::Acquire);
    (!base.is_null()).then_some(base)
}

/// # Safety
/// `out` has room for 12 bytes.
pub(crate) unsafe fn pearl_route_v4(addr: i32, out: *mut u8) -> i32 {
    let Some(base) = shm() else { return ROUTE_NONE };
    let r = call(base, CALL_ROUTE_V4, [addr, 0, 0, 0, 0]);
    if r >= 0 {
        ptr::copy_nonoverlapping(data(base), out, 12);
    }
    r
}

/// # Safety
/// `addr` holds 16 bytes; `out` has room for 12.
pub(crate) unsafe fn pearl_route_v6(addr: *const u8, out: *mut u8) -> i32 {
    let Some(base) = shm() else { return ROUTE_NONE };
    ptr::copy_nonoverlapping(addr, data(base), 16);
    let r = call(base, CALL_ROUTE_V6, [0, 16, 0, 0, 0]);
    if r >= 0 {
        ptr::copy_nonoverlapping(data(base).add(16), out, 12);
    }
    r
}

/// # Safety
/// `addrs` holds `count` addresses; `out` has room for `count` answers.
pub(crate) unsafe fn pearl_route_v4_batch(addrs: *const u32, count: i32, out: *mut u8) {
    let count = count.max(0) as usize;
    let answers_at = 4 * CALL_BATCH;
    for first in (0..count).step_by(CALL_BATCH) {
        let n = (count - first).min(CALL_BATCH);
        let Some(base) = shm() else {
            for k in 0..n {
                ptr::copy_nonoverlapping(ROUTE_NONE.to_le_bytes().as_ptr(), out.add((first + k) * ROUTE_ANSWER_LEN), 4);
            }
            continue;
        };
        for k in 0..n {
            let a = ptr::read_unaligned(addrs.add(first + k)).to_le_bytes();
            ptr::copy_nonoverlapping(a.as_ptr(), data(base).add(4 * k), 4);
        }
        call(base, CALL_ROUTE_V4_BATCH, [0, n as i32, answers_at as i32, 0, 0]);
        ptr::copy_nonoverlapping(data(base).add(answers_at), out.add(first * ROUTE_ANSWER_LEN), n * ROUTE_ANSWER_LEN);
    }
}

/// # Safety
/// `name` holds `name_len` bytes.
pub(crate) unsafe fn pearl_table_find(name: *const u8, name_len: i32) -> i32 {
    let Some(base) = shm().filter(|_| (0..=CALL_DATA_LEN as i32).contains(&name_len)) else { return TABLE_NONE };
    ptr::copy_nonoverlapping(name, data(base), name_len as usize);
    call(base, CALL_TABLE_FIND, [0, name_len, 0, 0, 0])
}

/// # Safety
/// `key` holds `key_len` bytes; `out` has room for `cap`.
pub(crate) unsafe fn pearl_table_get(table: i32, key: *const u8, key_len: i32, out: *mut u8, cap: i32) -> i32 {
    let Some(base) = shm().filter(|_| (0..=CALL_KEY_ROOM as i32).contains(&key_len) && cap >= 0) else { return TABLE_NONE };
    let asked = (cap as usize).min(CALL_DATA_LEN - CALL_KEY_ROOM);
    ptr::copy_nonoverlapping(key, data(base), key_len as usize);
    let r = call(base, CALL_TABLE_GET, [table, 0, key_len, CALL_KEY_ROOM as i32, asked as i32]);
    if r > 0 {
        ptr::copy_nonoverlapping(data(base).add(CALL_KEY_ROOM), out, (r as usize).min(asked));
    }
    r
}

/// # Safety
/// `key` and `value` hold `key_len` and `value_len` bytes.
pub(crate) unsafe fn pearl_table_set(table: i32, key: *const u8, key_len: i32, value: *const u8, value_len: i32) -> i32 {
    if !(0..=CALL_KEY_ROOM as i32).contains(&key_len) || !(0..=(CALL_DATA_LEN - CALL_KEY_ROOM) as i32).contains(&value_len) {
        return TABLE_TOO_LONG;
    }
    let Some(base) = shm() else { return CALL_REFUSED };
    ptr::copy_nonoverlapping(key, data(base), key_len as usize);
    ptr::copy_nonoverlapping(value, data(base).add(CALL_KEY_ROOM), value_len as usize);
    call(base, CALL_TABLE_SET, [table, 0, key_len, CALL_KEY_ROOM as i32, value_len])
}

/// # Safety
/// `key` holds `key_len` bytes.
pub(crate) unsafe fn pearl_table_remove(table: i32, key: *const u8, key_len: i32) -> i32 {
    let Some(base) = shm().filter(|_| (0..=CALL_KEY_ROOM as i32).contains(&key_len)) else { return 0 };
    ptr::copy_nonoverlapping(key, data(base), key_len as usize);
    call(base, CALL_TABLE_REMOVE, [table, 0, key_len, 0, 0])
}
