// Every driver call pump makes, failed one at a time. A program under a tight budget
// (tight_budget_program.h) runs through pump's hooks against an Engine on a CudaBackend
// over the fake driver, which fails one call: each call of the back-end's set-up in
// turn, each of its calls while the program runs in turn, every call from the start of
// the run, and its calls at teardown. Each time:
//   - nothing crashes and nothing hangs;
//   - one clear message: exactly one warning or error, naming the call and the
//     driver's error (none at teardown, where the driver may already be gone);
//   - every hook returns what the program's real CUDA function returned;
//   - no data is lost: every byte the program wrote reads back unchanged.
// Which calls those are is not a list kept by hand: CoversEveryCallPumpMakes runs the
// program cleanly and fails if pump makes a call that has no case here.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/common/log.h"
#include "tests/core/common/warning_capture.h"
#include "tests/core/cuda/fake_driver_handle.h"
#include "tests/core/cuda/tight_budget_program.h"

namespace pump {
namespace {

using testing::FakeDriver;
using testing::TightBudgetProgram;
using testing::TightBudgetResult;
using testing::WarningCapture;

constexpr CUresult kInjected = CUDA_ERROR_UNKNOWN;
constexpr const char* kInjectedName = "CUDA_ERROR_UNKNOWN";

enum class Phase { kSetUp, kRun, kTeardown };
const char* name(Phase p) { return p == Phase::kSetUp ? "set-up" : p == Phase::kRun ? "run" : "teardown"; }

// How often each call was made in each phase of one run of the program.
struct CallCounts {
  std::map<std::string, uint64_t> set_up, run, teardown;
  const std::map<std::string, uint64_t>& of(Phase p) const {
    return p == Phase::kSetUp ? set_up : p == Phase::kRun ? run : teardown;
  }
};

// How pump is set up around the program: the copy data path (the default: through
// staging buffers), the same under PUMP_VERIFY=poison, the copy path with saves by the
// mapped copy kernel (PUMP_COPY_VIA=kernel) and populates by batch calls, or the
// unified-memory path (PUMP_DATAPATH=um).
enum class Variant { kCopy, kPoison, kKernelSaves, kUnified };
const char* name(Variant v) {
  switch (v) {
    case Variant::kCopy: return "copy";
    case Variant::kPoison: return "poison";
    case Variant::kKernelSaves: return "kernel_saves";
    case Variant::kUnified: return "um";
  }
  return "?";
}
constexpr Variant kVariants[] = {Variant::kCopy, Variant::kPoison, Variant::kKernelSaves, Variant::kUnified};

// The fake offers the real driver's calls (copy kernels included); the backend has the
// runtime's options.
FakeDriverConfig driver_config() {
  FakeDriverConfig config;
  config.copy_kernels = 1;
  config.model_memory = 1;
  return config;
}
CudaBackendOptions backend_options(Variant v) {
  CudaBackendOptions options;
  options.poison = v == Variant::kPoison;
  if (v == Variant::kKernelSaves) {
    options.copy_via = CudaBackendOptions::CopyVia::kKernel;
    options.populate = CudaBackendOptions::Populate::kPrefetchBatch;
  }
  return options;
}

// One failure: `call` fails `times` times (-1: for ever) after `successes` successful
// calls counted from the start of `phase`.
struct Injection {
  std::string call;
  Phase phase;
  int successes;
  int times;
};

struct Outcome {
  bool backend = false;       // the backend started
  uint64_t fired = 0;         // failures the fake returned
  uint64_t failed_calls = 0;  // ... that the backend counted
  std::vector<std::string> warnings;
  TightBudgetResult program;
  CallCounts counts;
};

class Runner {
 public:
  explicit Runner(const FakeDriver& driver) : driver_(driver) {}

  // Runs the program once, failing what `injection` says (nothing when null).
  Outcome run(Variant variant, const Injection* injection) {
    Outcome out;
    WarningCapture capture;
    TightBudgetProgram program;
    driver_.reset(driver_config());
    auto arm = [&](Phase phase) {
      if (injection && injection->phase == phase)
        driver_.fail(injection->call.c_str(), injection->successes, kInjected, injection->times);
    };
    arm(Phase::kSetUp);
    std::unique_ptr<CudaBackend> backend = driver_.backend(backend_options(variant));
    const auto after_set_up = totals();
    out.counts.set_up = after_set_up;
    out.backend = backend != nullptr;
    if (!backend) {
      out.program = program.run(nullptr);  // the runtime passes everything through then
    } else {
      arm(Phase::kRun);
      {
        Config config;
        const DataPath path = variant == Variant::kUnified ? DataPath::kUnified : DataPath::kCopy;
        Engine engine(*backend, nullptr, TightBudgetProgram::engine_options(path), &config);
        // Each round's synchronize: what the engine decides next no longer hangs on how far
        // the worker got, so each run makes the same calls.
        out.program = program.run(&engine, [&] { backend->wait_issued(std::chrono::seconds(30)); });
      }
      // Everything issued before the teardown starts: its calls are the teardown's own.
      EXPECT_TRUE(backend->wait_issued(std::chrono::seconds(30)));
      out.failed_calls = backend->stats().failed_calls;
      const auto after_run = totals();
      out.counts.run = difference(after_run, after_set_up);
      arm(Phase::kTeardown);
      backend.reset();
      out.counts.teardown = difference(totals(), after_run);
    }
    out.fired = driver_.failures();
    out.warnings = capture.taken();
    return out;
  }

