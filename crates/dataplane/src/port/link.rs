//! Whether a port's Linux interface is still the one it was opened on. A deleted interface
//! leaves its sockets bound to nothing: an AF_PACKET socket reports an error on every poll from
//! then on (a worker asleep in poll(2) would spin on it) and receives nothing again, even when
//! an interface of the same name comes back. The worker looks every 100 ms (one ioctl per port)
//! and, while a port is gone, every second whether the name is back, and then reopens the port.

use crate::packet::PacketPool;
use crate::port::Port;
use std::ffi::CString;
use std::sync::Arc;

/// Opens worker `w`'s instance of port `port` again, in the worker's thread (an AF_XDP port
/// shares the worker's packet buffers).
pub type Reopen = Arc<dyn Fn(usize, usize, &mut PacketPool) -> Result<Box<dyn Port>, String> + Send + Sync>;

/// How often a port that is gone is looked for again.
pub const RETRY_NS: u64 = 1_000_000_000;

pub struct PortLink {
    name: String,
    c_name: CString,
    /// The interface's index when the port was opened.
    ifindex: u32,
    /// Gone since, in the worker's clock (ns); `None` while the interface is there.
    gone_since: Option<u64>,
    tried_ns: u64,
}

impl PortLink {
    /// The link of a port on interface `name`, as it is now; `None` if there is no such
    /// interface (a pcap file, a memory port) or the name cannot be one.
    pub fn of(name: &str) -> Option<PortLink> {
        let c_name = CString::new(name).ok()?;
        let ifindex = index(&c_name)?;
        Some(PortLink { name: name.to_string(), c_name, ifindex, gone_since: None, tried_ns: 0 })
    }

    /// The interface's index when the port was opened.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn is_gone(&self) -> bool {
        self.gone_since.is_some()
    }

    /// Looks whether the interface is still the one the port was opened on; true if it just
    /// went.
    pub fn check(&mut self, now_ns: u64) -> bool {
        if self.gone_since.is_some() || index(&self.c_name) == Some(self.ifindex) {
            return false;
        }
        self.gone_since = Some(now_ns);
        self.tried_ns = now_ns;
        true
    }

    /// While the port is gone, once a second: whether an interface of its name exists again.
    pub fn due_for_reopen(&mut self, now_ns: u64) -> bool {
        if self.gone_since.is_none() || now_ns < self.tried_ns + RETRY_NS {
            return false;
        }
        self.tried_ns = now_ns;
        index(&self.c_name).is_some()
    }

    /// The port was opened again on the interface now holding its name.
    pub fn reopened(&mut self) {
        if let Some(ifindex) = index(&self.c_name) {
            self.ifindex = ifindex;
        }
        self.gone_since = None;
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

fn index(name: &CString) -> Option<u32> {
    // SAFETY: a valid NUL-terminated string.
    let i = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (i != 0).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_stays_and_a_name_that_is_no_interface_has_no_link() {
        let mut lo = PortLink::of("lo").expect("every namespace has lo");
        assert!(!lo.check(5) && !lo.is_gone());
        assert!(PortLink::of("pearl-none0").is_none());
        assert!(PortLink::of("a/file.pcap").is_none());
    }

    #[test]
    fn a_link_whose_interface_index_changed_is_gone_and_looked_for_once_a_second() {
        let mut l = PortLink::of("lo").unwrap();
        l.ifindex += 1_000_000; // as if lo had been deleted and made again
        assert!(l.check(10), "gone");
        assert!(!l.check(20), "reported once");
        assert!(!l.due_for_reopen(10 + RETRY_NS / 2));
        assert!(l.due_for_reopen(10 + RETRY_NS), "a second later, and the name is there");
        l.reopened();
        assert!(!l.is_gone() && !l.check(10 + 2 * RETRY_NS));
    }
}
