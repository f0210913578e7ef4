/* The LPM example in C: an IPv4 router routing by longest-prefix match in the VR's own table
 * (route_v4_batch, which routed keeps in step with the VR's kernel), TTL - 1 with the checksum
 * updated incrementally (RFC 1624), MACs rewritten; what a router's kernel must answer (ARP,
 * its own addresses, TTL expiry, no route, unresolved neighbours, options) goes to the kernel. */
#include "pearl_plugin.h"

PEARL_PLUGIN(262144, process)

/* Frames looked up together: in WebAssembly a plugin pays fuel for every byte it clears, so the
 * arrays stay small; natively each lookup is a call to pearld, so they take a call's most. */
#ifdef __wasm__
#define CHUNK 32
#else
#define CHUNK PEARL_CALL_BATCH
#endif

/* The destination of a packet this router forwards itself (unicast IPv4, no options, TTL left),
 * or 0, which no router forwards to: it marks what goes to the kernel. */
static uint32_t destination(const uint8_t *f, uint32_t len) {
    if (len < 34 || f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 || f[22] <= 1 || (f[0] & 1))
        return 0;
    return (uint32_t)f[30] << 24 | (uint32_t)f[31] << 16 | (uint32_t)f[32] << 8 | f[33];
}

static void decrement_ttl(uint8_t *ip) {
    ip[8] -= 1;
    uint32_t old = (uint32_t)ip[10] << 8 | ip[11];
    uint32_t sum = (~old & 0xffff) + (~0x0100u & 0xffff);
    sum = (sum & 0xffff) + (sum >> 16);
    uint16_t csum = (uint16_t)~((sum & 0xffff) + (sum >> 16));
    ip[10] = csum >> 8;
    ip[11] = csum & 0xff;
}

static void process(struct pearl_batch *b) {
    uint32_t dsts[CHUNK];
    uint8_t answers[CHUNK * PEARL_ROUTE_ANSWER_LEN];
    for (uint32_t first = 0; first < b->count; first += CHUNK) {
        uint32_t n = b->count - first < CHUNK ? b->count - first : CHUNK;
        for (uint32_t k = 0; k < n; k++)
            dsts[k] = destination(pearl_frame(b, first + k), pearl_len(b, first + k));
        pearl_route_v4_batch(dsts, (int32_t)n, answers);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = first + k;
            const uint8_t *a = answers + k * PEARL_ROUTE_ANSWER_LEN;
            int32_t interface = (int32_t)((uint32_t)a[0] | (uint32_t)a[1] << 8 | (uint32_t)a[2] << 16 | (uint32_t)a[3] << 24);
            if (dsts[k] == 0 || interface < 0 || interface == pearl_interface(b, i)) {
                pearl_to_kernel(b, i);
                continue;
            }
            uint8_t *f = pearl_frame(b, i);
            for (int m = 0; m < 12; m++)
                f[m] = a[4 + m];
            decrement_ttl(f + 14);
            pearl_send(b, i, (uint16_t)interface);
        }
    }
}
