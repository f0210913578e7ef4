//! The configuration's grammar, as types: what each section's keys are, what each takes, in
//! which forms, with the doc comments that describe them. The parser reads a document into
//! these types first ([`read`]: a value that does not fit is refused naming its path), then
//! checks what types cannot say (ranges, uniqueness, references between sections, files) into
//! the validated model. pearld generates the API's schemas of configuration bodies from them,
//! so the grammar the parser enforces and the one the OpenAPI document publishes are one.
//!
//! Every key but the few a section cannot do without is an `Option`: a key left out and one
//! given as null (`mtu:` with nothing after it) mean the same, as they always have.

#[macro_use]
mod choice;
mod control_plane;
mod document;
mod forms;
mod impair;
mod interface;
mod leak;
mod nat;
mod net;
mod node;
mod plugin;
mod port;
mod queue;
mod read;
mod resources;
mod route;
mod rule;
mod vr;

pub use control_plane::{BirdSpec, ControlPlaneSpec, FrrSpec};
pub use document::{Document, VrEntries};
pub use forms::{Auto, MaskSpec, MaskedInt, NatPorts, Word, WorkersAsk};
pub use impair::ImpairSpec;
pub use interface::{InterfaceSpec, UrpfSpec};
pub use leak::LeakSpec;
pub use nat::NatSpec;
pub use net::{HostInterfaceSpec, HostRouteSpec, HostSpec, LinkSpec, LinkStateSpec, NetSpec};
pub use node::{ApiSpec, NodeSpec, TlsSpec};
pub use plugin::PluginSpec;
pub use port::{DriverSpec, OpaqueSpec, PortSpec, RxSpec, VxlanSpec};
pub use queue::{LimitsSpec, QueueSpec};
pub(crate) use read::read;
pub use resources::{Amounts, CapacitySpec, ResourcesSpec};
pub use route::{NeighborSpec, RouteSpec};
pub use rule::MatchSpec;
pub use vr::{CodeOption, DistributionSpec, KindSpec, PlacementSpec, VrSpec};
