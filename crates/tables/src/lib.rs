//! A VR's forwarding tables as their writer (the configuration, then routed) sees them: its FIBs
//! and next hops. Apart from the data plane so that routed, which only writes them, does not
//! depend on it.

mod local_sources;
pub mod nexthop;
mod table_watch;
mod vr_tables;

pub use local_sources::LocalSources;
pub use table_watch::TableWatch;
pub use vr_tables::VrTables;
