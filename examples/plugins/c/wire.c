/* The wire example in C: whatever arrives on the VR's interface 0 leaves by interface 1 and
 * the other way round, byte for byte. */
#include "pearl_plugin.h"

/* Room for a 64 KiB GSO super-packet from a host with default offloads. */
PEARL_PLUGIN(262144, process)

static void process(struct pearl_batch *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        switch (pearl_interface(b, i)) {
        case 0: pearl_send(b, i, 1); break;
        case 1: pearl_send(b, i, 0); break;
        default: pearl_drop(b, i);
        }
    }
}
