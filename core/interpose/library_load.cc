// What libpump.so does as it loads (linked into libpump.so only, never into the CPU
// tests' executables): settings frameworks read once at their start, so they must be in
// the environment before the program runs.
#include "core/interpose/framework_settings.h"

namespace {

__attribute__((constructor)) void on_library_load() { pump::interpose::apply_framework_settings(); }

}  // namespace
