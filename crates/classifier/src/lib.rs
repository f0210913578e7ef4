//! The VR classifier (PEARL VID lookup, SPP filter table).
//!
//! Rules are TCAM entries: a value/mask pair over the packed 10-tuple plus a 128-bit opaque
//! key ([`FlowKey`]), a priority and a [`Verdict`] (VR and action/queue id). The highest
//! priority match wins; equal priorities go to the earlier installed rule (lower [`RuleId`]).
//! Each VR owns a partition with an optional quota, and rules of different VRs may not tie
//! (same priority, overlapping keys). Lookup is a tuple space search with TupleMerge-style
//! table merging and priority-ordered early termination; see [`Classifier`].
//!
//! ## In detail
//!
//! Tuple space search with TupleMerge-style relaxed masks, one table set per EtherType class
//! (IPv4, IPv6, other; rules that wildcard the EtherType are in all three), a per-table pre-filter
//! bitmap evaluated eight keys at a time (AVX-512 where present), priority-sorted tables with early
//! termination, and per-VR partitions with quotas. Two VRs' rules may not tie (same priority,
//! overlapping): refused at insert. In front of the tuple search sits `InterfaceIndex`
//! (`interface_index.rs`): the interface rules (exact in_port and destination MAC, nothing else)
//! that no rule of higher precedence overlaps, in one open-addressing hash table. A frame found
//! there is decided by one probe. The data plane builds it once per plan (`index_interfaces`); any
//! later insert or remove drops it, and lookups stay exact without it.

mod classifier;
mod error;
mod filter_pass;
mod hash_mask;
mod ids;
mod interface_index;
mod key_hash;
mod partition;
mod rule;
mod same_priority;
pub mod synth;
mod table_set;
mod traffic_class;
mod tuple_table;

pub use classifier::Classifier;
pub use error::ClassifierError;
pub use pearl_wire::flow_key::{Field, FlowKey};
pub use rule::{MatchIndex, Rule, RuleId, Verdict, VrId};
pub use table_set::BUCKET_BOUND;
