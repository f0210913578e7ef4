//! The API's response bodies as types. Handlers fill one and serialise it, and `schemas` hands
//! the OpenAPI document the schema generated from it, so a field added to a body is documented by
//! construction and schemathesis holds the two together.
//!
//! Conventions: every struct denies unknown fields (its schema says `additionalProperties:
//! false`); a field that is sometimes left out is an `Option` skipped when `None` (not required);
//! one that is sent as null is a plain `Option` (required, `nullable`).

pub mod amounts;
pub mod counts;
pub mod deleted;
pub mod error;
pub mod errors;
pub mod fib;
pub mod health;
pub mod impairment;
pub mod migrated;
pub mod net;
pub mod node;
pub mod resources;
mod schema;
pub mod stats;
pub mod stopping;
pub mod tables;
pub mod vr;
pub mod vr_health;
pub mod vr_kind;
pub mod vr_options;

pub use schema::{grammar_of, schema_of};
