//! What a starting pearld finds of PEARL's VRs: namespaces of the VRs it is to run are PEARL's
//! own or refused (`owned.rs`); PEARL's VRs that an earlier pearld left running (live restore)
//! and the desired state no longer has are removed, all of what PEARL made for them (the
//! registry says what that was).

use crate::holder::Holder;
use crate::owned::Owned;
use crate::vmm;
use pearl_control::{Config, ConfigError, VrConfig};
use pearl_vrproc::{Bird, Cgroup, Frr, OwnProgram, Suite};
use std::sync::Arc;

/// Refuses the first VR of `vrs` that would be made (not in `running`) whose name is a
/// namespace PEARL did not make, naming its `vrs[N].name`.
pub fn refuse_foreign_namespaces(owned: &Owned, vrs: &[Arc<VrConfig>], running: &[Arc<VrConfig>]) -> Result<(), ConfigError> {
    for (n, vr) in vrs.iter().enumerate().filter(|(_, v)| !running.iter().any(|r| r.name == v.name)) {
        owned.check_free(&vr.name).map_err(|e| ConfigError::at(format!("vrs[{n}].name"), e.to_string()))?;
    }
    Ok(())
}

/// Removes the VRs PEARL left running that `config` does not have: their processes (by
/// their cgroup, then whatever is in their namespace), namespace, TAPs, and their control
/// plane's files and log.
pub fn remove_leftovers(config: &Config, holder: &Holder, owned: &Owned) {
    for (name, entry) in owned.live().into_iter().filter(|(n, _)| !config.vrs.iter().any(|v| &v.name == n)) {
        tracing::info!("removing VR {name}, left running by an earlier pearld and no longer in the desired state");
        match Cgroup::create(&name, pearl_control::DEFAULT_CPU_PERCENT, pearl_control::DEFAULT_MEMORY_MB << 20).and_then(Cgroup::remove) {
            Ok(()) => {}
            Err(e) => tracing::warn!(vr = %name, "removing its cgroup: {e}"),
        }
        if let Some(suite) = suite_named(&entry.suite, &name) {
            let removed = suite.remove().and_then(|()| match std::fs::remove_file(suite.log()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            });
            if let Err(e) = removed {
                tracing::warn!(vr = %name, "removing its {} files: {e}", entry.suite);
            }
        }
        vmm::remove_namespace(&name, &entry.interfaces, holder, owned);
    }
}

/// VR `vr`'s suite of kind `kind` as far as its files go (where they are depends on the VR's
/// name alone).
fn suite_named(kind: &str, vr: &str) -> Option<Box<dyn Suite>> {
    let nowhere = std::path::Path::new("");
    Some(match kind {
        "frr" => Box::new(Frr::new::<&str>(vr, &[], nowhere)),
        "bird" => Box::new(Bird::new(vr, nowhere)),
        "command" => Box::new(OwnProgram::new(vr, &[], nowhere)),
        _ => return None,
    })
}
