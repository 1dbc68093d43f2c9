// Cold-cache timing for the per-launch benchmarks (issue 8). Between two launches of a real
// program the framework's own work (PyTorch's dispatcher, allocator, autograd) runs over
// megabytes of its own data and evicts pump's from the CPU caches and TLBs; a hot loop of
// launches keeps pump's data in L1/L2 and hides every miss. CacheEvictor streams over a
// buffer between launches, outside the timed region; LaunchTimes keeps each launch's time so
// that the median (the target) and the tail can be reported.
// PUMP_BENCH_EVICT_MIB sets the buffer's size (default 48 MiB: past this CPU's 32 MiB L3).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace pump::bench {

class CacheEvictor {
 public:
  // `mib` 0: the default (PUMP_BENCH_EVICT_MIB, else 48).
  explicit CacheEvictor(size_t mib = 0) {
    if (mib == 0) {
      const char* env = std::getenv("PUMP_BENCH_EVICT_MIB");
      mib = env ? std::strtoull(env, nullptr, 10) : 48;
    }
    lines_.resize(mib * (1 << 20) / sizeof(Line));
  }
  // Reads and writes every line of the buffer: the program's data displaces pump's, dirty.
  void evict() {
    uint64_t sum = 0;
    for (Line& l : lines_) {
      sum += l.words[0];
      l.words[0] = sum;
    }
    benchmark::DoNotOptimize(sum);
  }
  size_t bytes() const { return lines_.size() * sizeof(Line); }

 private:
  struct alignas(64) Line {
    uint64_t words[8];
  };
  std::vector<Line> lines_;
};

// Per-launch times in ns, and the benchmark's manual time.
class LaunchTimes {
 public:
  using Clock = std::chrono::steady_clock;
  void reserve(size_t n) { ns_.reserve(n); }
  void add(Clock::time_point begin, Clock::time_point end) {
    ns_.push_back(std::chrono::duration<double, std::nano>(end - begin).count());
  }
  // Sets the iteration's manual time to the launches timed since the last call.
  void finish_iteration(benchmark::State& state) {
    double sum = 0;
    for (size_t i = reported_; i < ns_.size(); ++i) sum += ns_[i];
    reported_ = ns_.size();
    state.SetIterationTime(sum * 1e-9);
  }
  // median_ns, p90_ns, mean_ns over every launch timed.
  void report(benchmark::State& state) {
    if (ns_.empty()) return;
    std::vector<double> s = ns_;
    std::sort(s.begin(), s.end());
    double sum = 0;
    for (double v : s) sum += v;
    state.counters["median_ns"] = s[s.size() / 2];
    state.counters["p90_ns"] = s[s.size() * 9 / 10];
    state.counters["mean_ns"] = sum / static_cast<double>(s.size());
  }

 private:
  std::vector<double> ns_;
  size_t reported_ = 0;
};

}  // namespace pump::bench
