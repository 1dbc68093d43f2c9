// A million launches through one engine on the simulated GPU, as a long training run
// makes them: three streams, a budget of half the memory (every block leaves and comes
// back, on the copy data path) in phases with half the memory freed (everything fits),
// an allocation freed and made again every few hundred launches. What the engine and the sim hold must stay flat: each
// container's size in the second half of the run stays within what it reached in the first half.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/engine/engine.h"
#include "core/sim/sim_backend.h"

namespace pump {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr uint64_t kLaunches = 100'000;  // a sanitizer makes each launch 10-30 times slower
#else
constexpr uint64_t kLaunches = 1'000'000;
#endif
constexpr int kCheckpoints = 10;
constexpr uint64_t kPhase = kLaunches / 50;
constexpr int kAllocations = 16;
constexpr uint64_t kBytes = 256 << 10;
constexpr uint64_t kBase = 0x7f0000000000ull;

uint64_t address(int a) { return kBase + a * kBytes; }

// One sample of every container the run could grow.
struct Sample {
  EngineFootprint engine;
  SimFootprint sim;
  std::vector<size_t> sizes() const {
    return {engine.blocks,         engine.allocations,        engine.out_in_flight, engine.tail_fences,
            engine.stream_uses,    engine.shadow_free_ranges, sim.streams,          sim.queued_ops,
            sim.pending_events,    sim.live_kernels,          sim.page_segments,    sim.shadow_segments,
            engine.launch_records, engine.launches_in_flight};
  }
};
const char* const kNames[] = {"engine blocks",      "engine allocations", "engine out_in_flight", "engine tail_fences",
                              "engine stream_uses", "shadow free ranges", "sim streams",          "sim queued ops",
                              "sim pending events", "sim live kernels",   "sim page segments",    "sim shadow segments",
                              "launch records",     "launches in flight"};

TEST(SoakOnSim, AMillionLaunchesKeepMemoryEventsAndTrackerFlat) {
  SimBackend sim;
  EngineOptions options;
  options.budget_bytes = kAllocations * kBytes / 2;
  options.datapath = DataPath::kCopy;
  options.host_limit_bytes = 4 * kAllocations * kBytes;
  Config config;
  Engine engine(sim, nullptr, options, &config);
  for (int a = 0; a < kAllocations; ++a) engine.on_alloc(address(a), kBytes);

  auto free = [&](int a) {
    engine.on_free(address(a), [&] {
      sim.synchronize();  // as cudaFree does
      sim.release({address(a), kBytes});
    });
  };
  std::vector<Sample> samples;
  KernelTicket ticket;
  int live = kAllocations;
  for (uint64_t i = 0; i < kLaunches; ++i) {
    if (i % kPhase == 0 && i > 0) {
      // Phases: over the budget (blocks leave after a fence behind their kernel), then with
      // half the memory freed (everything fits: kernels get no fence, an eviction later
      // fences their stream's tail).
      const bool fits = live == kAllocations;
      for (int a = kAllocations / 2; a < kAllocations; ++a) {
        if (fits) free(a);
        else engine.on_alloc(address(a), kBytes);
      }
      live = fits ? kAllocations / 2 : kAllocations;
    }
    // A layer: its weights (read, on every stream in turn) and its activations (written).
    const int weights = static_cast<int>(i % live);
    const int activations = static_cast<int>((i * 7 + 3) % live);
    const StreamId stream = 1 + i % 3;
    const pump_extent_v1_t extents[] = {{address(weights), kBytes, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT},
                                        {address(activations), kBytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_ACTIVATION}};
    const Range ranges[] = {{address(weights), kBytes}, {address(activations), kBytes}};
    const uint8_t reads[] = {1, 1}, writes[] = {0, 1};
    engine.before_kernel(&ticket, stream, extents, 2);
    sim.launch(stream, 5e-6, ranges, reads, writes);
    engine.after_kernel(&ticket);
    if (i % 500 == 499) {
      // A caching allocator gives a segment back and takes a new one at the same place.
      const int a = static_cast<int>(i / 500 % live);
      free(a);
      engine.on_alloc(address(a), kBytes);
    }
    if ((i + 1) % (kLaunches / kCheckpoints) == 0) samples.push_back({engine.footprint(), sim.footprint()});
  }
  sim.synchronize();

  const SimStats stats = sim.stats();
  EXPECT_EQ(stats.kernels, kLaunches);
  EXPECT_EQ(stats.violation_count(), 0u) << (sim.violations().empty() ? "" : sim.violations()[0]);
  EXPECT_LE(stats.peak_resident_bytes, options.budget_bytes);
  EXPECT_GT(engine.stats().bytes_saved, kLaunches * kBytes / 10) << "blocks must keep leaving and coming back";
  ASSERT_EQ(samples.size(), size_t{kCheckpoints});
  // Flat: the second half never holds more than the first half (past its first sample,
  // the warm-up) reached.
  const std::vector<Sample> first(samples.begin() + 1, samples.begin() + kCheckpoints / 2);
  const std::vector<Sample> second(samples.begin() + kCheckpoints / 2, samples.end());
  for (size_t k = 0; k < std::size(kNames); ++k) {
    size_t reached = 0, later = 0;
    for (const Sample& s : first) reached = std::max(reached, s.sizes()[k]);
    for (const Sample& s : second) later = std::max(later, s.sizes()[k]);
    EXPECT_LE(later, reached) << kNames[k] << " grows with the run";
  }
  EXPECT_LE(samples.back().engine.blocks, static_cast<size_t>(kAllocations));
  EXPECT_GT(samples.back().engine.tail_fences, 0u) << "no phase made an eviction fence a stream's tail";
  EXPECT_LE(samples.back().engine.tail_fences, 3u);
  for (const Sample& s : samples)
    EXPECT_LE(s.engine.stream_uses, size_t{kAllocations} * 3) << "more than one earlier use per stream and block";
}

}  // namespace
}  // namespace pump
