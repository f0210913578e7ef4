//! Who may call an endpoint: a field every entry of the endpoint table must give (the table is
//! struct literals, so an endpoint without one does not compile), and what a request that
//! matches no endpoint gets (`UNMATCHED`: the admin's, so that a path the table lacks tells a
//! VR's token or no token nothing).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token needed.
    Public,
    /// Any token; what a VR's token gets is cut down to its own VR.
    Scoped,
    /// The admin token or the token of the VR `{name}` names.
    Owner,
    Admin,
}

/// The rule of a request no endpoint serves (unknown path, or a method its path lacks).
pub const UNMATCHED: Access = Access::Admin;
