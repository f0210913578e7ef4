//! The desired state and how it changes at run time: an edit is made to a copy of the
//! configuration document, validated whole like a file, stored ahead of being applied, and
//! applied to the running node; if anything refuses, the stored and running state stay as
//! they were.

use crate::store::Store;
use pearl_control::{config_from_document, ConfigError};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

pub struct Desired {
    /// Shared with readers: `GET /v1/config` and a change's answer take it without a copy of
    /// thousands of VRs.
    pub doc: Arc<Value>,
    /// Where relative file names in the document (FRR configurations) are resolved.
    pub base_dir: PathBuf,
    pub store: Store,
}

/// Why a change was refused.
#[derive(Debug)]
pub enum ChangeError {
    /// The request itself is malformed: which field, and what is wrong.
    BadRequest { field: String, message: String },
    /// The resulting configuration is invalid (names the field).
    Invalid(ConfigError),
    /// Something named does not exist.
    NotFound(String),
    /// Valid, but the running node cannot take it (e.g. ports cannot change at run time).
    Conflict(String),
    /// The state could not be stored.
    Storage(String),
}

impl std::fmt::Display for ChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeError::BadRequest { field, message } if field.is_empty() => write!(f, "{message}"),
            ChangeError::BadRequest { field, message } => write!(f, "{field}: {message}"),
            ChangeError::Invalid(e) => write!(f, "{e}"),
            ChangeError::NotFound(m) | ChangeError::Conflict(m) | ChangeError::Storage(m) => write!(f, "{m}"),
        }
    }
}

impl Desired {
    /// Validates `edit` applied to a copy of the document; returns the new document and what
    /// it configures.
    pub fn propose(
        &self,
        edit: impl FnOnce(&mut Value) -> Result<(), ChangeError>,
    ) -> Result<(Value, pearl_control::Config), ChangeError> {
        let mut doc = Value::clone(&self.doc);
        edit(&mut doc)?;
        let config = config_from_document(&doc, &self.base_dir).map_err(ChangeError::Invalid)?;
        Ok((doc, config))
    }
}

/// The index of VR `name` in the document's `vrs`.
pub fn vr_index(doc: &Value, name: &str) -> Result<usize, ChangeError> {
    doc["vrs"]
        .as_array()
        .and_then(|vrs| vrs.iter().position(|v| v["name"] == name))
        .ok_or_else(|| ChangeError::NotFound(format!("no VR named {name:?}")))
}
