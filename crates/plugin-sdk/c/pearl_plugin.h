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
/* A process plugin's calls to pearld (routes, tables): see abi.rs. */
#define PEARL_CTL_CALL 16
#define PEARL_CTL_ANSWERED 20
#define PEARL_CTL_EVENT 24
#define PEARL_CALL_OP 64
#define PEARL_CALL_ARGS 68
#define PEARL_CALL_ANSWER 88
#define PEARL_CALL_DATA 128
#define PEARL_CALL_DATA_LEN 3968
#define PEARL_CALL_ROUTE_V4 1
#define PEARL_CALL_ROUTE_V6 2
#define PEARL_CALL_ROUTE_V4_BATCH 3
#define PEARL_CALL_TABLE_FIND 4
#define PEARL_CALL_TABLE_GET 5
#define PEARL_CALL_TABLE_SET 6
#define PEARL_CALL_TABLE_REMOVE 7
#define PEARL_CALL_REFUSED (-100)
#define PEARL_CALL_BATCH 128
#define PEARL_CALL_KEY_ROOM 256

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
 * for the next with futex(2). The route and table functions are calls to pearld through the
 * same memory, answered while pearld waits for the batch: each is a round trip between two
 * processes, so look routes up by the batch (pearl_route_v4_batch). */
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline volatile uint32_t *pearl_ctl(uint8_t *shm, int at) { return (volatile uint32_t *)(shm + at); }

static inline void pearl_futex(volatile uint32_t *word, int op, uint32_t value) {
    syscall(SYS_futex, (uint32_t *)word, op, value, NULL, NULL, 0);
}

/* The memory shared with pearld, once mapped. */
static uint8_t *pearl_shm;

/* Makes call op with args (its bytes already in the call data); pearld's answer. */
static inline int32_t pearl_call(uint32_t op, int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4) {
    if (!pearl_shm)
        return PEARL_CALL_REFUSED;
    int32_t args[5] = {a0, a1, a2, a3, a4};
    memcpy(pearl_shm + PEARL_CALL_OP, &op, 4);
    memcpy(pearl_shm + PEARL_CALL_ARGS, args, sizeof args);
    uint32_t n = *pearl_ctl(pearl_shm, PEARL_CTL_CALL) + 1;
    __atomic_store_n(pearl_ctl(pearl_shm, PEARL_CTL_CALL), n, __ATOMIC_RELEASE);
    __atomic_fetch_add(pearl_ctl(pearl_shm, PEARL_CTL_EVENT), 1, __ATOMIC_RELEASE);
    pearl_futex(pearl_ctl(pearl_shm, PEARL_CTL_EVENT), FUTEX_WAKE, 1);
    for (;;) {
        uint32_t answered = __atomic_load_n(pearl_ctl(pearl_shm, PEARL_CTL_ANSWERED), __ATOMIC_ACQUIRE);
        if (answered == n)
            break;
        pearl_futex(pearl_ctl(pearl_shm, PEARL_CTL_ANSWERED), FUTEX_WAIT, answered);
    }
    int32_t answer;
    memcpy(&answer, pearl_shm + PEARL_CALL_ANSWER, 4);
    return answer;
}

static inline uint8_t *pearl_call_data(void) { return pearl_shm + PEARL_CALL_DATA; }

/* The VR's route to an IPv4 address (host order): >= 0 is the VR interface to send by, with
 * 12 bytes written at out (the next hop's MAC, then the interface's own); or a ROUTE code. */
static inline int32_t pearl_route_v4(uint32_t addr, uint8_t *out) {
    int32_t r = pearl_call(PEARL_CALL_ROUTE_V4, (int32_t)addr, 0, 0, 0, 0);
    if (r >= 0)
        memcpy(out, pearl_call_data(), 12);
    return r;
}

/* The same for the 16-byte IPv6 address (network order) at addr. */
static inline int32_t pearl_route_v6(const uint8_t *addr, uint8_t *out) {
    if (!pearl_shm)
        return PEARL_CALL_REFUSED;
    memcpy(pearl_call_data(), addr, 16);
    int32_t r = pearl_call(PEARL_CALL_ROUTE_V6, 0, 16, 0, 0, 0);
    if (r >= 0)
        memcpy(out, pearl_call_data() + 16, 12);
    return r;
}

