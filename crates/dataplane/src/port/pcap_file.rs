//! The classic libpcap file format: a 24-byte file header, then per frame a 16-byte record
//! header and the captured bytes. Only what the pcap port needs: Ethernet link type, both
//! timestamp resolutions and both byte orders on read; microseconds in native order on write.

use std::io::{self, Read, Seek, SeekFrom, Write};

pub const FILE_HEADER_LEN: usize = 24;
pub const RECORD_HEADER_LEN: usize = 16;
pub const LINKTYPE_ETHERNET: u32 = 1;
const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// libpcap keeps FCS information in the top bits of the link-type field.
const LINKTYPE_MASK: u32 = 0x03ff_ffff;
/// libpcap refuses records above this size as corrupt; so do we.
const MAX_RECORD_LEN: u32 = 256 * 1024;

/// What a file header says about the records that follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The file was written on a machine of the other byte order.
    pub swapped: bool,
    /// Record timestamps carry nanoseconds rather than microseconds.
    pub nanos: bool,
    pub snaplen: u32,
    pub linktype: u32,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl FileHeader {
    /// Validates a file header; the error names the offending field.
    pub fn parse(b: &[u8; FILE_HEADER_LEN]) -> io::Result<FileHeader> {
        let magic = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        let (swapped, nanos) = match magic {
            MAGIC_MICROS => (false, false),
            MAGIC_NANOS => (false, true),
            m if m == MAGIC_MICROS.swap_bytes() => (true, false),
            m if m == MAGIC_NANOS.swap_bytes() => (true, true),
            _ => {
                return Err(invalid(format!(
                    "pcap header field magic_number is {:02x}{:02x}{:02x}{:02x}, not a classic pcap \
                     magic (a1b2c3d4 microseconds or a1b23c4d nanoseconds, either byte order)",
                    b[0], b[1], b[2], b[3]
                )))
            }
        };
        let u16_at = |i: usize| {
            let v = u16::from_ne_bytes([b[i], b[i + 1]]);
            if swapped {
                v.swap_bytes()
            } else {
                v
            }
        };
        let u32_at = |i: usize| {
            let v = u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            if swapped {
                v.swap_bytes()
            } else {
                v
            }
        };
        let (major, minor) = (u16_at(4), u16_at(6));
        if major != 2 {
            return Err(invalid(format!("pcap header field version_major is {major} (version {major}.{minor}), expected 2")));
        }
        let linktype = u32_at(20) & LINKTYPE_MASK;
        if linktype != LINKTYPE_ETHERNET {
            return Err(invalid(format!("pcap header field network (link type) is {linktype}, expected {LINKTYPE_ETHERNET} (Ethernet)")));
        }
        Ok(FileHeader { swapped, nanos, snaplen: u32_at(16), linktype })
    }

    /// A microsecond-resolution Ethernet header in this machine's byte order.
    pub fn write_native(snaplen: u32) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC_MICROS.to_ne_bytes());
        b[4..6].copy_from_slice(&2u16.to_ne_bytes());
        b[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // thiszone and sigfigs stay 0, as every modern writer leaves them.
        b[16..20].copy_from_slice(&snaplen.to_ne_bytes());
        b[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_ne_bytes());
        b
    }
}

/// One record as read from a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A frame of this many bytes now fills the start of the caller's buffer.
    Frame(usize),
    /// A frame longer than the caller's buffer; its bytes were skipped.
    Oversized(u32),
    /// No more complete records (a record cut short by the end of the file counts as the end,
    /// as a capture killed mid-write leaves one).
    End,
}

/// Reads records from a pcap stream whose header was validated.
pub struct PcapReader<R> {
    inner: R,
    header: FileHeader,
    /// Byte offset of the next record, for error messages.
    offset: u64,
}

impl<R: Read + Seek> PcapReader<R> {
    pub fn new(mut inner: R) -> io::Result<PcapReader<R>> {
        let mut b = [0u8; FILE_HEADER_LEN];
        inner.read_exact(&mut b).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                invalid(format!("pcap file header: file shorter than the {FILE_HEADER_LEN}-byte header"))
            } else {
                e
            }
        })?;
        let header = FileHeader::parse(&b)?;
        Ok(PcapReader { inner, header, offset: FILE_HEADER_LEN as u64 })
    }

    pub fn header(&self) -> FileHeader {
        self.header
    }

    /// Reads the next record's frame into `buf`.
    pub fn next_into(&mut self, buf: &mut [u8]) -> io::Result<Record> {
        let mut h = [0u8; RECORD_HEADER_LEN];
        if !read_all_or_eof(&mut self.inner, &mut h)? {
            return Ok(Record::End);
        }
        let field = |i: usize| {
            let v = u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
            if self.header.swapped {
                v.swap_bytes()
            } else {
                v
            }
        };
        let incl_len = field(8);
        if incl_len > MAX_RECORD_LEN {
            return Err(invalid(format!(
                "pcap record at byte offset {}: field incl_len is {incl_len}, above the {MAX_RECORD_LEN}-byte maximum",
                self.offset
            )));
        }
        self.offset += (RECORD_HEADER_LEN as u64) + u64::from(incl_len);
        let len = incl_len as usize;
        if len > buf.len() {
            let skipped = io::copy(&mut (&mut self.inner).take(u64::from(incl_len)), &mut io::sink())?;
            return Ok(if skipped == u64::from(incl_len) { Record::Oversized(incl_len) } else { Record::End });
        }
        if !read_all_or_eof(&mut self.inner, &mut buf[..len])? {
            return Ok(Record::End);
        }
        Ok(Record::Frame(len))
    }

    /// Goes back to the first record.
    pub fn rewind(&mut self) -> io::Result<()> {
        self.inner.seek(SeekFrom::Start(FILE_HEADER_LEN as u64))?;
        self.offset = FILE_HEADER_LEN as u64;
        Ok(())
    }
}

