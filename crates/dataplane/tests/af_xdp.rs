//! AF_XDP ports on veth pairs (needs root). Every test makes its own network namespace, named
//! `xd<pid><letter>`, opens its ports from a thread inside it, and deletes the namespace (and with
//! it the links) however it ends.

use pearl_dataplane::packet::{Packet, PacketPool};
use pearl_dataplane::port::{AfPacketConfig, AfPacketPort, AfXdpBinding, AfXdpConfig, AfXdpPort, Port, SplitPort, XdpMode};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An EtherType reserved for local experiments: the kernel's own chatter on a fresh link
/// (IPv6 router solicitations, MLD) never carries it.
const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

fn ip(args: &[&str]) -> Option<String> {
    let out = Command::new("ip").args(args).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn must_ip(args: &[&str]) -> String {
    ip(args).unwrap_or_else(|| panic!("ip {} failed", args.join(" ")))
}

/// A network namespace, deleted (with its links) when dropped.
struct Netns(String);

impl Netns {
    fn new(letter: &str) -> Netns {
        let name = format!("xd{}{letter}", std::process::id());
        must_ip(&["netns", "add", &name]);
        Netns(name)
    }

    fn ip(&self, args: &[&str]) -> String {
        must_ip(&[&["-n", &self.0][..], args].concat())
    }

    /// A veth pair `a`–`b` inside the namespace, both ends up; `extra` goes before `type veth`.
    fn veth(&self, a: &str, b: &str, extra: &[&str]) {
        self.ip(&[&["link", "add", "name", a][..], extra, &["type", "veth", "peer", "name", b]].concat());
        self.ip(&["link", "set", "dev", a, "up"]);
        self.ip(&["link", "set", "dev", b, "up"]);
    }

    /// How many holders keep `dev` promiscuous.
    fn promiscuity(&self, dev: &str) -> u32 {
        let text = self.ip(&["-d", "link", "show", "dev", dev]);
        let count = text.split_once("promiscuity ").and_then(|(_, rest)| rest.split_whitespace().next());
        count.and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no promiscuity in {text}"))
    }

    /// Whether an XDP program is attached to `dev`.
    fn has_xdp(&self, dev: &str) -> bool {
        self.ip(&["link", "show", "dev", dev]).contains("xdp")
    }

    /// Runs `open` in a thread inside the namespace, where ports bind to its interfaces.
    fn inside<T: Send>(&self, open: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        let path = format!("/run/netns/{}", self.0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let ns = File::open(&path)?;
                // SAFETY: setns changes only this short-lived thread's network namespace.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                open()
            })
            .join()
            .expect("the setns thread panicked")
        })
    }

    /// Opens an AF_XDP port on `dev`, sharing `pool`.
    fn open(&self, dev: &str, config: AfXdpConfig, pool: &mut PacketPool) -> io::Result<AfXdpPort> {
        self.inside(|| AfXdpPort::with_config(dev, &config, pool))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Test frames: broadcast, our EtherType, index in the payload, lengths from 60 to 1514.
fn frames(count: usize, first: usize) -> Vec<Vec<u8>> {
    (first..first + count)
        .map(|i| {
            let len = [60, 61, 100, 1000, 1514][i % 5];
            let mut f: Vec<u8> = (0..len).map(|b| (b + i * 7) as u8).collect();
            f[0..6].fill(0xff);
            f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
            f[12..14].copy_from_slice(&TEST_ETHERTYPE);
            f[14..18].copy_from_slice(&(i as u32).to_be_bytes());
            f
        })
        .collect()
}

fn send(port: &mut dyn Port, pool: &mut PacketPool, frames: &[Vec<u8>]) -> usize {
    let mut batch: Vec<Packet> = frames
        .iter()
        .map(|f| {
            let mut p = pool.take().expect("pool has room for the test batch");
            p.fill(f);
            p
        })
        .collect();
    port.tx_batch(&mut batch, pool).unwrap()
}

/// Polls `port` (sleeping on its rx fd) until `want` test frames arrived or `limit` passed;
/// returns the test frames in arrival order, with the port they were stamped with.
fn receive(port: &mut dyn Port, pool: &mut PacketPool, want: usize, limit: Duration) -> Vec<(Vec<u8>, u16)> {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut batch = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        let mut pfd = libc::pollfd { fd: port.rx_fd().expect("an AF_XDP port has an rx fd"), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut pfd, 1, 10) };
        port.rx_batch(pool, &mut batch, 64).unwrap();
        got.extend(batch.iter().filter(|p| p.data()[12..14] == TEST_ETHERTYPE).map(|p| (p.data().to_vec(), p.in_port)));
        pool.give_all(&mut batch);
    }
    got
}

