/* Write a PEARL plugin VR in C. A plugin is a WebAssembly module that pearld runs in its data
 * plane: it receives the VR's frames in batches and decides each one (send out of one of the
 * VR's interfaces, as rewritten; hand to the VR's kernel; drop). docs/PLUGINS.md describes the
 * interface; these are its constants and imports, the same as the Rust SDK's abi.rs (a test
 * there checks that they agree). Build with:
 *
 *   clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -o wire.wasm wire.c
 *
 * or natively (cc -O2 -o wire wire.c) as a process plugin, for plugin.process.
 *
 *   #include "pearl_plugin.h"
 *   PEARL_PLUGIN(262144, process)
 *   static void process(struct pearl_batch *b) {
 *       for (uint32_t i = 0; i < b->count; i++)
 *           pearl_send(b, i, 1 - pearl_interface(b, i));
 *   }
 */
#ifndef PEARL_PLUGIN_H
#define PEARL_PLUGIN_H

#include <stdint.h>

/* The batch area: a header, MAX_BATCH descriptors, then the frames. Little-endian. */
#define PEARL_HEADER_LEN 16
#define PEARL_HEADER_COUNT 0
#define PEARL_HEADER_TIME_NS 8
#define PEARL_DESCRIPTOR_LEN 24
#define PEARL_DESC_OFFSET 0
#define PEARL_DESC_LEN 4
#define PEARL_DESC_CAP 8
#define PEARL_DESC_INTERFACE 12
#define PEARL_DESC_VERDICT 14
#define PEARL_DESC_COPIES 16
#define PEARL_MAX_BATCH 256
#define PEARL_FRAMES_AT 6160
#define PEARL_HEADROOM 64

/* Verdicts; a frame left undecided is dropped. */
#define PEARL_VERDICT_DROP 0
#define PEARL_VERDICT_SLOW 1
#define PEARL_VERDICT_SEND 0x8000

/* Answers of the route imports. */
#define PEARL_ROUTE_NONE (-1)
#define PEARL_ROUTE_UNRESOLVED (-2)
#define PEARL_ROUTE_LOCAL (-3)
#define PEARL_ROUTE_ANSWER_LEN 16

/* Tables (plugin.tables in the configuration). */
#define PEARL_TABLE_NONE (-1)
#define PEARL_TABLE_FULL (-2)
#define PEARL_TABLE_TOO_LONG (-3)
#define PEARL_TABLE_KEY_MAX 64
#define PEARL_TABLE_VALUE_MAX 1024

/* A process plugin's shared memory (plugin.process): see abi.rs. */
#define PEARL_PROCESS_CONTROL_LEN 4096
#define PEARL_PROCESS_AREA_SIZE 1048576
#define PEARL_CTL_REQUEST 0
#define PEARL_CTL_DONE 4
#define PEARL_CTL_COUNT 8
#define PEARL_CTL_ATTACHED 12

#ifdef __wasm__
/* The WebAssembly host's imports. */
#define PEARL_IMPORT(name) __attribute__((import_module("pearl"), import_name(#name)))

/* The VR's route to an IPv4 address (host order): >= 0 is the VR interface to send by, with
 * 12 bytes written at out (the next hop's MAC, then the interface's own); or a ROUTE code. */
PEARL_IMPORT(route_v4) int32_t pearl_route_v4(uint32_t addr, uint8_t *out);
/* The same for the 16-byte IPv6 address (network order) at addr. */
PEARL_IMPORT(route_v6) int32_t pearl_route_v6(const uint8_t *addr, uint8_t *out);
/* count (at most MAX_BATCH) IPv4 addresses at once, the lookups overlapped: for each, 16 bytes
 * at out: the answer (int32), then the 12 bytes of MACs. */
PEARL_IMPORT(route_v4_batch) void pearl_route_v4_batch(const uint32_t *addrs, int32_t count, uint8_t *out);
/* A table's handle by name (TABLE_NONE if the configuration declares none so named). */
PEARL_IMPORT(table_find) int32_t pearl_table_find(const char *name, int32_t name_len);
/* The value's whole length (at most cap bytes of it copied to out), or TABLE_NONE. */
PEARL_IMPORT(table_get) int32_t pearl_table_get(int32_t table, const void *key, int32_t key_len, void *out, int32_t cap);
/* 0, TABLE_FULL or TABLE_TOO_LONG. */
PEARL_IMPORT(table_set) int32_t pearl_table_set(int32_t table, const void *key, int32_t key_len, const void *value, int32_t value_len);
/* 1 removed, 0 absent. */
PEARL_IMPORT(table_remove) int32_t pearl_table_remove(int32_t table, const void *key, int32_t key_len);
#endif

/* A batch as pearld wrote it into the area. */
struct pearl_batch {
    uint8_t *area;
    uint32_t count;
};

static inline uint8_t *pearl_desc(const struct pearl_batch *b, uint32_t i) {
    return b->area + PEARL_HEADER_LEN + i * PEARL_DESCRIPTOR_LEN;
}

/* Frame i (Ethernet header first), rewritable in place up to pearl_capacity: PEARL's
 * read_packet. */
static inline uint8_t *pearl_frame(const struct pearl_batch *b, uint32_t i) {
    return b->area + *(uint32_t *)(pearl_desc(b, i) + PEARL_DESC_OFFSET);
}

static inline uint32_t pearl_len(const struct pearl_batch *b, uint32_t i) {
    return *(uint32_t *)(pearl_desc(b, i) + PEARL_DESC_LEN);
}

static inline uint32_t pearl_capacity(const struct pearl_batch *b, uint32_t i) {
    return *(uint32_t *)(pearl_desc(b, i) + PEARL_DESC_CAP);
}

