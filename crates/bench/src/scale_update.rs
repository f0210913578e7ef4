//! Changing a node of N VRs (issue 15: a VR created at run time within 20 ms): the median time
//! of `Dataplane::update` adding one VR to N, and of removing it again, each handed the diff of
//! whole configurations as pearld hands it. The VRs are `scale_forwarding`'s on idle memory ports, and
//! two workers, so that what is built per worker shows. What a change replaced is dropped
//! outside the timed call, as pearld drops it off its request path; that time is its own figure.

use crate::report::median;
use crate::scale_forwarding;
use pearl_control::{Config, ConfigDiff};
use pearl_dataplane::dataplane::Dataplane;
use pearl_dataplane::port::{MemoryPort, Port};
use std::sync::Arc;
use std::time::Instant;

const WORKERS: usize = 2;

/// Medians over the repeats, in milliseconds.
pub struct Changes {
    pub add_ms: f64,
    pub remove_ms: f64,
    /// Dropping what a change replaced (the old plans and layout).
    pub drop_ms: f64,
}

/// `repeat` times: one VR added to `vrs`, then removed.
pub fn timed(vrs: usize, repeat: usize) -> Result<Changes, String> {
    let with_workers = |n| {
        let mut c = scale_forwarding::config(n);
        c.workers = WORKERS;
        Arc::new(c)
    };
    // pearld hands the VRs a change leaves alone over by pointer (`Config.vrs` holds `Arc`s
    // shared by the configurations before and after), and so does this.
    let base = with_workers(vrs);
    let grown = {
        let mut c = (*base).clone();
        c.vrs.push(Arc::clone(with_workers(vrs + 1).vrs.last().expect("one VR more")));
        Arc::new(c)
    };
    let (dataplane, _slow_path) =
        Dataplane::start(&base, |_p, _w, _pool| -> Result<Box<dyn Port>, _> { Ok(Box::new(MemoryPort::new(Vec::<Vec<u8>>::new()))) })
            .map_err(|e| e.to_string())?;
    let (mut adds, mut removes, mut drops) = (Vec::new(), Vec::new(), Vec::new());
    let mut change = |to: &Arc<Config>, times: &mut Vec<f64>| -> Result<(), String> {
        let t = Instant::now();
        let replaced = dataplane.update(&ConfigDiff::between(&dataplane.layout().config, to)).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        drop(replaced);
        drops.push(t.elapsed().as_secs_f64() * 1e3);
        Ok(())
    };
    for _ in 0..repeat {
        change(&grown, &mut adds)?;
        change(&base, &mut removes)?;
    }
    dataplane.stop();
    Ok(Changes { add_ms: median(adds), remove_ms: median(removes), drop_ms: median(drops) })
}
