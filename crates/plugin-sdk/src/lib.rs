//! Write a PEARL plugin VR in Rust. A plugin is a WebAssembly module (`wasm32-unknown-unknown`,
//! `crate-type = ["cdylib"]`) that pearld runs in the data plane: it receives the VR's frames
//! in batches and decides each one (send out of one of the VR's interfaces, as rewritten; hand
//! to the VR's kernel; drop). `docs/PLUGINS.md` describes the interface byte by byte; [`abi`]
//! is that description as constants, which pearld's host reads too. With the `process`
//! feature, [`process::serve`] runs the same plugin natively as a process plugin.
//!
//! ```ignore
//! pearl_plugin_sdk::plugin!(262144, process);
//!
//! fn process(batch: &mut pearl_plugin_sdk::Batch) {
//!     for i in 0..batch.len() {
//!         let mut frame = batch.frame(i);
//!         let out = 1 - frame.interface();
//!         frame.send(out);
//!     }
//! }
//! ```
#![no_std]

pub mod abi;
mod batch;
#[cfg(any(target_arch = "wasm32", feature = "process"))]
mod fib;
#[cfg(any(target_arch = "wasm32", feature = "process"))]
mod host;
#[cfg(feature = "process")]
pub mod process;
#[cfg(any(target_arch = "wasm32", feature = "process"))]
mod table;

pub use batch::{Batch, Frame};
#[cfg(any(target_arch = "wasm32", feature = "process"))]
pub use fib::{route_v4, route_v4_batch, route_v6, Route};
#[cfg(any(target_arch = "wasm32", feature = "process"))]
pub use table::{SetError, Table};

/// Declares the plugin's batch area (`size` bytes of its memory, where pearld writes each batch)
/// and its entry points: `pearl_process` calls `process` with each batch. An optional
/// `init = f` is called once per start with `plugin.config` as JSON text; `f` returns `true`
/// to accept it.
#[macro_export]
macro_rules! plugin {
    ($size:expr, $process:path $(, init = $init:path)?) => {
        #[repr(align(16))]
        struct PearlArea(::core::cell::UnsafeCell<[u8; $size]>);
        // SAFETY: one batch at a time: pearld calls a plugin from one thread at a time.
        unsafe impl Sync for PearlArea {}
        static PEARL_AREA: PearlArea = PearlArea(::core::cell::UnsafeCell::new([0; $size]));

        #[no_mangle]
        pub extern "C" fn pearl_area() -> i32 {
            PEARL_AREA.0.get() as i32
        }

        #[no_mangle]
        pub extern "C" fn pearl_area_size() -> i32 {
            $size as i32
        }

        #[no_mangle]
        pub extern "C" fn pearl_process(count: i32) {
            // Safety: pearld wrote the batch into the area and waits for this call to return.
            let area = unsafe { &mut *PEARL_AREA.0.get() };
            let mut batch = $crate::Batch::new(area, count as usize);
            $process(&mut batch);
        }

        $(
            #[no_mangle]
            pub extern "C" fn pearl_init(ptr: i32, len: i32) -> i32 {
                // Safety: pearld wrote `len` bytes of JSON at `ptr`, inside the area.
                let text = unsafe { ::core::slice::from_raw_parts(ptr as *const u8, len as usize) };
                match ::core::str::from_utf8(text) {
                    Ok(config) if $init(config) => 0,
                    _ => 1,
                }
            }
        )?
    };
}