/* Makes frame i len bytes long (0 if beyond its capacity). */
static inline int pearl_set_len(const struct pearl_batch *b, uint32_t i, uint32_t len) {
    if (len > pearl_capacity(b, i))
        return 0;
    *(uint32_t *)(pearl_desc(b, i) + PEARL_DESC_LEN) = len;
    return 1;
}

/* The VR interface frame i came in on, in the configuration's order. */
static inline uint16_t pearl_interface(const struct pearl_batch *b, uint32_t i) {
    return *(uint16_t *)(pearl_desc(b, i) + PEARL_DESC_INTERFACE);
}

/* When pearld took the batch, in nanoseconds of a monotonic clock. */
static inline uint64_t pearl_time_ns(const struct pearl_batch *b) {
    return *(uint64_t *)(b->area + PEARL_HEADER_TIME_NS);
}

/* Out of VR interface `interface` as the frame stands: PEARL's send_packet. */
static inline void pearl_send(const struct pearl_batch *b, uint32_t i, uint16_t interface) {
    *(uint16_t *)(pearl_desc(b, i) + PEARL_DESC_VERDICT) = PEARL_VERDICT_SEND | (interface & 0x7fff);
}

static inline void pearl_to_kernel(const struct pearl_batch *b, uint32_t i) {
    *(uint16_t *)(pearl_desc(b, i) + PEARL_DESC_VERDICT) = PEARL_VERDICT_SLOW;
}

static inline void pearl_drop(const struct pearl_batch *b, uint32_t i) {
    *(uint16_t *)(pearl_desc(b, i) + PEARL_DESC_VERDICT) = PEARL_VERDICT_DROP;
}

/* A copy also leaves by VR interface `interface` (0-63), besides the verdict's own fate: every
 * copy is the frame as the plugin left it. */
static inline void pearl_also_send(const struct pearl_batch *b, uint32_t i, uint16_t interface) {
    if (interface < 64)
        *(uint64_t *)(pearl_desc(b, i) + PEARL_DESC_COPIES) |= (uint64_t)1 << interface;
}

#ifdef __wasm__
/* Declares the batch area (size bytes) and the entry points: pearl_process calls process with
 * each batch. Define pearl_init yourself (export_name "pearl_init", (char *json, int32_t len)
 * -> int32_t, 0 to accept plugin.config) if the plugin needs its configuration. */
#define PEARL_PLUGIN(size, process)                                                                  \
    static void process(struct pearl_batch *);                                                       \
    static uint8_t pearl_area_bytes[size] __attribute__((aligned(16)));                              \
    __attribute__((export_name("pearl_area"))) int32_t pearl_area(void) {                            \
        return (int32_t)(uintptr_t)pearl_area_bytes;                                                 \
    }                                                                                                \
    __attribute__((export_name("pearl_area_size"))) int32_t pearl_area_size(void) { return size; }  \
    __attribute__((export_name("pearl_process"))) void pearl_process(int32_t count) {                \
        struct pearl_batch b = {pearl_area_bytes, count < PEARL_MAX_BATCH ? (uint32_t)count : PEARL_MAX_BATCH}; \
        process(&b);                                                                                 \
    }
#else
/* Built natively, the same source is a process plugin (plugin.process: [/path/to/it]): main
 * maps the memory pearld shares (PEARL_PLUGIN_SHM), then decides each batch pearld posts, waiting
 * for the next with futex(2). The route and table imports are the WebAssembly host's: a
 * process plugin does not have them. */
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline volatile uint32_t *pearl_ctl(uint8_t *shm, int at) { return (volatile uint32_t *)(shm + at); }

static inline void pearl_futex(volatile uint32_t *word, int op, uint32_t value) {
    syscall(SYS_futex, (uint32_t *)word, op, value, NULL, NULL, 0);
}

static inline int pearl_process_main(void (*process)(struct pearl_batch *)) {
    const char *path = getenv("PEARL_PLUGIN_SHM");
    int fd = path ? open(path, O_RDWR) : -1;
    if (fd < 0)
        return 2;
    uint8_t *shm = mmap(NULL, PEARL_PROCESS_CONTROL_LEN + PEARL_PROCESS_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shm == MAP_FAILED)
        return 2;
    close(fd);
    __atomic_store_n(pearl_ctl(shm, PEARL_CTL_ATTACHED), (uint32_t)getpid(), __ATOMIC_RELEASE);
    uint32_t seen = __atomic_load_n(pearl_ctl(shm, PEARL_CTL_REQUEST), __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t request = __atomic_load_n(pearl_ctl(shm, PEARL_CTL_REQUEST), __ATOMIC_ACQUIRE);
        if (request == seen) {
            pearl_futex(pearl_ctl(shm, PEARL_CTL_REQUEST), FUTEX_WAIT, seen);
            continue;
        }
        uint32_t count = *pearl_ctl(shm, PEARL_CTL_COUNT);
        struct pearl_batch b = {shm + PEARL_PROCESS_CONTROL_LEN, count < PEARL_MAX_BATCH ? count : PEARL_MAX_BATCH};
        process(&b);
        seen = request;
        __atomic_store_n(pearl_ctl(shm, PEARL_CTL_DONE), request, __ATOMIC_RELEASE);
        pearl_futex(pearl_ctl(shm, PEARL_CTL_DONE), FUTEX_WAKE, 1);
    }
}

#define PEARL_PLUGIN(size, process)                                                                  \
    static void process(struct pearl_batch *);                                                       \
    int main(void) { return pearl_process_main(process); }
#endif

#endif
