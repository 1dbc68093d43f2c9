// Policy: the engine's decision interface, what an Engine calls to have prefetches and
// evictions decided. The engine knows no plugin ABI: a C policy plugin reaches it
// through core/plugin_host/policy_adapter.h. The SDK's plain structs (a kernel's blocks,
// a block) are the vocabulary both sides already share.
//
// Every callback runs under the engine's lock, on the thread whose call is being
// decided; the policy acts through the Engine's policy services (the *_locked methods),
// which take no lock of their own.
#pragma once

#include <cstdint>

#include "pump/policy_v1.h"

namespace pump {

class Engine;

class Policy {
 public:
  virtual ~Policy() = default;

  virtual const char* name() const = 0;
  // Once, from the Engine's constructor, before any other callback. false: the policy
  // could not start (it logged why); the engine runs without it and destroys it.
  virtual bool attach(Engine& engine) = 0;

  // A kernel is about to be queued: request prefetches and evictions.
  virtual void on_kernel(const pump_kernel_v1_t& kernel) = 0;
  // The kernel needs `bytes_over` more bytes than the budget leaves: evict. What is
  // still over afterwards the engine evicts itself, least recently used first.
  virtual void on_pressure(const pump_kernel_v1_t& kernel, uint64_t bytes_over) = 0;
  // A block appeared (an allocation) or is about to disappear (a free).
  virtual void on_alloc(const pump_block_v1_t& block) = 0;
  virtual void on_free(const pump_block_v1_t& block) = 0;
  // The process is exiting (Engine::retire_policy): end now, as the SDK promises a plugin
  // (its fini, where it may say what it did); later callbacks do nothing.
  virtual void retire() {}
};

}  // namespace pump
