//! AF_PACKET and TAP ports on real interfaces (needs root). Every test makes its own links and
//! namespaces, named `pt<pid><letter>`, and removes them however it ends.

use pearl_dataplane::packet::{Packet, PacketPool};
use pearl_dataplane::port::steering::{program, Steering};
use pearl_dataplane::port::{AfPacketConfig, AfPacketPort, Fanout, Port, TapPort};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An EtherType reserved for local experiments: the kernel's own chatter on a fresh link
/// (IPv6 router solicitations, MLD) never carries it.
const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];
/// Every test frame's source MAC: what tells them from the kernel's own frames on the link.
const TEST_SOURCE: [u8; 6] = [0x02, 0, 0, 0, 0, 1];

fn name(suffix: &str) -> String {
    format!("pt{}{suffix}", std::process::id())
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

fn must_ip(args: &[&str]) {
    assert!(ip(args), "ip {} failed", args.join(" "));
}

/// Deletes a link (and with it a veth peer) when dropped.
struct Link(String);

impl Drop for Link {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).stderr(Stdio::null()).status();
    }
}

/// Deletes a network namespace when dropped.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// A veth pair, both ends up.
fn veth(a: &str, b: &str) -> Link {
    must_ip(&["link", "add", a, "type", "veth", "peer", "name", b]);
    let link = Link(a.to_owned());
    must_ip(&["link", "set", a, "up"]);
    must_ip(&["link", "set", b, "up"]);
    link
}

/// Test frames: broadcast, our EtherType, index in the payload, lengths from 60 to 1514.
fn frames(count: usize, first: usize) -> Vec<Vec<u8>> {
    (first..first + count)
        .map(|i| {
            let len = [60, 61, 100, 1000, 1514][i % 5];
            let mut f: Vec<u8> = (0..len).map(|b| (b + i * 3) as u8).collect();
            f[0..6].fill(0xff);
            f[6..12].copy_from_slice(&TEST_SOURCE);
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
/// returns the test frames in arrival order.
fn receive(port: &mut dyn Port, pool: &mut PacketPool, want: usize, limit: Duration) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut batch = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        let fd = port.rx_fd().expect("a device port has an rx fd");
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut pfd, 1, 10) };
        port.rx_batch(pool, &mut batch, 64).unwrap();
        got.extend(batch.iter().filter(|p| p.data()[6..12] == TEST_SOURCE).map(|p| p.data().to_vec()));
        pool.give_all(&mut batch);
    }
    got
}

#[test]
fn af_packet_moves_a_batch_across_a_veth_pair() {
    let (a, b) = (name("a"), name("b"));
    let _link = veth(&a, &b);
    let mut pa = AfPacketPort::open(&a).unwrap();
    let mut pb = AfPacketPort::open(&b).unwrap().stamp_in_port(4);
    let mut pool = PacketPool::new(256);

    let sent = frames(32, 0);
    assert_eq!(send(&mut pa, &mut pool, &sent), 32);
    assert_eq!(pool.available(), 256, "tx returns every buffer");
    let got = receive(&mut pb, &mut pool, 32, Duration::from_secs(2));
    assert_eq!(got, sent);

    // And back, checking that the stamp is applied and that nobody hears its own frames.
    let back = frames(8, 100);
    assert_eq!(send(&mut pb, &mut pool, &back), 8);
    assert_eq!(receive(&mut pa, &mut pool, 8, Duration::from_secs(2)), back);
    assert!(receive(&mut pa, &mut pool, 1, Duration::from_millis(100)).is_empty(), "a's own tx came back on a's rx");
    assert!(receive(&mut pb, &mut pool, 1, Duration::from_millis(100)).is_empty(), "b's own tx came back on b's rx");
    let mut batch = Vec::new();
    send(&mut pa, &mut pool, &frames(1, 200));
    let deadline = Instant::now() + Duration::from_secs(2);
    while batch.is_empty() && Instant::now() < deadline {
        pb.rx_batch(&mut pool, &mut batch, 1).unwrap();
        batch.retain(|p| p.data()[6..12] == TEST_SOURCE);
    }
    assert_eq!(batch.first().map(|p| p.in_port), Some(4));
    pool.give_all(&mut batch);

    let ca = pa.counters().unwrap();
    assert_eq!((ca.tx_packets, ca.tx_ring_full, ca.tx_bad_length, ca.rx_ring_drops), (33, 0, 0, 0));
}

/// IPv4 UDP frames from `TEST_SOURCE`, one flow each (source port `i`).
fn udp_flows(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let mut f = vec![0xffu8; 6];
            f.extend(TEST_SOURCE);
            f.extend([0x08, 0x00, 0x45, 0, 0, 32, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1]);
            f.extend((i as u16 + 1000).to_be_bytes());
            f.extend([0x30, 0x39, 0, 12, 0, 0, 0, 0, 0, 0]);
            f
        })
        .collect()
}

