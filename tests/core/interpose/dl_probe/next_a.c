/* Linked into the probe before next_b: both define pump_probe_which. Asked for "the next
 * definition after me", this library must get next_b's, never its own. */
#define _GNU_SOURCE
#include <dlfcn.h>

int pump_probe_which(void) { return 'a'; }

static int call(void* fn) { return fn ? ((int (*)(void))fn)() : 0; }

int pump_probe_next_of_a(void) { return call(dlsym(RTLD_NEXT, "pump_probe_which")); }
int pump_probe_vnext_of_a(void) { return call(dlvsym(RTLD_NEXT, "pump_probe_which", "PUMP_PROBE_1")); }