/// Lets `port` take back what the kernel finished sending (a port does so when it next sends).
fn settle(port: &mut dyn Port, pool: &mut PacketPool) {
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(port.tx_batch(&mut Vec::new(), pool).unwrap(), 0);
}

/// A pool for `ports` ports of `config` and `spare` buffers more.
fn pool_for(ports: usize, config: &AfXdpConfig, spare: usize) -> PacketPool {
    PacketPool::new(ports * config.pool_share() + spare)
}

fn bytes(got: Vec<(Vec<u8>, u16)>) -> Vec<Vec<u8>> {
    got.into_iter().map(|(f, _)| f).collect()
}

#[test]
fn af_xdp_moves_frames_both_ways_in_native_mode_and_detaches_on_drop() {
    let ns = Netns::new("a");
    ns.veth("va", "vb", &[]);
    let config = AfXdpConfig::default();
    let mut pool = pool_for(2, &config, 256);
    let mut pa = ns.open("va", config.clone(), &mut pool).unwrap();
    let mut pb = ns.open("vb", config.clone(), &mut pool).unwrap().stamp_in_port(4);
    // Each port lends its fill ring's worth of buffers to the kernel.
    let free = pool.capacity() - 2 * config.rx_frames as usize;
    assert_eq!(pool.available(), free);
    // veth has native XDP but no zero-copy.
    assert_eq!(pa.binding(), Some(AfXdpBinding { mode: XdpMode::Native, zero_copy: false }));
    assert_eq!(pa.binding().unwrap().to_string(), "native XDP, copy mode");
    assert!(ns.has_xdp("va") && ns.has_xdp("vb"));
    // The VRs' MACs are not the interface's: a NIC must not filter them out.
    assert_eq!(ns.promiscuity("va"), 1);

    let sent = frames(64, 0);
    assert_eq!(send(&mut pa, &mut pool, &sent), 64);
    let got = receive(&mut pb, &mut pool, 64, Duration::from_secs(2));
    assert!(got.iter().all(|&(_, port)| port == 4), "b stamps what it receives");
    assert_eq!(bytes(got), sent);

    let back = frames(8, 100);
    assert_eq!(send(&mut pb, &mut pool, &back), 8);
    assert_eq!(bytes(receive(&mut pa, &mut pool, 8, Duration::from_secs(2))), back);
    assert!(receive(&mut pa, &mut pool, 1, Duration::from_millis(100)).is_empty(), "a's own tx came back on a's rx");
    assert!(receive(&mut pb, &mut pool, 1, Duration::from_millis(100)).is_empty(), "b's own tx came back on b's rx");

    settle(&mut pa, &mut pool);
    settle(&mut pb, &mut pool);
    assert_eq!(pool.available(), free, "every buffer sent or received is back");

    let ca = pa.counters().unwrap();
    assert_eq!((ca.tx_packets, ca.tx_ring_full, ca.tx_bad_length, ca.tx_invalid), (64, 0, 0, 0));
    let cb = pb.counters().unwrap();
    assert_eq!((cb.rx_ring_full, cb.rx_fill_empty, cb.rx_dropped, cb.rx_bad_descriptor), (0, 0, 0, 0));
    assert!(cb.rx_packets >= 64);

    drop(pa);
    assert!(!ns.has_xdp("va"), "dropping the port detaches its program");
    assert_eq!(ns.promiscuity("va"), 0, "and ends its promiscuity");
    assert!(ns.has_xdp("vb"));
}

