//! PEARL's desired state: the YAML configuration `pearld --config FILE` runs from, parsed and
//! validated whole before anything is created. Every error names the offending field.
//!
//! ## In detail
//!
//! `parse_config(text)` turns YAML into a resolved `Config` (ports, VRs with interfaces, routes,
//! neighbours, match rules, queues, limits) or one `ConfigError` whose path names the field
//! (`vrs[1].interfaces[0].mac: duplicate of vrs[0].interfaces[0].mac`). References become indices.
//! The grammar is types: `grammar/` (one small file per section, serde `Deserialize` and schemars
//! `JsonSchema`, unknown keys denied, doc comments as the schema's descriptions) says what each key
//! takes and in which forms (`{value, mask}` or an integer, a port range as text or a number: custom
//! visitors in `grammar/forms.rs`). A document, the YAML tree as JSON (`document.rs`; the file takes the
//! same way), is read into them first (`grammar/read.rs`, `serde_path_to_error`: a value that does not
//! fit is refused naming its path, in the configuration's words), then the semantic checks (ranges,
//! uniqueness, references, files) turn the typed spec into the model, naming paths with `at.rs`'s
//! borrowed chain, spelt out only for an error. The VR list is read entry by entry, so that a change
//! validated since a running configuration (`config_from_document_since`) does not read the entries
//! of the VRs it takes as they were. pearld generates the API's schemas of configuration bodies from
//! these types. One file a concept: `placement.rs` (`placement:`, `node.fast_slots`, `replace_auto`),
//! `allocator.rs` (the FPGA substrate's greedy allocator, pure, shared with `pearl-bench
//! placement-sim`; `docs/PLACEMENT.md`), `resources.rs` (`resources:`, `node.capacity`, `admit`:
//! granted whole or refused naming the resource), `distribution.rs` (`distribution:` and a port's
//! fanout mode), `slice_alloc.rs` (PdP's SliceAlloc: which workers each VR runs on, online
//! best-fit over the workers' capacities; `docs/PLACEMENT.md`).

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
mod net;
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
pub use matches::{match_key, DEFAULT_MATCH_PRIORITY};
pub use model::*;
pub use nat::nat_ports_text;
pub use net::{blame as net_blame, document_with_net, net_plans, plan_net, HostInterface, HostPlan, LinkEnd, LinkPlan, NetPlan};
pub use parse::{parse_config, parse_config_in};
pub use placement::replace_auto;
pub use resources::{admit, granted};
pub use slice_alloc::{Slice, Slices, WORKER_PPS};
pub use vr_index::VrIndex;
pub use yaml_out::document_to_yaml;
