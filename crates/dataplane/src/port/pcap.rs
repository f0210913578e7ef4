//! A port backed by pcap files: rx replays a capture (once or in a loop), tx appends to a new one.
//!
//! Both sides go through 64 KiB buffers, so the cost per frame is a copy, not a syscall. Written
//! frames carry the time of the batch they were sent in (one clock read per batch).

use super::pcap_file::{PcapReader, PcapWriter, Record};
use super::Port;
use crate::packet::{Packet, PacketPool, BUF_SIZE};
use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

const IO_BUF: usize = 64 * 1024;

struct Source {
    path: PathBuf,
    reader: PcapReader<BufReader<File>>,
    looping: bool,
    /// Frames read since the last rewind: a loop over a file without usable frames must stop.
    since_rewind: u64,
    done: bool,
}

struct Sink {
    path: PathBuf,
    writer: PcapWriter<BufWriter<File>>,
}

/// Counters of a pcap port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcapCounters {
    pub rx_packets: u64,
    /// Records longer than a packet buffer, skipped.
    pub rx_oversized: u64,
    pub tx_packets: u64,
}

/// A port reading frames from one pcap file and/or writing frames to another.
pub struct PcapPort {
    source: Option<Source>,
    sink: Option<Sink>,
    in_port: u16,
    counters: PcapCounters,
}

fn with_path(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("pcap {}: {what}: {e}", path.display()))
}

impl PcapPort {
    /// A port whose rx replays `input` (from the start again after the last record when
    /// `looping`) and whose tx writes to `output`, created or truncated. Either may be absent: rx
    /// then receives nothing, tx drops everything.
    pub fn open(input: Option<&Path>, looping: bool, output: Option<&Path>) -> io::Result<PcapPort> {
        let source = match input {
            Some(path) => {
                let file = File::open(path).map_err(|e| with_path(path, "open", e))?;
                let reader =
                    PcapReader::new(BufReader::with_capacity(IO_BUF, file)).map_err(|e| with_path(path, "reading the file header", e))?;
                Some(Source { path: path.to_owned(), reader, looping, since_rewind: 0, done: false })
            }
            None => None,
        };
        let sink = match output {
            Some(path) => {
                let file = File::create(path).map_err(|e| with_path(path, "create", e))?;
                let writer = PcapWriter::new(BufWriter::with_capacity(IO_BUF, file), BUF_SIZE as u32)
                    .map_err(|e| with_path(path, "writing the file header", e))?;
                Some(Sink { path: path.to_owned(), writer })
            }
            None => None,
        };
        Ok(PcapPort { source, sink, in_port: 0, counters: PcapCounters::default() })
    }

    /// A receive-only port replaying `path`.
    pub fn reader(path: &Path, looping: bool) -> io::Result<PcapPort> {
        PcapPort::open(Some(path), looping, None)
    }

    /// A transmit-only port writing to `path`.
    pub fn writer(path: &Path) -> io::Result<PcapPort> {
        PcapPort::open(None, false, Some(path))
    }

    /// Stamps received packets with `in_port`.
    pub fn stamp_in_port(mut self, in_port: u16) -> PcapPort {
        self.in_port = in_port;
        self
    }

    /// True once a non-looping input has been read to its end (or there is no input).
    pub fn rx_exhausted(&self) -> bool {
        self.source.as_ref().is_none_or(|s| s.done)
    }

    pub fn counters(&self) -> PcapCounters {
        self.counters
    }

    /// Pushes buffered output frames to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Some(s) => s.writer.flush().map_err(|e| with_path(&s.path, "flush", e)),
            None => Ok(()),
        }
    }
}

impl Port for PcapPort {
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        let Some(src) = &mut self.source else { return Ok(0) };
        let mut n = 0;
        while n < max && !src.done {
            let Some(mut p) = pool.take() else { break };
            let record = src.reader.next_into(p.buffer_mut());
            match record {
                Ok(Record::Frame(len)) => {
                    p.set_len(len);
                    p.in_port = self.in_port;
                    out.push(p);
                    n += 1;
                    src.since_rewind += 1;
                    continue;
                }
                Ok(Record::Oversized(_)) => self.counters.rx_oversized += 1,
                Ok(Record::End) if src.looping && src.since_rewind > 0 => {
                    src.since_rewind = 0;
                    if let Err(e) = src.reader.rewind() {
                        pool.give(p);
                        return Err(with_path(&src.path, "seek to the first record", e));
                    }
                }
                Ok(Record::End) => src.done = true,
                Err(e) => {
                    pool.give(p);
                    return Err(with_path(&src.path, "read", e));
                }
            }
            pool.give(p);
        }
        self.counters.rx_packets += n as u64;
        Ok(n)
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        let Some(sink) = &mut self.sink else {
            pool.give_all(batch);
            return Ok(0);
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let (sec, usec) = (now.as_secs() as u32, now.subsec_micros());
        let mut result = Ok(());
        let mut sent = 0;
        for p in batch.drain(..) {
            if result.is_ok() {
                result = sink.writer.write_frame(sec, usec, p.data());
                sent += usize::from(result.is_ok());
            }
            pool.give(p);
        }
        self.counters.tx_packets += sent as u64;
        result.map(|()| sent).map_err(|e| with_path(&sink.path, "write", e))
    }
}

impl Drop for PcapPort {
    fn drop(&mut self) {
        // Nobody is left to report a failure to; a caller who cares calls `flush` first.
        let _ = self.flush();
    }
}
