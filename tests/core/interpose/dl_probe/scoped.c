/* Opened by the probe with RTLD_LOCAL: its dependency (scoped_dep) is in its own scope
 * only, where dlsym(RTLD_DEFAULT) from here must look. */
#define _GNU_SOURCE
#include <dlfcn.h>

int pump_probe_scoped_lookup(void) {
  int (*fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "pump_probe_scoped_dep_only");
  return fn ? fn() : 0;
}
