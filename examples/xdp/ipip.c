// An IP-in-IP tunnel end (RFC 2003) as an XDP program that moves its frames' heads: IPv4 frames
// from interface 0 leave by interface 1 inside an outer IPv4 header (protocol 4) from the
// tunnel's local address to its remote one, which its owner sets in the `.rodata` table as a
// libbpf skeleton sets them before loading; IP-in-IP frames from interface 1 leave by
// interface 0 without their outer header (saying so with bpf_printk, which PEARL writes to its
// log). Anything else crosses as on a wire.
//
//     clang -O2 -g -target bpf -c ipip.c -o ipip.o

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Network byte order, as they appear in the header (10.9.0.1 and 10.9.0.2 until the owner says).
const volatile __u32 local_address = 0x0100090a;
const volatile __u32 remote_address = 0x0200090a;
__u64 encapsulated, decapsulated;

static __always_inline __u16 ipv4_checksum(struct iphdr *ip) {
    __u32 sum = 0;
    __u16 *words = (__u16 *)ip;
#pragma unroll
    for (int i = 0; i < (int)sizeof(*ip) / 2; i++)
        sum += words[i];
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return ~sum;
}

static __always_inline int encapsulate(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *inner = (void *)(eth + 1);
    if ((void *)(inner + 1) > end)
        return XDP_DROP;
    __u16 inner_len = bpf_ntohs(inner->tot_len);
    struct ethhdr saved = *eth;
    if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
        return XDP_DROP;
    data = (void *)(long)ctx->data;
    end = (void *)(long)ctx->data_end;
    eth = data;
    struct iphdr *outer = (void *)(eth + 1);
    if ((void *)(outer + 1) > end)
        return XDP_DROP;
    *eth = saved;
    outer->version = 4;
    outer->ihl = 5;
    outer->tos = 0;
    outer->tot_len = bpf_htons(inner_len + sizeof(struct iphdr));
    outer->id = 0;
    outer->frag_off = bpf_htons(0x4000);
    outer->ttl = 64;
    outer->protocol = IPPROTO_IPIP;
    outer->check = 0;
    outer->saddr = local_address;
    outer->daddr = remote_address;
    outer->check = ipv4_checksum(outer);
    __sync_fetch_and_add(&encapsulated, 1);
    return bpf_redirect(1, 0);
}

static __always_inline int decapsulate(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *outer = (void *)(eth + 1);
    if ((void *)(outer + 1) > end || outer->ihl != 5)
        return XDP_DROP;
    struct ethhdr saved = *eth;
    if (bpf_xdp_adjust_head(ctx, (int)sizeof(struct iphdr)))
        return XDP_DROP;
    data = (void *)(long)ctx->data;
    end = (void *)(long)ctx->data_end;
    eth = data;
    if ((void *)(eth + 1) > end)
        return XDP_DROP;
    *eth = saved;
    __sync_fetch_and_add(&decapsulated, 1);
    bpf_printk("ipip: took the outer header off a packet of %u bytes", (__u32)((long)end - (long)data));
    return bpf_redirect(0, 0);
}

SEC("xdp")
int ipip(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = (void *)(eth + 1);
    int ipv4 = (void *)(ip + 1) <= end && eth->h_proto == bpf_htons(ETH_P_IP);
    if (ctx->ingress_ifindex == 0 && ipv4)
        return encapsulate(ctx);
    if (ctx->ingress_ifindex == 1 && ipv4 && ip->protocol == IPPROTO_IPIP)
        return decapsulate(ctx);
    return bpf_redirect(ctx->ingress_ifindex == 0 ? 1 : 0, 0);
}

char LICENSE[] SEC("license") = "GPL";
