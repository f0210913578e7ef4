//! A pcapng file (draft-ietf-opsawg-pcapng) of Ethernet frames, each with a comment
//! (`opt_comment`), so that Wireshark and tshark show a frame and what was said of it.

/// Nanosecond timestamps (`if_tsresol` 9).
const TSRESOL_NS: u8 = 9;
const LINKTYPE_ETHERNET: u16 = 1;

pub struct Pcapng {
    bytes: Vec<u8>,
}

impl Pcapng {
    /// A section header and one Ethernet interface taking `snaplen` bytes of a frame.
    pub fn new(snaplen: u32) -> Pcapng {
        let mut f = Pcapng { bytes: Vec::new() };
        let mut shb = Vec::new();
        shb.extend(0x1a2b_3c4du32.to_le_bytes());
        shb.extend(1u16.to_le_bytes());
        shb.extend(0u16.to_le_bytes());
        shb.extend((-1i64).to_le_bytes());
        f.block(0x0a0d_0d0a, &shb);
        let mut idb = Vec::new();
        idb.extend(LINKTYPE_ETHERNET.to_le_bytes());
        idb.extend(0u16.to_le_bytes());
        idb.extend(snaplen.to_le_bytes());
        option(&mut idb, 9, &[TSRESOL_NS]);
        option(&mut idb, 0, &[]);
        f.block(1, &idb);
        f
    }

    /// An enhanced packet block: `frame` (of `len` bytes on the wire) at `time_ns`, with `comment`.
    pub fn packet(&mut self, time_ns: u64, frame: &[u8], len: u32, comment: &str) {
        let mut epb = Vec::new();
        epb.extend(0u32.to_le_bytes());
        epb.extend(((time_ns >> 32) as u32).to_le_bytes());
        epb.extend((time_ns as u32).to_le_bytes());
        epb.extend((frame.len() as u32).to_le_bytes());
        epb.extend(len.max(frame.len() as u32).to_le_bytes());
        epb.extend(frame);
        pad(&mut epb);
        option(&mut epb, 1, comment.as_bytes());
        option(&mut epb, 0, &[]);
        self.block(6, &epb);
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    fn block(&mut self, kind: u32, body: &[u8]) {
        let total = (12 + body.len()) as u32;
        self.bytes.extend(kind.to_le_bytes());
        self.bytes.extend(total.to_le_bytes());
        self.bytes.extend(body);
        self.bytes.extend(total.to_le_bytes());
    }
}

fn option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    out.extend(code.to_le_bytes());
    out.extend((value.len() as u16).to_le_bytes());
    out.extend(value);
    pad(out);
}

fn pad(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(4), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_whole_and_aligned_and_carry_the_comment() {
        let mut f = Pcapng::new(256);
        f.packet(1_700_000_000_123_456_789, &[0xab; 61], 98, "rx port p0\ndrop no_route");
        let b = f.into_bytes();
        let mut at = 0;
        let mut kinds = Vec::new();
        while at < b.len() {
            let len = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
            assert_eq!(len % 4, 0, "blocks end on 32-bit boundaries");
            assert_eq!(b[at + 4..at + 8], b[at + len - 4..at + len], "length at both ends");
            kinds.push(u32::from_le_bytes(b[at..at + 4].try_into().unwrap()));
            at += len;
        }
        assert_eq!(kinds, [0x0a0d_0d0a, 1, 6]);
        assert!(b.windows(24).any(|w| w == b"rx port p0\ndrop no_route"));
    }
}
