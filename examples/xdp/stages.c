// A dispatcher chaining XDP programs by tail call (bpf_tail_call), as larger XDP programs are
// built: `dispatch` hands IPv4 frames to the program in slot 0 of the program array `stages`
// and every other frame to slot 1. Both slots start with `cross` (a wire between interfaces 0
// and 1); the owner may point a slot at `drop_all`, or at nothing, with `pearlctl plugin table
// VR stages` (programs are numbered in the object's order: dispatch 0, cross 1, drop_all 2).
// A frame whose slot is empty stays with `dispatch`, which drops it and says so with
// bpf_printk (four arguments: bpf_trace_vprintk).
//
//     clang -O2 -g -target bpf -c stages.c -o stages.o

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

int cross(struct xdp_md *ctx);
int drop_all(struct xdp_md *ctx);

struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 2);
    __uint(key_size, sizeof(__u32));
    __array(values, int(void *));
} stages SEC(".maps") = {
    .values = {[0] = (void *)&cross, [1] = (void *)&cross},
};

// Frames each program decided: dispatch (empty slot), cross, drop_all.
__u64 decided[3];

SEC("xdp")
int dispatch(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return XDP_DROP;
    __u32 slot = eth->h_proto == bpf_htons(ETH_P_IP) ? 0 : 1;
    bpf_tail_call(ctx, &stages, slot);
    __sync_fetch_and_add(&decided[0], 1);
    bpf_printk("dispatch: slot %u is empty: dropped a frame of %u bytes from interface %u, type %x", slot,
               (__u32)(end - data), ctx->ingress_ifindex, bpf_ntohs(eth->h_proto));
    return XDP_DROP;
}

SEC("xdp")
int cross(struct xdp_md *ctx) {
    __sync_fetch_and_add(&decided[1], 1);
    return bpf_redirect(ctx->ingress_ifindex == 0 ? 1 : 0, 0);
}

SEC("xdp")
int drop_all(struct xdp_md *ctx) {
    __sync_fetch_and_add(&decided[2], 1);
    return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
