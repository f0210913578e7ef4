//! Moving a VR between the fast path and its kernel (`POST /v1/vrs/{name}/migrate`,
//! `pearlctl vr migrate`): a change of its `placement:` like any other, which the node carries
//! out in place (`Node::update`): the namespace, addresses, daemons and sessions stay; the
//! data plane's next plan, published between two batches, forwards the VR's packets the other
//! way. Its fast-path tables are kept in sync while it is in the kernel, so going back to the
//! fast path waits for nothing.

use crate::api_error::ApiError;
use crate::ctx::Ctx;
use crate::desired::Edit;
use crate::http::Response;
use crate::models::migrated::Migrated;
use crate::router::Call;
use serde_json::Value;
use std::time::Instant;

pub fn vr_migrate(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = call.param("name").as_str().unwrap_or_default().to_string();
    let to = call.body()["to"].as_str().unwrap_or_default().to_string();
    let (_, vr) = ctx.node.vr_named(&name).ok_or_else(|| ApiError::not_found("name", format!("no VR named {name:?}")))?;
    if !vr.kind.is_placed() {
        return Err(ApiError::new(409, Some("to"), format!("VR {name:?} is a {} VR: only fast and kernel VRs move", vr.kind.name())));
    }
    let from = vr.kind.name();
    let started = Instant::now();
    ctx.node.change(Edit::Vr(
        &name,
        Box::new(|vr| {
            set_placement(vr, Value::from(to.as_str()));
            Ok(())
        }),
    ))?;
    let duration_ms = started.elapsed().as_secs_f64() * 1e3;
    let now = crate::vrs::find(&ctx.node, &name).ok_or_else(|| ApiError::not_found("name", format!("no VR named {name:?}")))?;
    tracing::info!(vr = %name, "moved from the {from} data plane to the {to} one in {duration_ms:.1} ms");
    let duration_ms = (duration_ms * 1000.0).round() / 1000.0;
    Ok(Response::json(200, &Migrated { vr: now, from: from.to_string(), to, duration_ms }))
}

/// Sets a VR's `placement:` in the document; a `kind: fast` or `kind: kernel` beside it, which
/// states a placement too, goes, so that the two cannot contradict each other.
pub fn set_placement(vr: &mut Value, placement: Value) {
    if let Some(o) = vr.as_object_mut() {
        if matches!(o.get("kind").and_then(Value::as_str), Some("fast" | "kernel")) {
            o.remove("kind");
        }
        o.insert("placement".into(), placement);
    }
}

#[cfg(test)]
mod tests {
    use super::set_placement;
    use serde_json::json;

    #[test]
    fn a_placement_replaces_the_kind_that_stated_one_and_only_that() {
        let mut vr = json!({"name": "red", "kind": "kernel"});
        set_placement(&mut vr, "fast".into());
        assert_eq!(vr, json!({"name": "red", "placement": "fast"}));
        let mut shared = json!({"name": "blue", "kind": "shared"});
        set_placement(&mut shared, "auto".into());
        assert_eq!(shared, json!({"name": "blue", "kind": "shared", "placement": "auto"}), "left for the parser to refuse by field");
    }
}
