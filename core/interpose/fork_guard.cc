#include "core/interpose/fork_guard.h"

#include <pthread.h>

#include <cstddef>
#include <mutex>

#include "core/common/log.h"
#include "core/interpose/hook_dispatch.h"

namespace pump::interpose {
namespace {

// The engines locked by the forking thread, in the order taken (device order: no other
// code holds two engines' locks at once).
constexpr size_t kMaxHeld = 256;
Engine* g_held[kMaxHeld];
size_t g_held_count = 0;

void take_every_engine() {
  g_held_count = 0;
  for_each_engine([](Engine& e) {
    if (g_held_count == kMaxHeld) return;
    e.lock_for_fork();
    g_held[g_held_count++] = &e;
  });
}

// Both sides: no allocation, no lock of its own (the child has one thread).
void give_back_every_engine() {
  while (g_held_count > 0) g_held[--g_held_count]->unlock_after_fork();
}

}  // namespace

void install_fork_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (pthread_atfork(&take_every_engine, &give_back_every_engine, &give_back_every_engine) != 0)
      log(LogLevel::kWarn, "pthread_atfork failed: a process forked while a launch is being decided may hang at exit");
  });
}

}  // namespace pump::interpose
