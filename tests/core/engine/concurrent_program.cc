#include "tests/core/engine/concurrent_program.h"

#include <atomic>
#include <barrier>
#include <random>
#include <thread>

namespace pump::testing {
namespace {

// A kernel through the engine, as a hook runs one: decide, launch, settle.
void launch(Engine& engine, ConcurrentDevice& device, StreamId stream, const std::vector<KernelAccess>& accesses,
            KernelTicket* ticket) {
  std::vector<pump_extent_v1_t> extents;
  for (const KernelAccess& a : accesses) {
    const uint32_t access = (a.reads ? uint32_t{PUMP_ACCESS_READ} : 0u) | (a.writes ? uint32_t{PUMP_ACCESS_WRITE} : 0u);
    extents.push_back({a.address, a.bytes, access, PUMP_ROLE_UNKNOWN});
  }
  engine.before_kernel(ticket, stream, extents.data(), extents.size());
  std::this_thread::yield();  // other threads decide and launch while this launch is on its way
  device.kernel(stream, accesses);
  engine.after_kernel(ticket);
}

}  // namespace

StreamId concurrent_stream(int thread) { return 0x5100 + 0x10 * static_cast<StreamId>(thread); }

ConcurrentProgramResult run_concurrent_program(Engine& engine, ConcurrentDevice& device,
                                               const ConcurrentProgramOptions& o) {
  const uint64_t bytes = o.allocation_bytes;
  auto own = [&](int thread, int slot) { return o.base + (uint64_t(thread) * o.own_allocations + slot) * bytes; };
  auto shared = [&](int j) { return o.base + (uint64_t(o.threads) * o.own_allocations + j) * bytes; };
  auto shared_value = [](int j) { return static_cast<uint8_t>(0xA0 + j); };
  // As the hooks free: the engine forgets the allocation, then the program's free runs.
  auto free = [&](uint64_t address) { engine.on_free(address, [&] { device.freed(address, bytes); }); };

  // The shared allocations, written once before the threads start.
  KernelTicket ticket;
  for (int j = 0; j < o.shared_allocations; ++j) {
    engine.on_alloc(shared(j), bytes);
    launch(engine, device, concurrent_stream(0), {{shared(j), bytes, false, true, 0, shared_value(j)}}, &ticket);
  }

  std::atomic<uint64_t> kernels{0}, frees{0};
  std::barrier start(o.threads);
  auto thread_main = [&](int t) {
    std::mt19937 rng(o.seed * 7919 + t);
    const StreamId stream = concurrent_stream(t);
    KernelTicket mine;  // one per thread, as the hooks keep it
    std::vector<uint8_t> value(o.own_allocations);
    auto fresh = [&](int slot) {
      engine.on_alloc(own(t, slot), bytes);
      value[slot] = static_cast<uint8_t>(rng());
      launch(engine, device, stream, {{own(t, slot), bytes, false, true, 0, value[slot]}}, &mine);
      kernels.fetch_add(1, std::memory_order_relaxed);
    };
    start.arrive_and_wait();  // every thread allocates at once
    for (int slot = 0; slot < o.own_allocations; ++slot) fresh(slot);
    start.arrive_and_wait();  // all the memory is there while every thread launches
    for (int i = 0; i < o.launches_per_thread; ++i) {
      std::this_thread::yield();  // threads interleave their launches (two cores play eight)
      const int slot = static_cast<int>(rng() % o.own_allocations);
      if (rng() % o.free_one_in == 0) {
        free(own(t, slot));
        frees.fetch_add(1, std::memory_order_relaxed);
        fresh(slot);  // the same addresses again, as the driver may hand them out
        continue;
      }
      const int j = static_cast<int>(rng() % o.shared_allocations);
      const uint8_t next = static_cast<uint8_t>(value[slot] + 1);
      launch(
          engine, device, stream,
          {{own(t, slot), bytes, true, true, value[slot], next}, {shared(j), bytes, true, false, shared_value(j), 0}},
          &mine);
      value[slot] = next;
      kernels.fetch_add(1, std::memory_order_relaxed);
    }
    start.arrive_and_wait();
    for (int slot = 0; slot < o.own_allocations; ++slot) free(own(t, slot));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) threads.emplace_back(thread_main, t);
  for (std::thread& th : threads) th.join();
  for (int j = 0; j < o.shared_allocations; ++j) free(shared(j));
  return {kernels.load() + o.shared_allocations, frees.load()};
}

}  // namespace pump::testing
