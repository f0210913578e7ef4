//! How a plugin calls pearld for routes and tables: in a WebAssembly plugin, imports of module
//! `pearl`; in a process plugin (`process` feature, built natively), requests through the
//! memory it shares with pearld (`process::calls`), with the same signatures.

#[cfg(target_arch = "wasm32")]
#[link(wasm_import_module = "pearl")]
extern "C" {
    #[link_name = "route_v4"]
    pub(crate) fn pearl_route_v4(addr: i32, out: *mut u8) -> i32;
    #[link_name = "route_v4_batch"]
    pub(crate) fn pearl_route_v4_batch(addrs: *const u32, count: i32, out: *mut u8);
    #[link_name = "route_v6"]
    pub(crate) fn pearl_route_v6(addr: *const u8, out: *mut u8) -> i32;
    #[link_name = "table_find"]
    pub(crate) fn pearl_table_find(name: *const u8, name_len: i32) -> i32;
    #[link_name = "table_get"]
    pub(crate) fn pearl_table_get(table: i32, key: *const u8, key_len: i32, out: *mut u8, cap: i32) -> i32;
    #[link_name = "table_set"]
    pub(crate) fn pearl_table_set(table: i32, key: *const u8, key_len: i32, value: *const u8, value_len: i32) -> i32;
    #[link_name = "table_remove"]
    pub(crate) fn pearl_table_remove(table: i32, key: *const u8, key_len: i32) -> i32;
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use crate::process::calls::{
    pearl_route_v4, pearl_route_v4_batch, pearl_route_v6, pearl_table_find, pearl_table_get, pearl_table_remove, pearl_table_set,
};
