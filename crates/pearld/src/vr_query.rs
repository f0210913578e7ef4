//! Which VRs a listing holds: `GET /v1/vrs` and `GET /v1/stats` take `name` (part of the VR's
//! name, in any case), `kind`, `sort` (`id`, `name` or `busiest`), `offset` and `limit`, so a
//! node of thousands of VRs can be searched and paged. The answer's `vrs_total` counts the VRs
//! that matched before `offset` and `limit` cut the page.

use crate::activity::Activity;
use crate::router::{Call, Caller, Param, Place};
use pearl_control::VrConfig;
use serde_json::{json, Value};
use std::sync::Arc;

pub const PARAMS: &[Param] = &[
    Param { name: "name", description: "Only VRs whose name contains this text (in any case)", schema: name_part, place: Place::Query },
    Param { name: "kind", description: "Only VRs of this kind", schema: kind, place: Place::Query },
    Param {
        name: "sort",
        description:
            "The order: by id, by name, or busiest first (packets received per second over the last second); by default the configuration's",
        schema: sort,
        place: Place::Query,
    },
    Param { name: "offset", description: "Skip this many of the matching VRs", schema: offset, place: Place::Query },
    Param { name: "limit", description: "At most this many VRs", schema: limit, place: Place::Query },
];

fn name_part() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64, "example": "red"})
}

fn kind() -> Value {
    json!({"type": "string", "enum": ["fast", "kernel", "shared", "plugin"], "example": "fast"})
}

fn sort() -> Value {
    json!({"type": "string", "enum": ["id", "name", "busiest"], "example": "busiest"})
}

fn offset() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": 1_000_000, "example": 0})
}

fn limit() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 1_000_000, "example": 50})
}

pub struct VrQuery {
    name: Option<String>,
    kind: Option<String>,
    /// `None`: as the node holds them (the configuration's order).
    sort: Option<String>,
    offset: usize,
    limit: Option<usize>,
}

/// The page of VRs a query selects, and how many matched in all.
pub struct Selected<'a> {
    pub vrs: Vec<&'a VrConfig>,
    pub total: usize,
}

impl VrQuery {
    /// The query of a call to an endpoint that declares [`PARAMS`] (already checked).
    pub fn of(call: &Call) -> VrQuery {
        let text = |n: &str| call.param(n).as_str().map(str::to_string);
        let number = |n: &str| call.param(n).as_u64().map(|v| v as usize);
        VrQuery {
            name: text("name").map(|t| t.to_lowercase()),
            kind: text("kind"),
            sort: text("sort"),
            offset: number("offset").unwrap_or(0),
            limit: number("limit"),
        }
    }

    /// Every VR: what a listing without a query holds.
    pub fn all() -> VrQuery {
        VrQuery { name: None, kind: None, sort: None, offset: 0, limit: None }
    }

    /// The VRs of `vrs` the caller sees and the query matches, in its order, paged.
    pub fn select<'a>(
        &self,
        vrs: &'a [Arc<VrConfig>],
        caller: &Caller,
        activity: &Activity,
        received: impl Fn(u16) -> u64,
    ) -> Selected<'a> {
        let mut matched: Vec<&VrConfig> = vrs
            .iter()
            .filter(|v| caller.sees(&v.name))
            .filter(|v| self.name.as_ref().is_none_or(|part| v.name.to_lowercase().contains(part)))
            .filter(|v| self.kind.as_ref().is_none_or(|k| v.kind.name() == k))
            .map(|v| &**v)
            .collect();
        match self.sort.as_deref().unwrap_or_default() {
            "name" => matched.sort_by(|a, b| a.name.cmp(&b.name)),
            "busiest" => {
                let ids: Vec<u16> = matched.iter().map(|v| v.id).collect();
                let ranks = activity.ranks(&ids, received);
                let mut ranked: Vec<(f64, &VrConfig)> = ranks.into_iter().zip(matched).collect();
                // Stable: equally busy VRs stay in id order.
                ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
                matched = ranked.into_iter().map(|(_, v)| v).collect();
            }
            "id" => matched.sort_by_key(|v| v.id),
            _ => {}
        }
        let total = matched.len();
        let vrs = matched.into_iter().skip(self.offset).take(self.limit.unwrap_or(usize::MAX)).collect();
        Selected { vrs, total }
    }
}
