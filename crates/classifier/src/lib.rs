//! The VR classifier (PEARL VID lookup, SPP filter table).
