//! Lookup structures of the PEARL fast path: per-VR longest-prefix-match FIBs and the VR
//! classifier. Both are read by data-plane workers without locks while a control thread updates
//! them (see [`rcu`]).
