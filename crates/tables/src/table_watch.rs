//! The hook through which whatever keeps decisions made from a VR's tables (the data plane's
//! flow offload) hears that they changed, without the tables knowing what it is.

/// Told by a VR's tables after each change they publish ([`crate::VrTables::published`]).
pub trait TableWatch: Send {
    /// Whether anything holds decisions that a change must remove.
    fn active(&self) -> bool;

    /// Removes them; must not lose the request.
    fn flush(&self);
}
