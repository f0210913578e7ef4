//! Fields that take a value in either of two forms (`udp_dst: 4000` or `{value, mask}`,
//! `ports: 20000` or `"20000-20999"`). Each is read by a visitor of its own rather than serde's
//! untagged enums, so that an error inside the second form still names its own key; the schema
//! lists both forms (`anyOf`).

use core::fmt;
use schemars::JsonSchema;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// An integer field of a match rule: a value matched exactly, or `{value, mask}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum MaskedInt {
    Exact(i64),
    Masked(MaskSpec),
}

/// A value matched on the bits of `mask` only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaskSpec {
    pub value: i64,
    pub mask: i64,
}

impl<'de> Deserialize<'de> for MaskedInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaskedInt;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or {value: V, mask: M}")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MaskedInt, E> {
                Ok(MaskedInt::Exact(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MaskedInt, E> {
                i64::try_from(v).map(MaskedInt::Exact).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MaskedInt, A::Error> {
                MaskSpec::deserialize(de::value::MapAccessDeserializer::new(map)).map(MaskedInt::Masked)
            }
        }
        d.deserialize_any(V)
    }
}

/// `nat.ports`: a port, or a range `FIRST-LAST`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum NatPorts {
    Port(i64),
    Range(String),
}

impl NatPorts {
    /// As text, `FIRST-LAST` or `PORT`.
    pub fn text(&self) -> String {
        match self {
            NatPorts::Port(p) => p.to_string(),
            NatPorts::Range(r) => r.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for NatPorts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NatPorts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a range FIRST-LAST of ports 1024-65535")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NatPorts, E> {
                Ok(NatPorts::Port(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NatPorts, E> {
                // Past i64, only its text can say what was given (and be refused as a range).
                Ok(i64::try_from(v).map(NatPorts::Port).unwrap_or_else(|_| NatPorts::Range(v.to_string())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NatPorts, E> {
                Ok(NatPorts::Range(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A word of a command line: numbers and `true`/`false` are taken as their text
/// (`[gobgpd, -p, 1790]`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Word {
    Text(String),
    Integer(i64),
    Number(f64),
    Flag(bool),
}

impl Word {
    pub fn text(&self) -> String {
        match self {
            Word::Text(s) => s.clone(),
            Word::Integer(i) => i.to_string(),
            Word::Number(n) => n.to_string(),
            Word::Flag(b) => b.to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Word {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Word;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Word, E> {
                Ok(Word::Text(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Word, E> {
                Ok(Word::Integer(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Word, E> {
                Ok(Word::Text(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Word, E> {
                Ok(Word::Number(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Word, E> {
                Ok(Word::Flag(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// `resources.workers`: how many of the node's workers, or `auto` for all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WorkersAsk {
    Count(i64),
    All(Auto),
}

choice!(
    /// All there are.
    Auto { Auto = "auto" }
);

impl<'de> Deserialize<'de> for WorkersAsk {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = WorkersAsk;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or auto")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<WorkersAsk, E> {
                Ok(WorkersAsk::Count(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<WorkersAsk, E> {
                i64::try_from(v).map(WorkersAsk::Count).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<WorkersAsk, E> {
                match v {
                    "auto" => Ok(WorkersAsk::All(Auto::Auto)),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}
