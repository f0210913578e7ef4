// An IPv4 router as an XDP program for a PEARL plugin VR (`plugin: {xdp: router.o}`): the
// longest-prefix match of the destination in LPM-trie map `routes`, whose values the owner
// writes through pearld's API (`pearlctl plugin table VR routes set ...`): the VR interface to
// leave by and the MACs to write. TTL −1 with an incremental checksum update (RFC 1624).
// What it does not forward — ARP, TTL 1, no route, its own addresses — it passes to the VR's
// kernel (XDP_PASS), which answers as Linux does. Map `stats` counts forwarded (0) and
// passed (1) frames.
//
//     clang -O2 -g -target bpf -c router.c -o router.o

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct route_key {
    __u32 prefixlen;
    __u8 addr[4];
};

struct next_hop {
    __u32 interface;
    __u8 dst[6];
    __u8 src[6];
};

struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    // Room for a full BGP table (about a million IPv4 routes); entries take memory as written.
    __uint(max_entries, 1 << 21);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct route_key);
    __type(value, struct next_hop);
} routes SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} stats SEC(".maps");

static __always_inline int count(__u32 what, int action) {
    __u64 *n = bpf_map_lookup_elem(&stats, &what);
    if (n)
        __sync_fetch_and_add(n, 1);
    return action;
}

SEC("xdp")
int router(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + sizeof(*eth);
    if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->ttl <= 1)
        return count(1, XDP_PASS);
    struct route_key key = {.prefixlen = 32};
    __builtin_memcpy(key.addr, &ip->daddr, 4);
    struct next_hop *hop = bpf_map_lookup_elem(&routes, &key);
    if (!hop)
        return count(1, XDP_PASS);
    ip->ttl--;
    __u32 sum = (__u32)ip->check + bpf_htons(0x0100);
    ip->check = (__u16)(sum + (sum >> 16));
    __builtin_memcpy(eth->h_dest, hop->dst, 6);
    __builtin_memcpy(eth->h_source, hop->src, 6);
    count(0, 0);
    return bpf_redirect(hop->interface, 0);
}

char LICENSE[] SEC("license") = "GPL";