/// A fanout group steered by a program: frames reach only the sockets (workers) the program
/// names, and a new program moves them without reopening anything.
#[test]
fn af_packet_fanout_goes_where_the_steering_program_says() {
    let (a, b) = (name("s"), name("t"));
    let _link = veth(&a, &b);
    let mut tx = AfPacketPort::open(&a).unwrap();
    let group = (std::process::id() as u16) ^ 0x5a5a;
    let config = AfPacketConfig { fanout_group: Some(group), fanout: Fanout::Program, ..AfPacketConfig::default() };
    // Joined in order: socket i is worker i.
    let mut workers: Vec<AfPacketPort> = (0..3).map(|_| AfPacketPort::with_config(&b, &config).unwrap()).collect();
    let mut pool = PacketPool::new(512);
    let flows = udp_flows(60);
    let mut round = |workers: &mut Vec<AfPacketPort>, steering: &[(usize, u64)]| -> Vec<usize> {
        workers[0].steer(&program(&Steering { workers: steering.to_vec(), by_flow: true })).unwrap();
        assert_eq!(send(&mut tx, &mut pool, &flows), flows.len());
        std::thread::sleep(Duration::from_millis(100));
        workers.iter_mut().map(|w| receive(w, &mut pool, flows.len(), Duration::from_millis(150)).len()).collect()
    };
    assert_eq!(round(&mut workers, &[(1, 1)]), [0, 60, 0]);
    let spread = round(&mut workers, &[(0, 1), (2, 1)]);
    assert_eq!((spread[1], spread[0] + spread[2]), (0, 60), "{spread:?}");
    assert!(spread[0] > 10 && spread[2] > 10, "60 flows over two workers: {spread:?}");
}

#[test]
fn af_packet_rings_wrap_without_loss_or_reordering() {
    let (a, b) = (name("c"), name("d"));
    let _link = veth(&a, &b);
    // Tiny rings (32 rx slots) so that a few hundred frames go round each several times.
    let small = AfPacketConfig { rx_frames: 32, rx_super_frames: 15, tx_frames: 40, ..AfPacketConfig::default() };
    let mut pa = AfPacketPort::with_config(&a, &small).unwrap();
    let mut pb = AfPacketPort::with_config(&b, &small).unwrap();
    let mut pool = PacketPool::new(64);
    let mut received = Vec::new();
    for round in 0..25 {
        let sent = frames(16, round * 16);
        assert_eq!(send(&mut pa, &mut pool, &sent), 16);
        let got = receive(&mut pb, &mut pool, 16, Duration::from_secs(2));
        assert_eq!(got.len(), 16, "round {round}");
        received.extend(got);
    }
    assert_eq!(received, frames(400, 0));
    assert_eq!(pb.counters().unwrap().rx_ring_drops, 0);
}

#[test]
fn af_packet_frames_of_both_rings_arrive_in_the_order_they_were_sent() {
    let (a, b) = (name("j"), name("k"));
    let _link = veth(&a, &b);
    // Jumbo frames (an MTU of 9000 on the pair: exact frames, without GSO) take the long frames'
    // ring, the others the short one; they alternate so both rings hold frames at once.
    must_ip(&["link", "set", &a, "mtu", "9000"]);
    must_ip(&["link", "set", &b, "mtu", "9000"]);
    let mut pa = AfPacketPort::open(&a).unwrap();
    let mut pb = AfPacketPort::open(&b).unwrap();
    let mut pool = PacketPool::with_large(128, 64);
    let sent: Vec<Vec<u8>> = frames(60, 0)
        .into_iter()
        .enumerate()
        .map(|(i, mut f)| {
            if i % 3 != 1 {
                f.resize(4000 + i, i as u8);
            }
            f
        })
        .collect();
    let mut batch: Vec<Packet> = sent
        .iter()
        .map(|f| {
            let mut p = pool.take_for(f.len()).expect("the pool has room for the batch");
            p.buffer_mut()[..f.len()].copy_from_slice(f);
            p.set_len(f.len());
            p
        })
        .collect();
    assert_eq!(pa.tx_batch(&mut batch, &mut pool).unwrap(), 60);
    // Nothing read until all arrived, so that both rings fill.
    std::thread::sleep(Duration::from_millis(200));
    let got = receive(&mut pb, &mut pool, 60, Duration::from_secs(2));
    assert_eq!(got.len(), 60);
    let order: Vec<u32> = got.iter().map(|f| u32::from_be_bytes(f[14..18].try_into().unwrap())).collect();
    assert_eq!(order, (0..60).collect::<Vec<u32>>(), "arrival order across the two rings");
    assert_eq!(got, sent);
    let c = pb.counters().unwrap();
    assert_eq!((c.rx_too_long, c.rx_ring_drops), (0, 0));
}