#[test]
fn af_xdp_in_skb_mode_wraps_small_rings_without_loss_or_reordering() {
    let ns = Netns::new("b");
    ns.veth("vc", "vd", &[]);
    // Rings of 16 so that 400 frames go round each many times.
    let small = AfXdpConfig { rx_frames: 16, tx_frames: 16, mode: Some(XdpMode::Skb) };
    let mut pool = pool_for(2, &small, 64);
    let mut pc = ns.open("vc", small.clone(), &mut pool).unwrap();
    let mut pd = ns.open("vd", small, &mut pool).unwrap();
    assert_eq!(pd.binding().unwrap().to_string(), "skb XDP, copy mode");
    assert!(ns.ip(&["link", "show", "dev", "vd"]).contains("xdpgeneric"));
    let mut received = Vec::new();
    for round in 0..50 {
        let sent = frames(8, round * 8);
        assert_eq!(send(&mut pc, &mut pool, &sent), 8, "round {round}");
        let got = receive(&mut pd, &mut pool, 8, Duration::from_secs(2));
        assert_eq!(got.len(), 8, "round {round}");
        received.extend(bytes(got));
    }
    assert_eq!(received, frames(400, 0));
    let cd = pd.counters().unwrap();
    assert_eq!((cd.rx_ring_full, cd.rx_fill_empty, cd.rx_dropped), (0, 0, 0));
    assert_eq!(pc.counters().unwrap().tx_ring_full, 0);
}

#[test]
fn af_xdp_drops_frames_it_cannot_send_and_keeps_going() {
    let ns = Netns::new("c");
    ns.veth("ve", "vf", &[]);
    let config = AfXdpConfig::default();
    let mut pool = pool_for(2, &config, 8);
    let mut pe = ns.open("ve", config.clone(), &mut pool).unwrap();
    let mut pf = ns.open("vf", config, &mut pool).unwrap();
    let free = pool.available();
    // Shorter than an Ethernet header: refused by the port. Above the 1500-byte MTU: taken onto
    // the ring, then dropped by the kernel, which must not stall the ring.
    let mut runt = frames(1, 0).remove(0);
    runt.truncate(10);
    let mut jumbo = frames(1, 0).remove(0);
    jumbo.resize(2048, 0);
    assert_eq!(send(&mut pe, &mut pool, &[runt, jumbo]), 1);
    settle(&mut pe, &mut pool);
    assert_eq!(pool.available(), free, "the dropped jumbo's buffer came back");
    assert_eq!(pe.counters().unwrap().tx_bad_length, 1);
    let good = frames(4, 1);
    assert_eq!(send(&mut pe, &mut pool, &good), 4);
    assert_eq!(bytes(receive(&mut pf, &mut pool, 5, Duration::from_millis(500))), good);
}

#[test]
fn af_xdp_sends_what_its_tx_chunks_hold_and_gets_them_back() {
    let ns = Netns::new("e");
    ns.veth("vm", "vn", &[]);
    let config = AfXdpConfig::default();
    let mut pool = pool_for(2, &config, 64);
    let mut pm = ns.open("vm", AfXdpConfig { tx_frames: 8, ..config.clone() }, &mut pool).unwrap();
    let mut pn = ns.open("vn", config, &mut pool).unwrap();
    let free = pool.available();
    for round in 0..5 {
        let batch = frames(20, round * 20);
        assert_eq!(send(&mut pm, &mut pool, &batch), 8, "round {round}: 8 frames in flight at most, all back from the last round");
        assert_eq!(bytes(receive(&mut pn, &mut pool, 8, Duration::from_secs(2))), batch[..8], "round {round}");
        assert_eq!(pool.available(), free - 8, "round {round}: the 8 sent are the kernel's until the next send");
    }
    settle(&mut pm, &mut pool);
    assert_eq!(pool.available(), free);
    assert_eq!(pm.counters().unwrap().tx_ring_full, 5 * 12);
}

