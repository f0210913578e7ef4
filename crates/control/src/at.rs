//! Where a value is in the document (`vrs[2].interfaces[0].mtu`), so that every error names its
//! field. A path is a chain of borrowed steps, spelt out only when an error names it: with
//! thousands of VRs, the paths of fields that are fine cost nothing.

use crate::error::ConfigError;
use core::fmt;

#[derive(Clone, Copy)]
pub enum At<'a> {
    /// The document itself.
    Root,
    /// A mapping's key.
    Key(&'a At<'a>, &'a str),
    /// A list's position.
    Index(&'a At<'a>, usize),
}

impl<'a> At<'a> {
    pub fn key(&'a self, key: &'a str) -> At<'a> {
        At::Key(self, key)
    }

    pub fn index(&'a self, i: usize) -> At<'a> {
        At::Index(self, i)
    }

    pub fn err(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.to_string(), message)
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Key(At::Root, key) => f.write_str(key),
            At::Key(parent, key) => write!(f, "{parent}.{key}"),
            At::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}
