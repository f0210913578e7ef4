"""Differential conformance harness: the same two-host topology built around a Linux router
namespace (the oracle) and around a pearld VR of each kind and port driver; named cases and
seeded generated packets are sent through both and what comes back to the sender and what
reaches the far host are compared (see docs/CONFORMANCE.md)."""