#[test]
fn af_xdp_refusals_name_the_interface_and_the_reason() {
    let ns = Netns::new("d");
    let config = AfXdpConfig::default();
    let mut pool = pool_for(3, &config, 0);
    let missing = ns.open("nosuch", config.clone(), &mut pool).err().expect("no such interface");
    assert!(missing.to_string().starts_with("af_xdp nosuch: if_nametoindex"), "{missing}");

    let odd = AfXdpConfig { rx_frames: 100, ..AfXdpConfig::default() };
    let e = ns.open("lo", odd, &mut pool).err().expect("rx_frames must be a power of two");
    assert!(e.to_string().contains("rx_frames 100"), "{e}");

    // One program per interface: a second port finds it taken in both modes.
    ns.veth("vg", "vh", &[]);
    let mut first = ns.open("vg", config.clone(), &mut pool).unwrap();
    let lent = pool.capacity() - pool.available();
    let e = ns.open("vg", config.clone(), &mut pool).err().expect("the interface already has a program");
    assert_eq!(pool.capacity() - pool.available(), lent, "a refused port takes no buffers");
    let text = e.to_string();
    assert!(text.starts_with("af_xdp vg: bpf(BPF_LINK_CREATE)") && text.contains("native mode: ") && text.contains("skb mode: "), "{text}");
    assert!(text.contains("os error"), "the errno is named: {text}");

    ns.veth("vi", "vj", &["numrxqueues", "2", "numtxqueues", "2"]);
    let e = ns.open("vi", config.clone(), &mut pool).err().expect("two rx queues");
    assert!(e.to_string().contains("2 rx queues"), "{e}");
    assert!(!ns.has_xdp("vi"), "a refused port leaves nothing attached");

    ns.veth("vk", "vl", &[]);
    ns.ip(&["link", "set", "dev", "vk", "mtu", "1800"]);
    let e = ns.open("vk", config.clone(), &mut pool).err().expect("frames of an 1800-byte MTU exceed a chunk");
    assert!(e.to_string().contains("MTU 1800"), "{e}");

    let mut small = PacketPool::new(100);
    let e = ns.open("vl", config.clone(), &mut small).err().expect("a pool too small for the fill ring");
    assert!(e.to_string().contains("100 free buffers") && e.to_string().contains("512 rx_frames"), "{e}");

    // A port shares one pool's buffers with the kernel: another pool's offsets would name other
    // memory.
    let mut other = PacketPool::new(8);
    let e = first.rx_batch(&mut other, &mut Vec::new(), 8).expect_err("a foreign pool");
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().starts_with("af_xdp vg: a packet pool other than"), "{e}");
}