/// Fills `buf` completely and returns true, or returns false at (possibly mid-buffer) EOF.
fn read_all_or_eof(r: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    match r.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes a microsecond pcap stream: the header at once, then one record per frame.
pub struct PcapWriter<W: Write> {
    inner: W,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut inner: W, snaplen: u32) -> io::Result<PcapWriter<W>> {
        inner.write_all(&FileHeader::write_native(snaplen))?;
        Ok(PcapWriter { inner })
    }

    pub fn write_frame(&mut self, ts_sec: u32, ts_usec: u32, frame: &[u8]) -> io::Result<()> {
        let len = frame.len() as u32;
        let mut h = [0u8; RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&ts_sec.to_ne_bytes());
        h[4..8].copy_from_slice(&ts_usec.to_ne_bytes());
        h[8..12].copy_from_slice(&len.to_ne_bytes());
        h[12..16].copy_from_slice(&len.to_ne_bytes());
        self.inner.write_all(&h)?;
        self.inner.write_all(frame)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// The underlying writer (e.g. the bytes written to a `Vec`).
    pub fn into_inner(self) -> W {
        self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn reads_what_it_writes() {
        let mut w = PcapWriter::new(Vec::new(), 2048).unwrap();
        w.write_frame(1, 2, &[1, 2, 3]).unwrap();
        w.write_frame(1, 3, &[4; 60]).unwrap();
        let mut r = PcapReader::new(Cursor::new(w.inner)).unwrap();
        assert_eq!(r.header(), FileHeader { swapped: false, nanos: false, snaplen: 2048, linktype: LINKTYPE_ETHERNET });
        let mut buf = [0u8; 64];
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::Frame(3));
        assert_eq!(&buf[..3], &[1, 2, 3]);
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::Frame(60));
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::End);
        r.rewind().unwrap();
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::Frame(3));
    }

    #[test]
    fn reads_swapped_nanosecond_files() {
        let mut b = Vec::new();
        let be = |v: u32| v.to_be_bytes();
        b.extend_from_slice(&be(MAGIC_NANOS));
        b.extend_from_slice(&2u16.to_be_bytes());
        b.extend_from_slice(&4u16.to_be_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&be(65535));
        b.extend_from_slice(&be(LINKTYPE_ETHERNET));
        for v in [7, 999_999_999, 2, 2] {
            b.extend_from_slice(&be(v));
        }
        b.extend_from_slice(&[0xaa, 0xbb]);
        let mut r = PcapReader::new(Cursor::new(b)).unwrap();
        assert!(r.header().nanos);
        assert_eq!(r.header().swapped, cfg!(target_endian = "little"));
        let mut buf = [0u8; 4];
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::Frame(2));
        assert_eq!(&buf[..2], &[0xaa, 0xbb]);
    }

    #[test]
    fn skips_oversized_and_stops_at_truncated_records() {
        let mut w = PcapWriter::new(Vec::new(), 2048).unwrap();
        w.write_frame(0, 0, &[9; 100]).unwrap();
        w.write_frame(0, 0, &[8; 10]).unwrap();
        w.write_frame(0, 0, &[7; 10]).unwrap();
        let mut bytes = w.inner;
        bytes.truncate(bytes.len() - 1);
        let mut r = PcapReader::new(Cursor::new(bytes)).unwrap();
        let mut buf = [0u8; 50];
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::Oversized(100));
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::Frame(10));
        assert_eq!(r.next_into(&mut buf).unwrap(), Record::End);
    }

    #[test]
    fn header_errors_name_the_field() {
        let good = FileHeader::write_native(2048);
        let mut bad_magic = good;
        bad_magic[0] ^= 0xff;
        let mut bad_version = good;
        bad_version[4..6].copy_from_slice(&3u16.to_ne_bytes());
        let mut bad_link = good;
        bad_link[20..24].copy_from_slice(&105u32.to_ne_bytes());
        for (h, field) in [(bad_magic, "magic_number"), (bad_version, "version_major"), (bad_link, "network")] {
            let e = FileHeader::parse(&h).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert!(e.to_string().contains(field), "{e}");
        }
    }
}
