//! What a FIB's next-hop id means: where and how to send, or why not to.

use pearl_control::Mac;

/// An adjacency (VPP's term): the rewrite a forwarded packet gets, or the reason it goes to
/// the slow path instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adjacency {
    /// Rewrite the MACs and send out of `port`.
    Forward { port: u16, src: Mac, dst: Mac },
    /// One of the VR's own addresses.
    Local,
    /// On a connected subnet of `port`, but the neighbour's MAC is unknown: the VR's kernel
    /// must resolve it.
    Glean { port: u16 },
}

/// A VR's adjacencies, indexed by next-hop id; published whole (they change rarely).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NextHopTable {
    pub entries: Vec<Adjacency>,
}

impl NextHopTable {
    /// The id of `adj`, adding it if new.
    pub fn intern(&mut self, adj: Adjacency) -> u32 {
        match self.entries.iter().position(|a| *a == adj) {
            Some(i) => i as u32,
            None => {
                self.entries.push(adj);
                (self.entries.len() - 1) as u32
            }
        }
    }

    #[inline]
    pub fn get(&self, id: u32) -> Option<&Adjacency> {
        self.entries.get(id as usize)
    }
}
