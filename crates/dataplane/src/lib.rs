//! The PEARL data plane: ports move batches of packets in and out; workers run each batch to
//! completion through the pipeline.

pub mod packet;
pub mod port;