#[test]
fn af_xdp_forwards_a_received_frame_from_where_the_kernel_wrote_it() {
    // Two links, one pool: what arrives on one port leaves by the other as the same buffer, the
    // way a worker forwards between AF_XDP ports.
    let ns = Netns::new("f");
    ns.veth("vo", "vp", &[]);
    ns.veth("vq", "vr", &[]);
    let config = AfXdpConfig::default();
    let mut pool = pool_for(4, &config, 64);
    let mut wire_in = ns.open("vo", config.clone(), &mut pool).unwrap();
    let mut port_in = ns.open("vp", config.clone(), &mut pool).unwrap();
    let mut port_out = ns.open("vq", config.clone(), &mut pool).unwrap();
    let mut wire_out = ns.open("vr", config, &mut pool).unwrap();
    let free = pool.available();
    let sent = frames(40, 0);
    assert_eq!(send(&mut wire_in, &mut pool, &sent), 40);
    let mut through = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut batch = Vec::new();
    while through.len() < 40 && Instant::now() < deadline {
        port_in.rx_batch(&mut pool, &mut batch, 64).unwrap();
        // The kernel's own frames on a link coming up (IPv6 router solicitations, MLD) are
        // not the test's.
        for p in std::mem::take(&mut batch) {
            if p.data()[12..14] == TEST_ETHERTYPE {
                batch.push(p);
            } else {
                pool.give(p);
            }
        }
        for p in batch.iter_mut() {
            // Rewrite in place, as the pipeline does: the source MAC's last byte.
            p.data_mut()[11] = 0x77;
        }
        through.extend(batch.iter().map(|p| p.data()[14..18].to_vec()));
        let n = batch.len();
        assert_eq!(port_out.tx_batch(&mut batch, &mut pool).unwrap(), n);
    }
    assert_eq!(through.len(), 40);
    let got = bytes(receive(&mut wire_out, &mut pool, 40, Duration::from_secs(2)));
    let want: Vec<Vec<u8>> = sent
        .into_iter()
        .map(|mut f| {
            f[11] = 0x77;
            f
        })
        .collect();
    assert_eq!(got, want, "every frame, rewritten, whole and in order");
    for p in [&mut wire_in, &mut port_out] {
        settle(p, &mut pool);
    }
    assert_eq!(pool.available(), free, "every buffer is back in the pool");
}

#[test]
fn a_split_port_receives_on_a_packet_ring_and_sends_through_af_xdp() {
    let ns = Netns::new("g");
    ns.veth("vs", "vt", &[]);
    let config = AfXdpConfig::default();
    let mut pool = pool_for(2, &config, 64);
    let tx = ns.inside(|| AfXdpPort::transmitter("vs", &config, &mut pool)).unwrap();
    assert_eq!((tx.binding(), tx.zero_copy()), (None, false), "no XDP program; veth sends in copy mode");
    let rx = ns.inside(|| AfPacketPort::receiver("vs", &AfPacketConfig::default())).unwrap().stamp_in_port(3);
    let mut split = SplitPort::new(Box::new(rx), Box::new(tx));
    assert!(!ns.has_xdp("vs"), "frames must reach the packet ring, not an XSK");
    let mut peer = ns.open("vt", config, &mut pool).unwrap();
    let free = pool.available();

    // The receiver alone has no tx socket: it refuses to send, and keeps no buffer.
    let mut receiver = ns.inside(|| AfPacketPort::receiver("vs", &AfPacketConfig::default())).unwrap();
    let mut batch = vec![pool.take().unwrap()];
    let e = receiver.tx_batch(&mut batch, &mut pool).expect_err("a receiver does not send");
    assert_eq!(e.to_string(), "af_packet vs: opened to receive only");
    assert!(batch.is_empty() && pool.available() == free);
    drop(receiver);

    let sent = frames(30, 0);
    assert_eq!(send(&mut split, &mut pool, &sent), 30);
    assert_eq!(bytes(receive(&mut peer, &mut pool, 30, Duration::from_secs(2))), sent);
    let back = frames(30, 50);
    assert_eq!(send(&mut peer, &mut pool, &back), 30);
    let got = receive(&mut split, &mut pool, 30, Duration::from_secs(2));
    assert!(got.iter().all(|&(_, port)| port == 3), "the receiver stamps its port");
    assert_eq!(bytes(got), back);
    assert!(receive(&mut split, &mut pool, 1, Duration::from_millis(100)).is_empty(), "its own tx came back on its rx");
    settle(&mut split, &mut pool);
    settle(&mut peer, &mut pool);
    assert_eq!(pool.available(), free, "every buffer is back in the pool");
}
