//! SPP's opaque filter key: bytes a port's configuration names (`opaque: {offset, length}`),
//! read from each frame into the classifier's `opaque` field, so that filters can match a
//! protocol's own header that the 10-tuple knows nothing of.

use pearl_control::OpaqueKey;

/// `key.length` bytes of `frame` from `key.offset` as a big-endian number; bytes past the
/// frame's end read as zero, so a short frame simply does not match a key that needs them.
#[inline]
pub fn read(frame: &[u8], key: OpaqueKey) -> u128 {
    let start = usize::from(key.offset);
    let end = start + usize::from(key.length);
    let mut bytes = [0u8; 16];
    let width = usize::from(key.length);
    if start < frame.len() {
        let have = &frame[start..end.min(frame.len())];
        bytes[16 - width..16 - width + have.len()].copy_from_slice(have);
    }
    u128::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 8] = [0, 1, 2, 3, 0xca, 0xfe, 0xbe, 0xef];

    #[test]
    fn reads_the_named_bytes_big_endian() {
        assert_eq!(read(&FRAME, OpaqueKey { offset: 4, length: 4 }), 0xcafe_beef);
        assert_eq!(read(&FRAME, OpaqueKey { offset: 0, length: 1 }), 0);
        assert_eq!(read(&FRAME, OpaqueKey { offset: 1, length: 2 }), 0x0102);
    }

    #[test]
    fn bytes_past_the_end_read_as_zero() {
        assert_eq!(read(&FRAME, OpaqueKey { offset: 6, length: 4 }), 0xbeef_0000);
        assert_eq!(read(&FRAME, OpaqueKey { offset: 8, length: 2 }), 0);
        assert_eq!(read(&FRAME, OpaqueKey { offset: 9_000, length: 16 }), 0);
    }

    #[test]
    fn sixteen_bytes_fill_the_field() {
        let frame: Vec<u8> = (1..=16).collect();
        assert_eq!(read(&frame, OpaqueKey { offset: 0, length: 16 }), u128::from_be_bytes(frame.try_into().unwrap()));
    }
}
