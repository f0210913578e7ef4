// An XDP program written the way libbpf programs usually are, with global variables and a
// function clang keeps apart: it sends each frame back with its MAC addresses swapped, out of
// the interface its owner set in `out_interface` (a `const volatile` setting, as libbpf
// skeletons set them before loading; in PEARL the owner writes it through the `.rodata` table),
// and counts frames in `.bss` and swaps in `.data`. Each global data section is one of the VR's
// tables (`pearlctl plugin table VR .bss ...`).
//
//     clang -O2 -g -target bpf -c reflect.c -o reflect.o

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

const volatile __u32 out_interface = 0;
__u64 frames_seen;
__u64 swaps = 1000;

static __attribute__((noinline)) int swap_macs(void *data, void *end) {
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return -1;
    unsigned char tmp[ETH_ALEN];
    __builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
    __builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
    __builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
    swaps++;
    return 0;
}

SEC("xdp")
int reflect(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    __sync_fetch_and_add(&frames_seen, 1);
    if (swap_macs(data, end) < 0)
        return XDP_DROP;
    return bpf_redirect(out_interface, 0);
}

char LICENSE[] SEC("license") = "GPL";
