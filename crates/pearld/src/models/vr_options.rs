//! The configuration's named choices as the API spells them, each mirroring pearl-control's
//! enum so that a new choice there fails to build until the API documents it.

use pearl_control as control;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Code {
    Ipv4,
    Ipv6,
    Ip,
    Filter,
    I3,
}

impl From<control::CodeOption> for Code {
    fn from(code: control::CodeOption) -> Code {
        match code {
            control::CodeOption::Ipv4 => Code::Ipv4,
            control::CodeOption::Ipv6 => Code::Ipv6,
            control::CodeOption::Ip => Code::Ip,
            control::CodeOption::Filter => Code::Filter,
            control::CodeOption::I3 => Code::I3,
        }
    }
}

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
