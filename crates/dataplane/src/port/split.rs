//! A port that receives through one driver and sends through another, on the same interface.
//!
//! What it is for: AF_XDP's receive side pays off where the driver runs XDP on its own DMA
//! buffers, before any skb exists. On veth, and in skb (generic) mode, XDP runs on skbs the
//! kernel already built: it copies each frame into a page of its own before the program runs,
//! then once more into the UMEM, both on the sender's CPU. A PACKET ring receives with one
//! copy. Sending is the other way round: AF_XDP hands a frame to the driver with less work per
//! frame than a PACKET tx ring (measured on veth: ~450 vs ~620 ns of kernel time per 1518-byte
//! frame). So on such interfaces `rx: af_packet` pairs an AF_PACKET receiver
//! (`AfPacketPort::receiver`, no tx socket) with an AF_XDP transmitter (`AfXdpPort::transmitter`,
//! no rx ring, no XDP program).
//!
//! AF_XDP carries no offload metadata, so GSO super-packets (which the PACKET ring receives
//! from a veth peer with default offloads) leave whole through a `VnetSender` on the same
//! interface, in their place in the batch; partial checksums of single frames are finished
//! by the worker before they get here.

use super::vnet_tx::VnetSender;
use super::{Offloads, Port, RxClass};
use crate::packet::{Packet, PacketPool, BUF_SIZE};
use std::io;
use std::os::fd::BorrowedFd;

pub struct SplitPort {
    rx: Box<dyn Port>,
    tx: Box<dyn Port>,
    super_packets: Option<VnetSender>,
    /// The frames of a batch before a super-packet, sent through `tx` first.
    run: Vec<Packet>,
}

impl SplitPort {
    /// `rx` and `tx` drive the same interface: frames arrive through `rx` only, leave through
    /// `tx` only.
    pub fn new(rx: Box<dyn Port>, tx: Box<dyn Port>) -> SplitPort {
        SplitPort { rx, tx, super_packets: None, run: Vec::with_capacity(crate::batch::TX_BATCH) }
    }

    /// Sends super-packets whole through `sender` (on the same interface) instead of having
    /// the worker cut them for `tx`.
    pub fn with_super_packets(mut self, sender: VnetSender) -> SplitPort {
        self.super_packets = Some(sender);
        self
    }
}

impl Port for SplitPort {
    fn rx_batch(&mut self, pool: &mut PacketPool, out: &mut Vec<Packet>, max: usize) -> io::Result<usize> {
        self.rx.rx_batch(pool, out, max)
    }

    fn rx_sockets(&self) -> Vec<(BorrowedFd<'_>, RxClass)> {
        self.rx.rx_sockets()
    }

    fn rx_dropped(&mut self) -> u64 {
        self.rx.rx_dropped()
    }

    fn tx_batch(&mut self, batch: &mut Vec<Packet>, pool: &mut PacketPool) -> io::Result<usize> {
        let Some(sender) = &self.super_packets else { return self.tx.tx_batch(batch, pool) };
        // Super-packets, and jumbo frames longer than an AF_XDP chunk, leave through `sender`.
        let whole = |p: &Packet| p.offload.is_gso() || p.len() > BUF_SIZE;
        if !batch.iter().any(whole) {
            return self.tx.tx_batch(batch, pool);
        }
        let mut sent = 0;
        for p in batch.drain(..) {
            if !whole(&p) {
                self.run.push(p);
                continue;
            }
            if !self.run.is_empty() {
                sent += self.tx.tx_batch(&mut self.run, pool).unwrap_or(0);
                pool.give_all(&mut self.run);
            }
            sent += usize::from(sender.send(&p));
            pool.give(p);
        }
        if !self.run.is_empty() {
            sent += self.tx.tx_batch(&mut self.run, pool)?;
        }
        Ok(sent)
    }

    fn offloads(&self) -> Offloads {
        let tx = self.tx.offloads();
        Offloads {
            rx_unmarked_partial: self.rx.offloads().rx_unmarked_partial,
            tx_csum: tx.tx_csum,
            tx_gso: tx.tx_gso || self.super_packets.is_some(),
        }
    }

    fn rx_fd(&self) -> Option<i32> {
        self.rx.rx_fd()
    }

    fn trickles(&self) -> bool {
        self.rx.trickles()
    }
}
