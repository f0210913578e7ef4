//! Lost notifications against a real kernel (needs root). A process of its own: the one
//! notification socket all VRs share takes its buffer from the first VR started, here 4 KiB.

mod common;

use common::{glean, Vr};

#[test]
fn lost_notifications_are_recovered_by_a_resync() {
    let mut vr = Vr::new("h", 1);
    vr.start_with(1, pearl_routed::Options { rcvbuf: 4096 });
    let batch = std::env::temp_dir().join(format!("{}.batch", vr.name));
    let lines: String = (0..20_000u32).map(|i| format!("route add 10.{}.{}.0/24 via 10.0.0.2\n", 100 + i / 256, i % 256)).collect();
    std::fs::write(&batch, lines).unwrap();
    vr.ip(&format!("-batch {}", batch.display()));
    let _ = std::fs::remove_file(&batch);
    let s = vr.wait_stats(30, |s| s.kernel_routes_v4 >= 20_000 && s.routes_v4 >= 20_000);
    assert!(s.resyncs >= 1, "a 4 KiB buffer should have overflowed: {s:?}");
    vr.expect("10.177.255.1", glean(0));
}
