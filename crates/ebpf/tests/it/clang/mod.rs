//! The example XDP programs built as a user builds them, with clang for the BPF target.

use std::path::Path;
use std::process::Command;

/// The object file of `examples/xdp/NAME.c`.
pub fn build(name: &str) -> Vec<u8> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp").join(format!("{name}.c"));
    // One file per build: tests running at once may build the same example.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("pearl-ebpf-test-{}-{n}-{name}.o", std::process::id()));
    let arch = String::from_utf8(Command::new("gcc").arg("-dumpmachine").output().expect("gcc").stdout).unwrap();
    let done = Command::new("clang")
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-I/usr/include/{}", arch.trim()))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("clang (scripts/setup.sh installs it)");
    assert!(done.status.success(), "clang: {}", String::from_utf8_lossy(&done.stderr));
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    bytes
}
