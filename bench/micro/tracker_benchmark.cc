// BlockTracker hot operations with 100k blocks: "which block contains this
// address" (every extent of every launch) and an LRU touch (every resident block
// a kernel uses).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/engine/engine_block.h"  // the engine's tracker: its blocks as large as in use

namespace {

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kBlockBytes = 2ull << 20;
constexpr size_t kBlocks = 100000;

struct TrackerFixture {
  pump::BlockTracker tracker;
  std::vector<uint64_t> probes;  // interior addresses, in random order
  TrackerFixture() {
    for (size_t i = 0; i < kBlocks; ++i) tracker.add_allocation(kBase + i * kBlockBytes, kBlockBytes);
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < 4096; ++i) probes.push_back(kBase + (rng() % kBlocks) * kBlockBytes + (rng() % kBlockBytes));
  }
};

void BM_TrackerFindInterior100k(benchmark::State& state) {
  TrackerFixture f;
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.tracker.find(f.probes[i++ & 4095]));
  }
}
BENCHMARK(BM_TrackerFindInterior100k);

void BM_TrackerTouchResident100k(benchmark::State& state) {
  TrackerFixture f;
  std::vector<pump::Block*> blocks;
  for (uint64_t a : f.probes) blocks.push_back(f.tracker.find(a));
  for (pump::Block& b : const_cast<pump::BlockTracker::AddressSet&>(f.tracker.blocks())) f.tracker.set_resident(b);
  size_t i = 0;
  for (auto _ : state) f.tracker.touch(*blocks[i++ & 4095]);
}
BENCHMARK(BM_TrackerTouchResident100k);

}  // namespace
