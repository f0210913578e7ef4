//! What the API's handlers work on.

use crate::activity::Activity;
use crate::node::Node;
use crate::owner_rate::OwnerRates;
use crate::rates::Sampler;
use crate::sessions::Sessions;
use crate::tls::TlsAcceptors;
use std::sync::Arc;

pub struct Ctx {
    pub node: Arc<Node>,
    pub rates: Arc<Sampler>,
    /// The VRs' routing sessions as their suites last reported them.
    pub sessions: Sessions,
    pub owner_rates: OwnerRates,
    /// What `sort=busiest` ranks VRs by.
    pub activity: Activity,
    /// The TCP API's certificate, when it serves HTTPS.
    pub tls: TlsAcceptors,
}
