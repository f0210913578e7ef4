//! Runtime changes through the API: each handler edits the desired-state document the way an
//! operator would edit the YAML file (`Node::change` validates the result whole,
//! stores it, applies it, and refuses with nothing changed at the first problem).

use crate::api_error::ApiError;
use crate::audit;
use crate::ctx::Ctx;
use crate::desired::{carry_ids, vr_index, ChangeError, Edit};
use crate::http::Response;
use crate::models::deleted::Deleted;
use crate::models::impairment::ImpairReply;
use crate::router::{Call, Caller};
use pearl_control::MAX_SHARE;
use serde_json::{json, Value};

/// The keys of a VR that `PATCH /v1/vrs/{name}` may set.
pub use pearl_control::SETTABLE_VR_KEYS as SETTABLE;

pub fn config_get(ctx: &Ctx, _: &Call) -> Result<Response, ApiError> {
    Ok(Response::json(200, &*ctx.node.document()))
}

pub fn config_put(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let mut new = call.body().clone();
    call.touch(audit::touched(&ctx.node.document(), &new));
    let doc = ctx.node.change(Edit::Whole(Box::new(|doc| {
        carry_ids(doc, &mut new);
        *doc = new;
        Ok(())
    })))?;
    Ok(Response::json(200, &*doc))
}

pub fn vr_create(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let vr = call.body().clone();
    let name = vr["name"].as_str().unwrap_or_default().to_string();
    ctx.node.change(Edit::AddVr(vr))?;
    vr_reply(ctx, &name, 201)
}

pub fn vr_delete(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = name_of(call);
    ctx.node.change(Edit::RemoveVr(&name))?;
    Ok(Response::json(200, &Deleted { deleted: name }))
}

pub fn vr_patch(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = name_of(call);
    let patch = call.body().as_object().cloned().unwrap_or_default();
    let reload = patch.contains_key("control_plane").then_some(name.as_str());
    let edit = |vr: &mut Value| {
        for (k, v) in patch {
            if !SETTABLE.contains(&k.as_str()) {
                return Err(ChangeError::BadRequest {
                    field: k.clone(),
                    message: format!("cannot be set on a running VR (settable: {}); delete and create the VR instead", SETTABLE.join(", ")),
                });
            }
            if k == "queues" {
                keep_owner_share(ctx, call, vr);
            }
            if k == "placement" {
                crate::migrate::set_placement(vr, v);
                continue;
            }
            vr[k] = v;
        }
        Ok(())
    };
    ctx.node.change_reloading(reload, Edit::Vr(&name, Box::new(edit)))?;
    vr_reply(ctx, &name, 200)
}

/// A VR's owner may re-weight its queues but not raise its VR's share of its ports (the
/// operator's to give): before an owner first changes the queues of a VR without
/// `limits.share`, the share their weights gave it is kept there.
fn keep_owner_share(ctx: &Ctx, call: &Call, entry: &mut Value) {
    let Caller::Owner(name) = call.caller() else { return };
    let Some((_, vr)) = ctx.node.vr_named(name) else { return };
    if vr.limits.share.is_some() {
        return;
    }
    let limits = &mut entry["limits"];
    if !limits.is_object() {
        *limits = json!({});
    }
    limits["share"] = vr.port_share().min(MAX_SHARE).into();
}

/// Appends the body to one of a VR's lists (`routes`, `match`).
pub fn list_add(ctx: &Ctx, call: &Call, key: &str) -> Result<Response, ApiError> {
    let name = name_of(call);
    let item = call.body().clone();
    let doc = ctx.node.change(Edit::Vr(
        &name,
        Box::new(|vr| {
            let list = &mut vr[key];
            if !list.is_array() {
                *list = json!([]);
            }
            list.as_array_mut().expect("array").push(item);
            Ok(())
        }),
    ))?;
    let i = vr_index(&doc, &name).map_err(ApiError::from)?;
    Ok(Response::json(201, &json!({ key: doc["vrs"][i][key] })))
}

pub fn list_get(ctx: &Ctx, call: &Call, key: &str) -> Result<Response, ApiError> {
    let name = name_of(call);
    let doc = ctx.node.document();
    let i = vr_index(&doc, &name).map_err(ApiError::from)?;
    let list = if doc["vrs"][i][key].is_array() { doc["vrs"][i][key].clone() } else { json!([]) };
    Ok(Response::json(200, &json!({ key: list })))
}

