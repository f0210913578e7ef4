//! How many frames move per call: the batch sizes every stage is built around.

/// Frames taken from a port per call; also the FIB's interleaving width.
pub const RX_BATCH: usize = 32;
/// Frames handed to a port per call.
pub const TX_BATCH: usize = 64;