/* count IPv4 addresses: for each, 16 bytes at out (the answer as int32, then the MACs); one
 * call for every CALL_BATCH of them. */
static inline void pearl_route_v4_batch(const uint32_t *addrs, int32_t count, uint8_t *out) {
    const int32_t answers_at = 4 * PEARL_CALL_BATCH;
    for (int32_t first = 0; first < count; first += PEARL_CALL_BATCH) {
        int32_t n = count - first < PEARL_CALL_BATCH ? count - first : PEARL_CALL_BATCH;
        if (!pearl_shm) {
            for (int32_t k = 0; k < n; k++) {
                int32_t none = PEARL_ROUTE_NONE;
                memcpy(out + (first + k) * PEARL_ROUTE_ANSWER_LEN, &none, 4);
            }
            continue;
        }
        memcpy(pearl_call_data(), addrs + first, 4 * (size_t)n);
        pearl_call(PEARL_CALL_ROUTE_V4_BATCH, 0, n, answers_at, 0, 0);
        memcpy(out + first * PEARL_ROUTE_ANSWER_LEN, pearl_call_data() + answers_at, (size_t)n * PEARL_ROUTE_ANSWER_LEN);
    }
}

/* A table's handle by name (TABLE_NONE if the configuration declares none so named). */
static inline int32_t pearl_table_find(const char *name, int32_t name_len) {
    if (!pearl_shm || name_len < 0 || name_len > PEARL_CALL_DATA_LEN)
        return PEARL_TABLE_NONE;
    memcpy(pearl_call_data(), name, (size_t)name_len);
    return pearl_call(PEARL_CALL_TABLE_FIND, 0, name_len, 0, 0, 0);
}

/* The value's whole length (at most cap bytes of it copied to out), or TABLE_NONE. */
static inline int32_t pearl_table_get(int32_t table, const void *key, int32_t key_len, void *out, int32_t cap) {
    if (!pearl_shm || key_len < 0 || key_len > PEARL_CALL_KEY_ROOM || cap < 0)
        return PEARL_TABLE_NONE;
    int32_t room = PEARL_CALL_DATA_LEN - PEARL_CALL_KEY_ROOM;
    int32_t asked = cap < room ? cap : room;
    memcpy(pearl_call_data(), key, (size_t)key_len);
    int32_t r = pearl_call(PEARL_CALL_TABLE_GET, table, 0, key_len, PEARL_CALL_KEY_ROOM, asked);
    if (r > 0)
        memcpy(out, pearl_call_data() + PEARL_CALL_KEY_ROOM, (size_t)(r < asked ? r : asked));
    return r;
}

/* 0, TABLE_FULL or TABLE_TOO_LONG. */
static inline int32_t pearl_table_set(int32_t table, const void *key, int32_t key_len, const void *value, int32_t value_len) {
    if (key_len < 0 || key_len > PEARL_CALL_KEY_ROOM || value_len < 0 || value_len > PEARL_CALL_DATA_LEN - PEARL_CALL_KEY_ROOM)
        return PEARL_TABLE_TOO_LONG;
    if (!pearl_shm)
        return PEARL_CALL_REFUSED;
    memcpy(pearl_call_data(), key, (size_t)key_len);
    memcpy(pearl_call_data() + PEARL_CALL_KEY_ROOM, value, (size_t)value_len);
    return pearl_call(PEARL_CALL_TABLE_SET, table, 0, key_len, PEARL_CALL_KEY_ROOM, value_len);
}

/* 1 removed, 0 absent. */
static inline int32_t pearl_table_remove(int32_t table, const void *key, int32_t key_len) {
    if (!pearl_shm || key_len < 0 || key_len > PEARL_CALL_KEY_ROOM)
        return 0;
    memcpy(pearl_call_data(), key, (size_t)key_len);
    return pearl_call(PEARL_CALL_TABLE_REMOVE, table, 0, key_len, 0, 0);
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
    pearl_shm = shm;
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
        __atomic_fetch_add(pearl_ctl(shm, PEARL_CTL_EVENT), 1, __ATOMIC_RELEASE);
        pearl_futex(pearl_ctl(shm, PEARL_CTL_EVENT), FUTEX_WAKE, 1);
    }
}

#define PEARL_PLUGIN(size, process)                                                                  \
    static void process(struct pearl_batch *);                                                       \
    int main(void) { return pearl_process_main(process); }
#endif

#endif
