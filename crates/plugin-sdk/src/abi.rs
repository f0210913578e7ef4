//! The batch area's layout and the codes that cross between pearld and a plugin. All numbers
//! are little-endian, as WebAssembly's memory is.
//!
//! A plugin exports `memory`, `pearl_area() -> i32` (where its area starts), `pearl_area_size()
//! -> i32` and `pearl_process(count: i32)`; optionally `pearl_init(ptr: i32, len: i32) -> i32`
//! (0: the configuration is accepted). pearld writes a batch into the area: a header, then
//! `count` descriptors, then the frames; the plugin rewrites frames in place and sets each
//! descriptor's verdict.

/// The header: `count: u32`, reserved `u32`, `time_ns: u64` (a monotonic clock, the same for
/// the whole batch).
pub const HEADER_LEN: usize = 16;
pub const HEADER_COUNT: usize = 0;
pub const HEADER_TIME_NS: usize = 8;

/// A descriptor: `offset: u32` (of the frame, from the area's start), `len: u32` (the frame's
/// length; the plugin may change it up to `cap`), `cap: u32`, `interface: u16` (the VR
/// interface the frame came in on, in the configuration's order), `verdict: u16`, `copies:
/// u64` (pearld writes 0; bit `i` set: a copy also leaves by VR interface `i`).
pub const DESCRIPTOR_LEN: usize = 24;
pub const DESC_OFFSET: usize = 0;
pub const DESC_LEN: usize = 4;
pub const DESC_CAP: usize = 8;
pub const DESC_INTERFACE: usize = 12;
pub const DESC_VERDICT: usize = 14;
/// A descriptor whose `copies` is not 0 has several fates: a copy of the frame as the plugin
/// left it out of each interface in `copies`, and the verdict's own (out of its interface, or
/// to the VR's kernel, then also as the plugin left it; `VERDICT_DROP` adds nothing).
pub const DESC_COPIES: usize = 16;

/// The most frames in one call; descriptors take `MAX_BATCH * DESCRIPTOR_LEN` bytes after the
/// header whatever the count, so frames start at [`FRAMES_AT`].
pub const MAX_BATCH: usize = 256;
pub const FRAMES_AT: usize = HEADER_LEN + MAX_BATCH * DESCRIPTOR_LEN;
/// Room after each frame for headers the plugin adds (`cap` is at least `len + HEADROOM`).
pub const HEADROOM: usize = 64;

/// Verdicts. The verdict starts as `DROP`: a frame the plugin does not decide is dropped.
pub const VERDICT_DROP: u16 = 0;
/// To the VR's kernel (its namespace), as it arrived.
pub const VERDICT_SLOW: u16 = 1;
/// Out of VR interface `i`: `VERDICT_SEND | i`, the frame as the plugin left it.
pub const VERDICT_SEND: u16 = 0x8000;

/// Answers of the `route_v4(addr: i32, out: i32) -> i32` import (module `pearl`): the VR's
/// longest-prefix match for `addr`. `>= 0`: the VR interface to send by, and 12 bytes written
/// at `out` (the next hop's MAC, then the interface's own). `route_v6(addr: i32, out: i32) ->
/// i32` answers the same for the 16-byte address (network order) at `addr`.
pub const ROUTE_NONE: i32 = -1;
/// `route_v4_batch(addrs: i32, count: i32, out: i32)` answers `count` (at most `MAX_BATCH`)
/// IPv4 addresses (u32, host order, at `addrs`) at once, the lookups overlapped: for each, 16
/// bytes at `out`: the answer as an `i32`, then the 12 bytes of MACs.
pub const ROUTE_ANSWER_LEN: usize = 16;
/// On a connected subnet whose neighbour is not resolved: the VR's kernel resolves it.
pub const ROUTE_UNRESOLVED: i32 = -2;
/// One of the VR's own addresses.
pub const ROUTE_LOCAL: i32 = -3;