/// Removes the entries of a VR's list that `matches` (position, entry) picks; 404 if none does.
pub fn list_remove(ctx: &Ctx, call: &Call, key: &str, what: &str, matches: impl Fn(usize, &Value) -> bool) -> Result<Response, ApiError> {
    let name = name_of(call);
    let edit = |vr: &mut Value| {
        let list = vr[key].as_array_mut();
        let before = list.as_ref().map_or(0, |l| l.len());
        let kept: Vec<Value> =
            list.map(|l| l.drain(..).enumerate().filter(|(i, v)| !matches(*i, v)).map(|(_, v)| v).collect()).unwrap_or_default();
        if kept.len() == before {
            return Err(ChangeError::NotFound(format!("VR {name:?} has no {what}")));
        }
        vr[key] = Value::Array(kept);
        Ok(())
    };
    ctx.node.change(Edit::Vr(&name, Box::new(edit)))?;
    Ok(Response::json(200, &Deleted { deleted: what.to_string() }))
}

/// Replaces one key of a VR (`queues`, `limits`).
pub fn vr_set(ctx: &Ctx, call: &Call, key: &str) -> Result<Response, ApiError> {
    let name = name_of(call);
    let value = call.body().clone();
    let doc = ctx.node.change(Edit::Vr(
        &name,
        Box::new(|vr| {
            if key == "queues" {
                keep_owner_share(ctx, call, vr);
            }
            vr[key] = value;
            Ok(())
        }),
    ))?;
    let i = vr_index(&doc, &name).map_err(ApiError::from)?;
    Ok(Response::json(200, &json!({ key: doc["vrs"][i][key] })))
}

/// Sets (or with `{}` lifts) the `impair:` of one of a VR's interfaces; it takes effect between
/// two batches, the packets its link holds kept.
pub fn impair_put(ctx: &Ctx, call: &Call) -> Result<Response, ApiError> {
    let name = name_of(call);
    let interface = call.param("interface").as_str().unwrap_or_default().to_string();
    let value = call.body().clone();
    if !value.is_object() {
        return Err(ApiError::from(ChangeError::BadRequest { field: "impair".into(), message: "expected an object".into() }));
    }
    let edit = |vr: &mut Value| {
        let j = vr["interfaces"]
            .as_array()
            .and_then(|l| l.iter().position(|f| f["name"] == interface.as_str()))
            .ok_or_else(|| ChangeError::NotFound(format!("VR {name:?} has no interface {interface:?}")))?;
        let iface = vr["interfaces"][j].as_object_mut().expect("an interface is an object");
        if value.as_object().is_some_and(|o| o.is_empty()) {
            iface.remove("impair");
        } else {
            iface.insert("impair".into(), value);
        }
        Ok(())
    };
    ctx.node.change(Edit::Vr(&name, Box::new(edit)))?;
    let vr = crate::vrs::find(&ctx.node, &name).ok_or_else(|| ApiError::not_found("name", format!("no VR named {name:?}")))?;
    let impair = vr.interfaces.into_iter().find(|f| f.name == interface).map(|f| f.impair).unwrap_or_default();
    Ok(Response::json(200, &ImpairReply { interface, impair }))
}

pub fn name_of(call: &Call) -> String {
    call.param("name").as_str().unwrap_or_default().to_string()
}

fn vr_reply(ctx: &Ctx, name: &str, status: u16) -> Result<Response, ApiError> {
    let vr = crate::vrs::find(&ctx.node, name).ok_or_else(|| ApiError::not_found("name", format!("no VR named {name:?}")))?;
    Ok(Response::json(status, &vr))
}

impl From<ChangeError> for ApiError {
    fn from(e: ChangeError) -> ApiError {
        match e {
            ChangeError::BadRequest { field, message } => ApiError::new(400, Some(&field), message),
            ChangeError::Invalid(c) => ApiError::new(422, Some(&c.path), c.to_string()),
            ChangeError::NotFound(m) => ApiError::new(404, None, m),
            ChangeError::Conflict(m) => ApiError::new(409, None, m),
            ChangeError::Storage(m) => ApiError::new(503, None, format!("the desired state cannot be stored: {m}")),
            e @ ChangeError::Panicked(_) => ApiError::new(500, None, e.to_string()),
        }
    }
}