#[test]
fn af_packet_receives_vlan_tagged_frames_with_their_tags() {
    let (a, b) = (name("v"), name("w"));
    let _link = veth(&a, &b);
    let mut pa = AfPacketPort::open(&a).unwrap();
    let mut pb = AfPacketPort::open(&b).unwrap();
    let mut pool = PacketPool::new(16);
    // The receiving kernel takes the outer tag out of the frame before a packet socket sees it:
    // one 802.1Q tag, and an 802.1ad tag over an 802.1Q one (only the outer is taken out).
    let tagged = |tags: &[[u8; 4]], i: u8| {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&TEST_SOURCE);
        tags.iter().for_each(|t| f.extend_from_slice(t));
        f.extend_from_slice(&TEST_ETHERTYPE);
        f.extend((0..100).map(|b: u8| b ^ i));
        f
    };
    let sent = vec![tagged(&[[0x81, 0x00, 0x20, 0x07]], 1), tagged(&[[0x88, 0xa8, 0x00, 0x64], [0x81, 0x00, 0x00, 0x05]], 2)];
    assert_eq!(send(&mut pa, &mut pool, &sent), 2);
    assert_eq!(receive(&mut pb, &mut pool, 2, Duration::from_secs(2)), sent, "frames arrive as they were sent, tags in place");
}

#[test]
fn af_packet_drops_frames_it_cannot_send_and_keeps_going() {
    let (a, b) = (name("e"), name("f"));
    let _link = veth(&a, &b);
    let mut pa = AfPacketPort::open(&a).unwrap();
    let mut pb = AfPacketPort::open(&b).unwrap();
    let mut pool = PacketPool::new(8);
    // Shorter than an Ethernet header: refused by the port. Above the 1500-byte MTU: taken into
    // the ring, then refused by the kernel, which must skip the slot rather than stall on it.
    let mut runt = frames(1, 0).remove(0);
    runt.truncate(10);
    let mut jumbo = frames(1, 0).remove(0);
    jumbo.resize(2048, 0);
    assert_eq!(send(&mut pa, &mut pool, &[runt, jumbo]), 1);
    assert_eq!(pool.available(), 8);
    assert_eq!(pa.counters().unwrap().tx_bad_length, 1);
    let good = frames(4, 1);
    assert_eq!(send(&mut pa, &mut pool, &good), 4);
    assert_eq!(receive(&mut pb, &mut pool, 5, Duration::from_millis(500)), good);
}

#[test]
fn af_packet_errors_name_the_interface_and_call() {
    let missing = name("x");
    let e = AfPacketPort::open(&missing).err().expect("no such interface");
    assert!(e.to_string().contains(&format!("af_packet {missing}: if_nametoindex")), "{e}");
    let e = AfPacketPort::with_config("lo", &AfPacketConfig { rx_frames: 0, ..AfPacketConfig::default() }).err().unwrap();
    assert!(e.to_string().contains("rx_frames"), "{e}");
}

#[test]
fn tap_exchanges_frames_with_the_kernel() {
    let t = name("k");
    let mut tap = TapPort::open(&t).unwrap().stamp_in_port(1);
    let _link = Link(t.clone());
    assert_eq!(tap.ifname(), t);
    must_ip(&["link", "set", &t, "up"]);
    let mut kernel_side = AfPacketPort::open(&t).unwrap();
    let mut pool = PacketPool::new(128);

    // Sent out of the device by the kernel: read from the TAP.
    let out = frames(16, 0);
    assert_eq!(send(&mut kernel_side, &mut pool, &out), 16);
    assert_eq!(receive(&mut tap, &mut pool, 16, Duration::from_secs(2)), out);

    // Written to the TAP: received by the kernel on the device.
    let inbound = frames(16, 50);
    assert_eq!(send(&mut tap, &mut pool, &inbound), 16);
    assert_eq!(receive(&mut kernel_side, &mut pool, 16, Duration::from_secs(2)), inbound);
    assert_eq!(tap.counters().tx_packets, 16);
    assert_eq!(pool.available(), 128);
}

#[test]
fn tap_opens_inside_a_named_namespace() {
    let (ns, t) = (name("n"), name("u"));
    must_ip(&["netns", "add", &ns]);
    let _ns = Netns(ns.clone());
    let mut tap = TapPort::open_in_netns(&ns, &t).unwrap();
    assert!(ip(&["-n", &ns, "link", "show", "dev", &t]), "the TAP is in {ns}");
    assert!(!ip(&["link", "show", "dev", &t]), "the TAP is not in the root namespace");
    assert!(tap.rx_fd().is_some());

    must_ip(&["-n", &ns, "link", "set", &t, "up"]);
    let mut pool = PacketPool::new(4);
    assert_eq!(send(&mut tap, &mut pool, &frames(2, 0)), 2);
    drop(tap);
    assert!(!ip(&["-n", &ns, "link", "show", "dev", &t]), "a non-persistent TAP goes with its fd");

    let e = TapPort::open_in_netns(&name("m"), &t).err().expect("no such namespace");
    assert!(e.to_string().contains(&format!("/run/netns/{}", name("m"))), "{e}");
}