/// Key-value tables (`plugin.tables` in the configuration), shared with the VR's owner through
/// the API. Imports of module `pearl`: `table_find(name: i32, name_len: i32) -> i32` (the
/// table's handle, or `TABLE_NONE`); `table_get(table, key, key_len, out, cap) -> i32` (the
/// value's length, `cap` bytes of it at most copied to `out`, or `TABLE_NONE` when the key is
/// absent); `table_set(table, key, key_len, value, value_len) -> i32` (0, `TABLE_FULL` or
/// `TABLE_TOO_LONG`); `table_remove(table, key, key_len) -> i32` (1 removed, 0 absent). A
/// handle that names no table, or bytes outside the plugin's memory, trap.
pub const TABLE_NONE: i32 = -1;
pub const TABLE_FULL: i32 = -2;
pub const TABLE_TOO_LONG: i32 = -3;
/// The longest key and value.
pub const TABLE_KEY_MAX: usize = 64;
pub const TABLE_VALUE_MAX: usize = 1024;

/// A process plugin (`plugin.process`) shares a file of memory with pearld, named by the
/// environment variable `PEARL_PLUGIN_SHM` (its `plugin.config` as JSON is in
/// `PEARL_PLUGIN_CONFIG`): a control block of `PROCESS_CONTROL_LEN` bytes, then a batch area of
/// `PROCESS_AREA_SIZE` bytes laid out as above (offsets in descriptors count from the area's
/// start). The control block's u32 words: the process writes its pid at `CTL_ATTACHED` once it
/// has mapped the file; pearld writes a batch's frame count at `CTL_COUNT` and then increments
/// `CTL_REQUEST`; the process decides the batch and sets `CTL_DONE` to `CTL_REQUEST`'s value.
/// Both wait on and wake the other's word with futex(2).
pub const PROCESS_CONTROL_LEN: usize = 4096;
pub const PROCESS_AREA_SIZE: usize = 1 << 20;
pub const CTL_REQUEST: usize = 0;
pub const CTL_DONE: usize = 4;
pub const CTL_COUNT: usize = 8;
pub const CTL_ATTACHED: usize = 12;

/// A process plugin calls pearld for what a WebAssembly plugin imports (routes, tables) through
/// the same control block: it writes the call's operation (u32, `CALL_ROUTE_V4`...) at
/// `CALL_OP` and its five i32 arguments at `CALL_ARGS`, the bytes the call reads into the
/// `CALL_DATA_LEN` bytes at `CALL_DATA` (an argument that points at bytes is an offset into
/// them, and so are the places answers go), then increments `CTL_CALL`, increments `CTL_EVENT`
/// and wakes it. pearld answers while it waits for a batch: the answer (i32) at `CALL_ANSWER`,
/// bytes where the arguments said, then `CTL_ANSWERED` set to `CTL_CALL`'s value and woken. A
/// process also increments and wakes `CTL_EVENT` after setting `CTL_DONE`: pearld waits on that
/// one word for both. A call pearld cannot make sense of (an unknown operation, offsets outside
/// the call's bytes, no such table) is answered `CALL_REFUSED`. Each call is a round trip
/// between two processes, inside the batch's time: look routes up by the batch
/// (`CALL_ROUTE_V4_BATCH`, `CALL_BATCH` addresses a call).
pub const CTL_CALL: usize = 16;
pub const CTL_ANSWERED: usize = 20;
pub const CTL_EVENT: usize = 24;
pub const CALL_OP: usize = 64;
pub const CALL_ARGS: usize = 68;
pub const CALL_ANSWER: usize = 88;
pub const CALL_DATA: usize = 128;
pub const CALL_DATA_LEN: usize = PROCESS_CONTROL_LEN - CALL_DATA;
/// `(addr, out)`: as the `route_v4` import.
pub const CALL_ROUTE_V4: u32 = 1;
/// `(addr, out)`: as `route_v6`, the address's 16 bytes at `addr`.
pub const CALL_ROUTE_V6: u32 = 2;
/// `(addrs, count, out)`: as `route_v4_batch`, at most `CALL_BATCH` addresses (u32, little-endian).
pub const CALL_ROUTE_V4_BATCH: u32 = 3;
/// `(name, name_len)`, `(table, key, key_len, out, cap)`, `(table, key, key_len, value,
/// value_len)`, `(table, key, key_len)`: as the table imports.
pub const CALL_TABLE_FIND: u32 = 4;
pub const CALL_TABLE_GET: u32 = 5;
pub const CALL_TABLE_SET: u32 = 6;
pub const CALL_TABLE_REMOVE: u32 = 7;
pub const CALL_REFUSED: i32 = -100;
pub const CALL_BATCH: usize = 128;
/// Where the SDKs put a table call's key (at 0 of the call's bytes, at most this long) and its
/// value, or the room for one (from here on).
pub const CALL_KEY_ROOM: usize = 256;
