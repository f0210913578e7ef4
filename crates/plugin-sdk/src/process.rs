//! Run the same plugin natively, as a process plugin (`plugin.process`): `serve` maps the
//! memory pearld shares with the process (`PEARL_PLUGIN_SHM`) and calls `process` with each
//! batch pearld posts, waiting for the next with futex(2). A binary of the plugin's crate:
//!
//! ```ignore
//! fn main() {
//!     std::process::exit(pearl_plugin_sdk::process::serve(my_plugin::process));
//! }
//! ```
//!
//! Routes and tables (`route_v4`, `Table`...) work as in a WebAssembly plugin: each is a call
//! to pearld through the shared memory (`calls.rs`), answered while pearld waits for the
//! batch, so look routes up by the batch (`route_v4_batch`).

extern crate std;

pub(crate) mod calls;

use crate::abi::{CTL_ATTACHED, CTL_COUNT, CTL_DONE, CTL_EVENT, CTL_REQUEST, PROCESS_AREA_SIZE, PROCESS_CONTROL_LEN};
use crate::Batch;
use core::sync::atomic::{AtomicU32, Ordering};
use std::os::fd::AsRawFd;

/// Serves batches until the process is killed; returns an exit code if the shared memory
/// cannot be mapped.
pub fn serve(process: fn(&mut Batch)) -> i32 {
    let Some(path) = std::env::var_os("PEARL_PLUGIN_SHM") else {
        std::eprintln!("PEARL_PLUGIN_SHM is not set: pearld starts a process plugin");
        return 2;
    };
    let file = match std::fs::OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) => {
            std::eprintln!("{}: {e}", path.to_string_lossy());
            return 2;
        }
    };
    let len = PROCESS_CONTROL_LEN + PROCESS_AREA_SIZE;
    // SAFETY: a shared mapping of the file pearld sized to `len`.
    let base = unsafe { libc::mmap(core::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    if base == libc::MAP_FAILED {
        std::eprintln!("mmap: {}", std::io::Error::last_os_error());
        return 2;
    }
    let base = base.cast::<u8>();
    // SAFETY: the control words are inside the mapping, 4-aligned.
    let word = |at: usize| unsafe { &*base.add(at).cast::<AtomicU32>() };
    calls::attach(base);
    word(CTL_ATTACHED).store(std::process::id(), Ordering::Release);
    let mut seen = word(CTL_REQUEST).load(Ordering::Acquire);
    loop {
        let request = word(CTL_REQUEST).load(Ordering::Acquire);
        if request == seen {
            futex(word(CTL_REQUEST), libc::FUTEX_WAIT, seen);
            continue;
        }
        let count = word(CTL_COUNT).load(Ordering::Relaxed) as usize;
        // SAFETY: the batch area follows the control block; pearld leaves it alone until the
        // batch is answered.
        let area = unsafe { core::slice::from_raw_parts_mut(base.add(PROCESS_CONTROL_LEN), PROCESS_AREA_SIZE) };
        process(&mut Batch::new(area, count));
        seen = request;
        word(CTL_DONE).store(request, Ordering::Release);
        word(CTL_EVENT).fetch_add(1, Ordering::Release);
        futex(word(CTL_EVENT), libc::FUTEX_WAKE, 1);
    }
}

fn futex(word: &AtomicU32, op: libc::c_int, value: u32) {
    // SAFETY: futex(2) on a word of the shared mapping (not private: pearld is another process).
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), op, value, core::ptr::null::<libc::timespec>()) };
}
