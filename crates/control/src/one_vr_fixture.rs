//! Tests' VRs made from one parsed VR: each of its own allocation, as configurations built by
//! hand or edited through the API hold them.

use crate::model::{Config, VrConfig};
use std::sync::Arc;

const ONE_VR: &str = r#"
ports: [{name: p0, interface: pe0}]
vrs: [{name: red, interfaces: [{name: eth0, port: p0, mac: "02:00:00:00:01:00", addresses: [10.1.0.1/24]}]}]
"#;

thread_local! {
    static TEMPLATE: Config = crate::parse::parse_config_in(ONE_VR, std::path::Path::new(".")).unwrap();
}

/// A VR with id `id`, named `vr{id}`.
pub fn vr(id: u16) -> Arc<VrConfig> {
    let mut v = TEMPLATE.with(|t| t.vrs[0].as_ref().clone());
    (v.id, v.name) = (id, format!("vr{id}"));
    Arc::new(v)
}

/// The template's configuration holding `vrs`.
pub fn config(vrs: Vec<Arc<VrConfig>>) -> Arc<Config> {
    Arc::new(Config { vrs, ..TEMPLATE.with(Config::without_vrs) })
}