 private:
  // How often each call was made since the driver's reset.
  std::map<std::string, uint64_t> totals() const {
    std::map<std::string, uint64_t> out;
    for (const std::string& call : driver_.entries())
      if (uint64_t n = driver_.count(call.c_str())) out[call] = n;
    return out;
  }
  static std::map<std::string, uint64_t> difference(const std::map<std::string, uint64_t>& later,
                                                    const std::map<std::string, uint64_t>& earlier) {
    std::map<std::string, uint64_t> out;
    for (const auto& [call, n] : later) {
      const uint64_t before = earlier.count(call) ? earlier.at(call) : 0;
      if (n > before) out[call] = n - before;
    }
    return out;
  }

  const FakeDriver& driver_;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n  " + l;
  return s;
}

// The four properties, for one failure.
void expect_survived(const Outcome& out, const Injection& injection) {
  SCOPED_TRACE(injection.call + " failing in the " + name(injection.phase) + " after " +
               std::to_string(injection.successes) + " calls, " +
               (injection.times < 0 ? std::string("for ever") : std::to_string(injection.times) + " time(s)"));
  // The k-th call of a run may not come when the worker's pace changed how often it is
  // made: that run tests nothing and is passed over; the first call always comes.
  if (out.fired == 0 && injection.successes > 0 && injection.phase == Phase::kRun) return;
  ASSERT_GT(out.fired, 0u) << "the call was never made: this case tests nothing";
  EXPECT_TRUE(out.program.wrong_results.empty()) << joined(out.program.wrong_results);
  EXPECT_TRUE(out.program.lost_bytes.empty()) << joined(out.program.lost_bytes);
  if (injection.phase == Phase::kTeardown) {
    EXPECT_TRUE(out.warnings.empty()) << "at teardown the driver may be gone: errors are not reported"
                                      << joined(out.warnings);
    return;
  }
  ASSERT_EQ(out.warnings.size(), 1u) << "one clear message per failure:" << joined(out.warnings);
  EXPECT_NE(out.warnings[0].find(injection.call), std::string::npos) << "the message names the call";
  EXPECT_NE(out.warnings[0].find(kInjectedName), std::string::npos) << "the message names the driver's error";
  if (out.backend && injection.phase == Phase::kRun) {
    EXPECT_GE(out.failed_calls, 1u);
  }
}

// The calls pump makes, each in a set-up that makes it (a call made in two ways is
// failed in both).
struct CallCase {
  const char* call;
  Variant variant = Variant::kCopy;
};
const CallCase kCalls[] = {
    {"cuDriverGetVersion"},
    {"cuInit"},
    {"cuDeviceGetCount"},
    {"cuDeviceGet"},
    {"cuDeviceGetAttribute"},
    {"cuDeviceTotalMem"},
    {"cuMemGetInfo"},
    {"cuDevicePrimaryCtxRetain"},
    {"cuDevicePrimaryCtxRelease"},
    {"cuCtxSetCurrent"},
    {"cuCtxGetCurrent"},
    {"cuStreamCreate"},
    {"cuStreamDestroy"},
    {"cuStreamIsCapturing"},
    {"cuStreamWaitEvent"},
    {"cuEventCreate"},
    {"cuEventRecord"},
    {"cuEventQuery"},
    {"cuEventDestroy"},
    {"cuModuleLoadData"},
    {"cuModuleGetFunction"},
    {"cuLaunchKernel"},
    {"cuLaunchKernel", Variant::kKernelSaves},
    {"cuEventSynchronize", Variant::kKernelSaves},
    {"cuMemHostGetDevicePointer", Variant::kKernelSaves},
    {"cuMemHostAlloc"},
    {"cuMemFreeHost", Variant::kKernelSaves},
    {"cuMemPrefetchAsync"},
    {"cuMemAlloc"},
    {"cuMemFree"},
    {"cuMemPrefetchAsync", Variant::kUnified},  // evictions by unified memory
    {"cuMemPrefetchBatchAsync", Variant::kKernelSaves},
    {"cuMemDiscardBatchAsync"},
    {"cuMemcpyDtoHAsync"},
    {"cuMemcpyHtoDAsync"},
    {"cuMemsetD32Async", Variant::kPoison},
};

// Calls made at most this often in a run are failed at each occurrence; those made
// more often (waits, queries and records) up to the half of their count.
constexpr uint64_t kEveryCallUpTo = 24;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

class DriverFailure : public ::testing::TestWithParam<CallCase> {
 protected:
  void SetUp() override { ASSERT_TRUE(driver_.ok()); }
  FakeDriver driver_;
};

TEST_P(DriverFailure, EachCallFailsInTurnAndNothingIsLost) {
  const CallCase c = GetParam();
  Runner runner(driver_);
  const Outcome clean = runner.run(c.variant, nullptr);
  ASSERT_TRUE(clean.backend);
  const uint64_t at_set_up = clean.counts.set_up.count(c.call) ? clean.counts.set_up.at(c.call) : 0;
  const uint64_t in_run = clean.counts.run.count(c.call) ? clean.counts.run.at(c.call) : 0;
  const uint64_t at_teardown = clean.counts.teardown.count(c.call) ? clean.counts.teardown.at(c.call) : 0;
  ASSERT_GT(at_set_up + in_run + at_teardown, 0u) << c.call << " is never called";
  std::vector<Injection> injections;
  for (uint64_t k = 0; k < at_set_up; ++k) injections.push_back({c.call, Phase::kSetUp, static_cast<int>(k), 1});
  if (in_run) {
    // Each call of the run in turn, up to the half of the frequent ones; under a
    // sanitizer, which makes each run 10-20 times slower, eight spread over that.
    const uint64_t reach = in_run <= kEveryCallUpTo ? in_run : in_run / 2;
    const uint64_t points = kSanitized ? std::min<uint64_t>(reach, 8) : reach;
    std::set<int> at;
    for (uint64_t i = 0; i < points; ++i) at.insert(static_cast<int>(i * reach / points));
    for (int k : at) injections.push_back({c.call, Phase::kRun, k, 1});
    injections.push_back({c.call, Phase::kRun, 0, -1});
  }
  if (at_teardown) injections.push_back({c.call, Phase::kTeardown, 0, -1});
  for (const Injection& injection : injections) {
    const Outcome out = runner.run(c.variant, &injection);
    expect_survived(out, injection);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCall, DriverFailure, ::testing::ValuesIn(kCalls),
                         [](const ::testing::TestParamInfo<CallCase>& info) {
                           return std::string(info.param.call) + "_" + name(info.param.variant);
                         });

TEST(DriverFailures, TheCleanProgramExercisesEveryWayInAndOutWithoutALostByte) {
  FakeDriver driver;
  ASSERT_TRUE(driver.ok());
  Runner runner(driver);
  for (Variant v : kVariants) {
    SCOPED_TRACE(name(v));
    const Outcome clean = runner.run(v, nullptr);
    ASSERT_TRUE(clean.backend);
    EXPECT_TRUE(clean.warnings.empty()) << joined(clean.warnings);
    EXPECT_TRUE(clean.program.wrong_results.empty()) << joined(clean.program.wrong_results);
    EXPECT_TRUE(clean.program.lost_bytes.empty()) << joined(clean.program.lost_bytes);
  }
  // The program reaches each way in and out that the failures are meant to break.
  const Outcome copy = runner.run(Variant::kCopy, nullptr);
  for (const char* call : {"cuLaunchKernel", "cuMemcpyDtoHAsync", "cuMemcpyHtoDAsync", "cuMemDiscardBatchAsync",
                           "cuMemPrefetchAsync", "cuMemHostAlloc", "cuStreamWaitEvent"})
    EXPECT_GT(copy.counts.run.count(call), 0u) << call << " is not reached by the program";
  // The default copies through staging buffers (two slots per direction, device memory
  // taken at set-up); PUMP_COPY_VIA=kernel takes none.
  EXPECT_EQ(copy.counts.set_up.count("cuMemAlloc") ? copy.counts.set_up.at("cuMemAlloc") : 0u, 4u);
  const Outcome kernel = runner.run(Variant::kKernelSaves, nullptr);
  EXPECT_EQ(kernel.counts.set_up.count("cuMemAlloc"), 0u);
  EXPECT_GT(kernel.counts.run.at("cuLaunchKernel"), 0u);
  EXPECT_GT(kernel.counts.run.count("cuMemPrefetchBatchAsync"), 0u);
}

TEST(DriverFailures, CoversEveryCallPumpMakes) {
  FakeDriver driver;
  ASSERT_TRUE(driver.ok());
  Runner runner(driver);
  std::set<std::string> made, covered;
  for (Variant v : kVariants) {
    const Outcome clean = runner.run(v, nullptr);
    ASSERT_TRUE(clean.backend);
    for (Phase p : {Phase::kSetUp, Phase::kRun, Phase::kTeardown})
      for (const auto& [call, n] : clean.counts.of(p)) made.insert(call);
  }
  for (const CallCase& c : kCalls) covered.insert(c.call);
  for (const std::string& call : made) EXPECT_TRUE(covered.count(call)) << call << " is made but never failed here";
  for (const std::string& call : covered) EXPECT_TRUE(made.count(call)) << call << " has a case but is never made";
}

}  // namespace
}  // namespace pump
