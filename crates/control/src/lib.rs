//! PEARL's desired state: the YAML configuration `pearld --config FILE` runs from, parsed and
//! validated whole before anything is created. Every error names the offending field.

mod access;
mod allocator;
mod api_tls;
mod at;
mod config_diff;
mod control_plane;
mod distribution;
mod document;
mod error;
mod fields;
pub mod grammar;
mod impair;
mod indexed_edit;
mod leak;
mod matches;
mod model;
mod nat;
#[cfg(test)]
mod one_vr_fixture;
mod parse;
mod placement;
mod plugin;
mod resources;
mod slice_alloc;
mod tree;
mod values;
mod vr_index;
mod vr_pairs;
mod yaml_out;

pub use access::{Access, Holder, DEFAULT_OWNER_RATE, TOKEN_LENGTH};
pub use allocator::{Allocator, Engine, Pool, Revision};
pub use api_tls::ApiTls;
pub use config_diff::{ConfigDiff, VrChange};
pub use document::{config_from_document, config_from_document_since, document_from_yaml, Unchanged, VrEdit};
pub use error::ConfigError;
pub use indexed_edit::config_after_vr_edit;
pub use matches::DEFAULT_MATCH_PRIORITY;
pub use model::*;
pub use nat::nat_ports_text;
pub use parse::{parse_config, parse_config_in};
pub use placement::replace_auto;
pub use resources::{admit, granted};
pub use slice_alloc::{Slice, Slices, WORKER_PPS};
pub use vr_index::VrIndex;
pub use yaml_out::document_to_yaml;
