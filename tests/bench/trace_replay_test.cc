#include "bench/workloads/trace_replay.h"

#include <gtest/gtest.h>

#include "core/sim/sim_runner.h"

namespace pump {
namespace {

TraceRecord alloc(uint64_t address, uint64_t bytes) {
  TraceRecord r;
  r.op = TraceRecord::Op::kAlloc;
  r.address = address;
  r.bytes = bytes;
  return r;
}

TraceRecord kernel(std::vector<pump_extent_v1_t> extents, double seconds = -1) {
  TraceRecord r;
  r.op = TraceRecord::Op::kKernel;
  r.stream = 7;
  r.seconds = seconds;
  r.extents = std::move(extents);
  return r;
}

TEST(TraceReplay, KernelsBecomeOneIterationWithRecordedOrEstimatedDurations) {
  Trace t;
  t.records = {alloc(0x100000, 1 << 20), alloc(0x300000, 1 << 20),
               kernel({{0x100000, 1 << 20, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT}}, 0.002),
               kernel({{0x300000, 4096, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION}})};
  TraceReplayOptions options;
  options.iterations = 4;
  options.bytes_per_second = 4096.0;
  TraceReplayReport report;
  SimWorkload w = trace_to_workload(t, "t", options, &report);
  EXPECT_EQ(w.iterations, 4);
  ASSERT_EQ(w.allocations.size(), 2u);
  EXPECT_EQ(w.allocations[0].role, PUMP_ROLE_WEIGHT);
  EXPECT_EQ(w.allocations[1].role, PUMP_ROLE_ACTIVATION);
  ASSERT_EQ(w.iteration.size(), 2u);
  EXPECT_EQ(w.iteration[0].stream, 7u);
  EXPECT_DOUBLE_EQ(w.iteration[0].compute_seconds, 0.002);
  EXPECT_DOUBLE_EQ(w.iteration[1].compute_seconds, 1.0);  // 4096 bytes at 4096 B/s
  EXPECT_EQ(report.kernels, 2u);
  EXPECT_EQ(report.kernels_estimated, 1u);
}

// A record's host time (the launching thread's time since its previous launch) becomes the
// kernel's: the replay spends it before the launch, so a launch-bound program stays so.
TEST(TraceReplay, KernelsKeepTheirRecordedHostTime) {
  Trace t;
  t.records = {alloc(0x100000, 1 << 20), kernel({{0x100000, 4096, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT}}),
               kernel({{0x100000, 4096, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT}})};
  t.records[2].host_seconds = 0.001;
  const SimWorkload w = trace_to_workload(t, "t", {});
  ASSERT_EQ(w.iteration.size(), 2u);
  EXPECT_EQ(w.iteration[0].host_seconds, 0.0);  // unknown: none
  EXPECT_DOUBLE_EQ(w.iteration[1].host_seconds, 0.001);
}

TEST(TraceReplay, ReusedAddressesMergeAndStrayExtentsAreDroppedOrClipped) {
  Trace t;
  t.records = {alloc(0x100000, 0x100000), alloc(0x180000, 0x100000),  // overlaps: one range 0x100000..0x280000
               kernel({{0x900000, 64, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN},
                       {0x270000, 0x100000, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN}})};
  TraceReplayReport report;
  SimWorkload w = trace_to_workload(t, "t", {}, &report);
  ASSERT_EQ(w.allocations.size(), 1u);
  EXPECT_EQ(w.allocations[0].address, 0x100000u);
  EXPECT_EQ(w.allocations[0].bytes, 0x180000u);
  EXPECT_EQ(report.allocations_merged, 1u);
  EXPECT_EQ(report.extents_dropped, 1u);
  ASSERT_EQ(w.iteration.at(0).extents.size(), 1u);
  EXPECT_EQ(w.iteration[0].extents[0].bytes, 0x10000u);  // clipped at the allocation's end
}

// Extents guessed from a pointer replay as inexact: marked by the writer, or, in a trace
// whose header does not say it marks them, inferred for kernels made only of rw extents
// without a role (what the launch extractor reports).
TEST(TraceReplay, GuessedExtentsReplayInexact) {
  const pump_extent_v1_t guess{0x100000, 0x1000, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN};
  const pump_extent_v1_t weight{0x101000, 0x1000, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT};
  Trace old;
  old.records = {alloc(0x100000, 0x100000), kernel({guess}), kernel({guess, weight})};
  SimWorkload w = trace_to_workload(old, "old", {});
  EXPECT_EQ(w.iteration.at(0).inexact, (std::vector<uint8_t>{1}));
  EXPECT_EQ(w.iteration.at(1).inexact, (std::vector<uint8_t>{0, 0}));  // a library call's

  Trace marked = old;
  marked.marks_inexact = true;
  marked.records[2].inexact = {0, 1};
  TraceReplayReport report;
  w = trace_to_workload(marked, "marked", {}, &report);
  EXPECT_EQ(w.iteration.at(0).inexact, (std::vector<uint8_t>{0}));  // the writer said: exact
  EXPECT_EQ(w.iteration.at(1).inexact, (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(report.extents_inexact, 1u);
}

TEST(TraceReplay, ReplayedTrainingLoopRunsLikeTheOriginal) {
  TrainingLoopSpec spec;
  spec.layers = 3;
  spec.weight_bytes_per_layer = spec.activation_bytes_per_layer = 8ull << 20;
  spec.workspace_bytes = 2ull << 20;
  const SimWorkload original = training_loop(spec);
  Trace t;
  for (const SimAllocation& a : original.allocations) t.records.push_back(alloc(a.address, a.bytes));
  for (const SimKernel& k : original.iteration) {
    TraceRecord r = kernel(k.extents, k.compute_seconds);
    r.stream = k.stream;
    t.records.push_back(r);
  }
  TraceReplayOptions options;
  options.iterations = original.iterations;
  const SimWorkload replay = trace_to_workload(t, "replay", options);
  EXPECT_EQ(replay.footprint_bytes(), original.footprint_bytes());
  EXPECT_DOUBLE_EQ(replay.compute_seconds_per_iteration(), original.compute_seconds_per_iteration());

  auto steady = [](const SimWorkload& w) {
    SimDeviceModel model;
    model.device_bytes = 1ull << 30;
    SimBackend backend(model);
    EngineOptions options;
    options.budget_bytes = w.footprint_bytes() * 3 / 4;
    Engine engine(backend, nullptr, options, nullptr);
    return run_workload(w, engine, backend).steady_seconds_per_iteration();
  };
  EXPECT_DOUBLE_EQ(steady(replay), steady(original));
}

}  // namespace
}  // namespace pump
