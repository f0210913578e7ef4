//! The configuration's named choices as the API spells them, each mirroring pearl-control's
//! enum so that a new choice there fails to build until the API documents it. A code option is
//! shown as the grammar spells it (`pearl_control::CodeOption`), the one list of them.

use pearl_control as control;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    Fast,
    Kernel,
    Auto,
}

impl From<control::Placement> for Placement {
    fn from(placement: control::Placement) -> Placement {
        match placement {
            control::Placement::Fast => Placement::Fast,
            control::Placement::Kernel => Placement::Kernel,
            control::Placement::Auto => Placement::Auto,
        }
    }
}

// The data plane a fast or kernel VR is forwarded by.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DataPlane {
    Fast,
    Kernel,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    Flow,
    RoundRobin,
    Proportional,
}

impl From<control::Distribution> for Distribution {
    fn from(distribution: control::Distribution) -> Distribution {
        match distribution {
            control::Distribution::Flow => Distribution::Flow,
            control::Distribution::RoundRobin => Distribution::RoundRobin,
            control::Distribution::Proportional => Distribution::Proportional,
        }
    }
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Urpf {
    Strict,
    Loose,
    Off,
}

impl From<control::Urpf> for Urpf {
    fn from(urpf: control::Urpf) -> Urpf {
        match urpf {
            control::Urpf::Strict => Urpf::Strict,
            control::Urpf::Loose => Urpf::Loose,
            control::Urpf::Off => Urpf::Off,
        }
    }
}
