// An XDP program for a PEARL plugin VR (`plugin: {xdp: wire.o}`): a cable between the VR's
// interfaces 0 and 1, counting the frames from each in array map `frames`. In PEARL an XDP
// program's ifindex is the VR interface's index (the configuration's order): ingress_ifindex
// says where a frame came in, and bpf_redirect(i, 0) sends it out of interface i.
//
//     clang -O2 -g -target bpf -c wire.c -o wire.o

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} frames SEC(".maps");

SEC("xdp")
int wire(struct xdp_md *ctx) {
    __u32 in = ctx->ingress_ifindex;
    __u64 *count = bpf_map_lookup_elem(&frames, &in);
    if (!count)
        return XDP_DROP;
    __sync_fetch_and_add(count, 1);
    return bpf_redirect(1 - in, 0);
}

char LICENSE[] SEC("license") = "GPL";
