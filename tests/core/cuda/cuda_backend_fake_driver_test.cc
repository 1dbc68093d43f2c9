// CudaBackend on the CPU: against a missing driver, and against fake_driver (a
// synchronous stand-in libcuda that records every call).
#include "core/cuda/cuda_backend.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/common/log.h"
#include "tests/core/cuda/fake_driver_handle.h"

namespace pump {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr StreamId kAppStream = 0x7f00aa00;

std::mutex g_log_mutex;
std::vector<std::string> g_log;

void capture_log(LogLevel, const char* line) {
  std::lock_guard lock(g_log_mutex);
  g_log.emplace_back(line);
}

std::string all_log() {
  std::lock_guard lock(g_log_mutex);
  std::string s;
  for (const auto& l : g_log) s += l;
  return s;
}

class LogCapture {
 public:
  LogCapture() {
    std::lock_guard lock(g_log_mutex);
    g_log.clear();
    set_log_sink(&capture_log);
  }
  ~LogCapture() { set_log_sink(nullptr); }
};

TEST(CudaBackendCreate, ReturnsNullWithOneClearErrorWhenTheDriverLibraryIsMissing) {
  LogCapture capture;
  CudaBackendOptions options;
  options.driver_library = "libpump-no-such-cuda-driver.so.1";
  EXPECT_EQ(CudaBackend::create(0, options), nullptr);
  std::lock_guard lock(g_log_mutex);
  ASSERT_EQ(g_log.size(), 1u);
  EXPECT_NE(g_log[0].find("cuda backend unavailable for device 0"), std::string::npos) << g_log[0];
  EXPECT_NE(g_log[0].find("libpump-no-such-cuda-driver.so.1"), std::string::npos) << g_log[0];
}

TEST(CudaBackendCreate, ReturnsNullWithAClearErrorOnAMachineWithoutLibcuda) {
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(h);
    GTEST_SKIP() << "libcuda.so.1 is present here";
  }
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW)) {
    dlclose(h);
    GTEST_SKIP() << "libcuda.so.1 is present here";
  }
  LogCapture capture;
  EXPECT_EQ(CudaBackend::create(0), nullptr);
  EXPECT_NE(all_log().find("cannot load the CUDA driver libcuda.so.1"), std::string::npos) << all_log();
}

// ------------------------------------------------------------------ fake driver

// A restore run on the fake's modelled memory (FakeDriverTest::restore_back): the calls it
// made and whether the shadow's bytes came back.
struct RestoreRun {
  std::vector<FakeCall> calls;
  uint64_t address = 0;
  bool bytes_back = false;
};

class FakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(driver_.ok()) << dlerror(); }
  void TearDown() override {
    driver_.gate(false);
    backend_.reset();
  }

  CudaBackend& start(FakeDriverConfig config = {}, CudaBackendOptions options = {}) {
    driver_.reset(config);
    backend_ = driver_.backend(options);
    EXPECT_NE(backend_, nullptr);
    return *backend_;
  }

  std::vector<FakeCall> calls() { return driver_.calls(); }
  std::vector<FakeCall> calls_named(const char* name) { return driver_.calls_named(name); }
  static constexpr uint64_t kPiece = 64 * 1024;  // the fake driver's pinned arena is small
  // One batch: kBase saved to a shadow, kBase + 8 MiB restored from another (kPiece each).
  // Returns the first shadow's address (0 if none could be had) once both directions are done.
  uint64_t save_and_restore(CudaBackend& b, BatchFences* f) {
    const uint64_t shadow = b.allocate_host(2 * kPiece);
    if (shadow == 0) return 0;
    TransferBatch batch;
    batch.save = {{kBase, kPiece, shadow}};
    batch.restore = {{kBase + 8 * kMiB, kPiece, shadow + kPiece}};
    *f = b.submit(std::move(batch));
    return wait_done(f->in) && wait_done(f->out) ? shadow : 0;
  }
  // A backend populating by discard-and-prefetch (PUMP_POPULATE) over modelled memory.
  CudaBackend& start_discard_and_prefetch() {
    FakeDriverConfig config;
    config.model_memory = 1;
    CudaBackendOptions options;
    options.populate = CudaBackendOptions::Populate::kDiscardAndPrefetch;
    return start(config, options);
  }
  // One restore of `pieces` x kPiece bytes from a patterned shadow into garbage; the
  // calls made from the submit on, and whether the pattern came back.
  RestoreRun restore_back(CudaBackend& b, size_t pieces) {
    std::vector<uint8_t> device(pieces * kPiece, 0xDB), shadow(pieces * kPiece);
    for (size_t i = 0; i < shadow.size(); ++i) shadow[i] = static_cast<uint8_t>(i * 7 + 1);
    RestoreRun r;
    r.address = reinterpret_cast<uint64_t>(device.data());
    const size_t first = calls().size();
    TransferBatch batch;
    batch.restore = {{r.address, device.size(), reinterpret_cast<uint64_t>(shadow.data())}};
    if (!wait_done(b.submit(std::move(batch)).in)) return r;
    const std::vector<FakeCall> all = calls();
    r.calls.assign(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
    r.bytes_back = device == shadow;
    return r;
  }
  // A backend trusting a fence seen not ready for `trust`, with kAppStream's work held
  // ("running") and two fences marked on it.
  CudaBackend& start_held_with_trust(std::chrono::microseconds trust, Fence* first, Fence* second) {
    CudaBackendOptions options;
    options.fence_not_ready_trust = trust;
    CudaBackend& b = start({}, options);
    driver_.hold(kAppStream, true);
    *first = b.mark(kAppStream);
    *second = b.mark(kAppStream);
    return b;
  }
  bool wait_done(const Fence& f) {
    for (int i = 0; i < 2000 && !backend_->done(f); ++i) std::this_thread::sleep_for(1ms);
    return backend_->done(f);
  }

  testing::FakeDriver driver_;
  std::unique_ptr<CudaBackend> backend_;
};

TEST_F(FakeDriverTest, ReportsTheDeviceMemory) {
  CudaBackend& b = start();
  EXPECT_EQ(b.device_memory_bytes(), 80ull << 30);
  EXPECT_EQ(b.name(), "cuda");
}

TEST_F(FakeDriverTest, RefusesADriverOlderThanCuda13) {
  LogCapture capture;
  FakeDriverConfig config;
  config.driver_version = 12080;
  driver_.reset(config);
  CudaBackendOptions options;
  options.driver_library = PUMP_FAKE_CUDA_DRIVER;
  EXPECT_EQ(CudaBackend::create(0, options), nullptr);
  EXPECT_NE(all_log().find("needs CUDA 13.0"), std::string::npos) << all_log();
}

TEST_F(FakeDriverTest, RefusesADeviceWithoutConcurrentManagedAccess) {
  LogCapture capture;
  FakeDriverConfig config;
  config.concurrent_managed = 0;
  driver_.reset(config);
  CudaBackendOptions options;
  options.driver_library = PUMP_FAKE_CUDA_DRIVER;
  EXPECT_EQ(CudaBackend::create(0, options), nullptr);
  EXPECT_NE(all_log().find("CONCURRENT_MANAGED_ACCESS"), std::string::npos) << all_log();
}

TEST_F(FakeDriverTest, SubmitReturnsAtOnceWhileTheWorkerIsStuckInAPrefetch) {
  CudaBackend& b = start();
  driver_.gate(true);  // every prefetch call now blocks, as the real one does for the whole copy
  TransferBatch batch;
  batch.prefetch = {{kBase, 64 * kMiB}};
  const auto t0 = std::chrono::steady_clock::now();
  Fence f = b.submit(std::move(batch)).in;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 50ms);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(b.done(f));
  driver_.gate(false);
  ASSERT_TRUE(wait_done(f));
  auto prefetches = calls_named("cuMemPrefetchAsync");
  ASSERT_EQ(prefetches.size(), 1u);
  EXPECT_EQ(prefetches[0].location_type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(prefetches[0].stream, f.stream);  // on the backend's own stream
  auto records = calls_named("cuEventRecord");
  ASSERT_EQ(records.size(), 1u);  // the batch's fence, after its prefetch
  EXPECT_EQ(records[0].stream, f.stream);
}

TEST_F(FakeDriverTest, EvictionsWaitForTheirKernelOnTheOutStreamWhilePrefetchesGoOnTheInStream) {
  CudaBackend& b = start();
  Fence kernel = b.mark(kAppStream);
  ASSERT_FALSE(kernel.empty());
  TransferBatch batch;
  batch.wait_for = {kernel};
  batch.evict = {{kBase, 2 * kMiB}};
  batch.prefetch = {{kBase + 64 * kMiB, 2 * kMiB}};
  BatchFences f = b.submit(std::move(batch));
  ASSERT_TRUE(wait_done(f.in));
  ASSERT_TRUE(wait_done(f.out));
  std::vector<std::string> on_in, on_out;
  uint64_t out_stream = 0;
  for (const FakeCall& c : calls())
    if (std::strcmp(c.name, "cuMemPrefetchAsync") == 0 && c.location_type == CU_MEM_LOCATION_TYPE_HOST)
      out_stream = c.stream;
  for (const FakeCall& c : calls()) {
    std::string what = c.name;
    if (what == "cuMemPrefetchAsync") what += c.location_type == CU_MEM_LOCATION_TYPE_HOST ? "(host)" : "(device)";
    if (c.stream == f.in.stream) on_in.push_back(what);
    if (c.stream == out_stream) on_out.push_back(what);
  }
  EXPECT_EQ(on_out, (std::vector<std::string>{"cuStreamWaitEvent", "cuMemPrefetchAsync(host)", "cuEventRecord"}));
  EXPECT_EQ(on_in, (std::vector<std::string>{"cuMemPrefetchAsync(device)", "cuEventRecord"}));
}

TEST_F(FakeDriverTest, MarksRecordAnEventOnTheirStreamAndCountUp) {
  CudaBackend& b = start();
  Fence a1 = b.mark(kAppStream);
  Fence a2 = b.mark(kAppStream);
  Fence other = b.mark(kAppStream + 0x100);
  EXPECT_EQ(a1.stream, kAppStream);
  EXPECT_EQ(a2.value, a1.value + 1);
  EXPECT_EQ(other.stream, kAppStream + 0x100);
  EXPECT_TRUE(b.done(a2));  // the fake's events complete when recorded
  auto records = calls_named("cuEventRecord");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].stream, kAppStream);
  EXPECT_EQ(records[1].stream, kAppStream);
  EXPECT_EQ(records[2].stream, kAppStream + 0x100);
  EXPECT_EQ(b.stats().marks, 3u);
  EXPECT_EQ(b.stats().event_marks, 3u);
}

TEST_F(FakeDriverTest, NeverEnqueuesAnythingOnACapturingStream) {
  CudaBackend& b = start();
  Fence before = b.mark(kAppStream);
  driver_.set_capturing(kAppStream, true);
  EXPECT_TRUE(b.capturing(kAppStream));
  EXPECT_TRUE(b.mark(kAppStream).empty());
  driver_.gate(true);
  TransferBatch batch;
  batch.prefetch = {{kBase, 2 * kMiB}};
  Fence f = b.submit(std::move(batch)).in;
  b.stream_wait(kAppStream, f);  // returns at once: nothing may be queued on the stream
  size_t on_app_stream = 0;
  for (const FakeCall& c : calls()) on_app_stream += c.stream == kAppStream;
  EXPECT_EQ(on_app_stream, 1u) << "only the event of `before`";
  EXPECT_FALSE(before.empty());
  driver_.set_capturing(kAppStream, false);
  EXPECT_FALSE(b.capturing(kAppStream));
  driver_.gate(false);
}

TEST_F(FakeDriverTest, ACaptureIsNamedByTheDriversCaptureIdAndAFailedQueryLeavesItUnknown) {
  CudaBackend& b = start();
  EXPECT_EQ(b.capture_id(kAppStream), 0u);
  driver_.set_capturing(kAppStream, true);
  EXPECT_EQ(b.capture_id(kAppStream), kAppStream) << "the fake names a capture after its stream";
  LogCapture capture;
  driver_.fail("cuStreamGetCaptureInfo", 0, CUDA_ERROR_UNKNOWN, 1);
  EXPECT_EQ(b.capture_id(kAppStream), DeviceBackend::kCaptureUnknown);
  EXPECT_EQ(b.stats().failed_calls, 1u);
  driver_.set_capturing(kAppStream, false);
  EXPECT_EQ(b.capture_id(kAppStream), 0u);
}

TEST_F(FakeDriverTest, AThreadWithoutADriverContextGetsThePrimaryOneAndIsNotMistakenForCapture) {
  FakeDriverConfig config;
  config.contextless_threads = 1;  // like PyTorch's threads under the CUDA 13 runtime
  CudaBackend& b = start(config);
  bool captured = true;
  Fence fence;
  std::thread app([&] {
    captured = b.capturing(kAppStream);
    fence = b.mark(kAppStream);
  });
  app.join();
  EXPECT_FALSE(captured);
  EXPECT_FALSE(fence.empty()) << "the kernel's fence was dropped: its blocks could be evicted while it runs";
}

TEST_F(FakeDriverTest, LegacyAndPerThreadDefaultStreamsGetTheirOwnFences) {
  CudaBackend& b = start();
  Fence legacy = b.mark(0);
  Fence legacy_alias = b.mark(cuda::kLegacyStreamHandle);
  Fence per_thread = b.mark(cuda::kPerThreadStreamHandle);
  EXPECT_EQ(legacy.stream, legacy_alias.stream);
  EXPECT_EQ(legacy_alias.value, legacy.value + 1);
  EXPECT_NE(per_thread.stream, legacy.stream);
  auto records = calls_named("cuEventRecord");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].stream, 0u);
  EXPECT_EQ(records[2].stream, cuda::kPerThreadStreamHandle);  // the handle itself goes to the driver
  EXPECT_TRUE(b.done(per_thread));
}

TEST_F(FakeDriverTest, ManyScatteredRangesBecomeOneBatchCall) {
  CudaBackend& b = start();
  TransferBatch batch;
  for (uint64_t i = 0; i < 8; ++i) batch.prefetch.push_back({kBase + i * 4 * kMiB, 2 * kMiB});
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).in));
  auto batched = calls_named("cuMemPrefetchBatchAsync");
  ASSERT_EQ(batched.size(), 1u);
  EXPECT_EQ(batched[0].value, 8u);
  EXPECT_TRUE(calls_named("cuMemPrefetchAsync").empty());
  CudaBackendStats s = b.stats();
  EXPECT_EQ(s.batch_calls, 1u);
  EXPECT_EQ(s.prefetch_calls, 1u);
  EXPECT_EQ(s.prefetch_bytes, 16 * kMiB);
}

TEST_F(FakeDriverTest, DiscardsUseTheDiscardCall) {
  CudaBackend& b = start();
  TransferBatch batch;
  batch.discard = {{kBase, 2 * kMiB}};
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).out));  // a discard is the batch's out side
  EXPECT_EQ(calls_named("cuMemDiscardBatchAsync").size(), 1u);
  EXPECT_EQ(b.stats().discard_bytes, 2 * kMiB);
}

TEST_F(FakeDriverTest, DiscardsBecomeEvictionsWithoutTheDiscardCall) {
  FakeDriverConfig config;
  config.batch_calls = 0;
  CudaBackend& b = start(config);
  TransferBatch batch;
  batch.discard = {{kBase, 2 * kMiB}};
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).out));  // a discard is the batch's out side
  auto prefetches = calls_named("cuMemPrefetchAsync");
  ASSERT_EQ(prefetches.size(), 1u);
  EXPECT_EQ(prefetches[0].location_type, CU_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(b.stats().evict_bytes, 2 * kMiB);
}

TEST_F(FakeDriverTest, PrefetchErrorsAreCountedLoggedOnceAndNotFatal) {
  LogCapture capture;
  FakeDriverConfig config;
  config.prefetch_result = CUDA_ERROR_INVALID_VALUE;
  CudaBackend& b = start(config);
  Fence last;
  for (int i = 0; i < 3; ++i) {
    TransferBatch batch;
    batch.prefetch = {{kBase + i * 8 * kMiB, 2 * kMiB}};
    last = b.submit(std::move(batch)).in;
  }
  ASSERT_TRUE(wait_done(last));  // fences still complete
  EXPECT_EQ(b.stats().failed_calls, 3u);
  std::lock_guard lock(g_log_mutex);
  size_t mentions = 0;
  for (const auto& l : g_log) mentions += l.find("CUDA_ERROR_INVALID_VALUE") != std::string::npos;
  EXPECT_EQ(mentions, 1u);
}

TEST_F(FakeDriverTest, AKernelWhoseFenceCannotBeRecordedIsWaitedForBeforeMarkReturns) {
  LogCapture capture;
  CudaBackend& b = start();
  driver_.hold(kAppStream, true);  // the kernel queued on it is still running
  driver_.fail("cuEventRecord", 0, CUDA_ERROR_LAUNCH_FAILED, 1);
  auto marked = std::async(std::launch::async, [&] { return b.mark(kAppStream); });
  // An empty fence reads "nothing to wait for": handed out while the kernel runs, it
  // would let the engine evict the kernel's memory under it.
  EXPECT_EQ(marked.wait_for(50ms), std::future_status::timeout);
  driver_.hold(kAppStream, false);
  ASSERT_EQ(marked.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(marked.get().empty());
  EXPECT_EQ(driver_.calls_named("cuStreamSynchronize").size(), 1u);
  std::lock_guard lock(g_log_mutex);
  ASSERT_EQ(g_log.size(), 1u);
  EXPECT_NE(g_log[0].find("cuEventRecord"), std::string::npos) << g_log[0];
  EXPECT_NE(g_log[0].find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos) << g_log[0];
}

TEST_F(FakeDriverTest, AStreamWhoseCaptureStatusCannotBeReadIsTakenAsNotCapturing) {
  LogCapture capture;
  CudaBackend& b = start();
  driver_.fail("cuStreamIsCapturing", 0, CUDA_ERROR_UNKNOWN, -1);
  // Taken as captured, its kernels would run on memory pump dropped without it coming back.
  EXPECT_FALSE(b.capturing(kAppStream));
  EXPECT_FALSE(b.capturing(kAppStream));
  EXPECT_FALSE(b.mark(kAppStream).empty());
  EXPECT_EQ(b.stats().failed_calls, 2u);
  std::lock_guard lock(g_log_mutex);
  ASSERT_EQ(g_log.size(), 1u) << "one message, however often it fails";
  EXPECT_NE(g_log[0].find("cuStreamIsCapturing"), std::string::npos) << g_log[0];
}

TEST_F(FakeDriverTest, AFenceQueryThatFailsIsReportedAndCountsAsComplete) {
  LogCapture capture;
  CudaBackendOptions options;
  options.fence_not_ready_trust = std::chrono::microseconds(0);  // the second look asks the driver
  CudaBackend& b = start({}, options);
  driver_.hold(kAppStream, true);
  const Fence f = b.mark(kAppStream);
  EXPECT_FALSE(b.done(f));
  driver_.fail("cuEventQuery", 0, CUDA_ERROR_UNKNOWN, 1);
  EXPECT_TRUE(b.done(f));  // only a dead context makes a query fail: nothing runs any more
  driver_.hold(kAppStream, false);
  std::lock_guard lock(g_log_mutex);
  ASSERT_EQ(g_log.size(), 1u);
  EXPECT_NE(g_log[0].find("cuEventQuery"), std::string::npos) << g_log[0];
}

TEST_F(FakeDriverTest, AFullQueueBlocksTheSubmitterUntilTheWorkerCatchesUp) {
  CudaBackendOptions options;
  options.queue_capacity = 1;
  CudaBackend& b = start({}, options);
  driver_.gate(true);
  auto one_range = [](uint64_t i) {
    TransferBatch batch;
    batch.prefetch = {{kBase + i * 8 * kMiB, 2 * kMiB}};
    return batch;
  };
  b.submit(one_range(0));
  for (int i = 0; i < 200 && calls_named("cuMemPrefetchAsync").empty(); ++i) std::this_thread::sleep_for(1ms);
  b.submit(one_range(1));  // queued behind the stuck worker: the queue is now full
  auto third = std::async(std::launch::async, [&] { return b.submit(one_range(2)).in; });
  EXPECT_EQ(third.wait_for(50ms), std::future_status::timeout);
  driver_.gate(false);
  ASSERT_EQ(third.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(wait_done(third.get()));
  EXPECT_EQ(b.stats().blocked_submits, 1u);
  EXPECT_EQ(b.stats().queue_high_water, 1u);
}

TEST_F(FakeDriverTest, AKernelWaitsForABatchOnlyOnceTheWorkerIssuedIt) {
  CudaBackend& b = start();
  Fence kernel = b.mark(kAppStream);
  EXPECT_FALSE(kernel.empty());
  TransferBatch batch;
  batch.fetch_wait_for = {kernel};
  batch.prefetch = {{kBase, 2 * kMiB}};
  driver_.gate(true);
  Fence f = b.submit(std::move(batch)).in;
  EXPECT_FALSE(b.done(f));
  // A kernel can only wait for a batch's event once it is recorded.
  auto waiter = std::async(std::launch::async, [&] { b.stream_wait(kAppStream, f); });
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);
  driver_.gate(false);
  ASSERT_EQ(waiter.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(wait_done(f));
  auto event_waits = calls_named("cuStreamWaitEvent");
  ASSERT_GE(event_waits.size(), 1u);
  EXPECT_EQ(event_waits[0].stream, f.stream);  // the batch waited for the kernel's event
}

// A fence is asked about often (a policy looks at every candidate's last kernel): once seen
// complete it is answered without the driver, and nothing is made to wait for it.
TEST_F(FakeDriverTest, AFenceSeenCompleteIsNotAskedAgainNorWaitedFor) {
  CudaBackend& b = start();
  const Fence kernel = b.mark(kAppStream);
  const uint64_t queries = driver_.count("cuEventQuery");
  EXPECT_TRUE(b.done(kernel));
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 1);
  EXPECT_TRUE(b.done(kernel));
  EXPECT_TRUE(b.done(kernel));
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 1);
  const uint64_t waits = driver_.count("cuStreamWaitEvent");
  b.stream_wait(kAppStream + 1, kernel);
  EXPECT_EQ(driver_.count("cuStreamWaitEvent"), waits);
  // A later fence is asked about afresh.
  const Fence later = b.mark(kAppStream);
  EXPECT_TRUE(b.done(later));
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 2);
}

// A stream runs in order: a fence seen not ready answers for the later fences of its stream
// for a while, without the driver (a policy ranking every resident block asks about tens of
// one stream's fences per kernel). Another stream's fences are asked about as before.
TEST_F(FakeDriverTest, AFenceSeenNotReadyAnswersForTheLaterFencesOfItsStream) {
  Fence first, second;
  CudaBackend& b = start_held_with_trust(std::chrono::hours(1), &first, &second);  // no expiry within the test
  const Fence other = b.mark(kAppStream + 1);
  const uint64_t queries = driver_.count("cuEventQuery");
  EXPECT_FALSE(b.done(first));
  EXPECT_FALSE(b.done(second));
  EXPECT_FALSE(b.done(first));
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 1);
  EXPECT_TRUE(b.done(other));
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 2);
  // An earlier fence of the stream is not covered: it may well be complete.
  driver_.hold(kAppStream, false);
  const Fence third = b.mark(kAppStream);
  EXPECT_FALSE(b.done(third));  // trusted: "not ready" is the safe answer
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 2);
}

// A transfer's fence is asked about each time: the engine frees an eviction's room when its
// fence completes, and a stale "not ready" would hold fetches behind it.
TEST_F(FakeDriverTest, ATransfersFenceIsAskedAboutEachTime) {
  Fence first, second;
  CudaBackend& b = start_held_with_trust(std::chrono::hours(1), &first, &second);
  driver_.hold(kAppStream, false);
  TransferBatch probe;
  probe.prefetch = {{kBase, 2 * kMiB}};
  ASSERT_TRUE(wait_done(b.submit(std::move(probe)).in));
  const std::vector<FakeCall> prefetches = calls_named("cuMemPrefetchAsync");
  ASSERT_FALSE(prefetches.empty());
  const uint64_t in_stream = prefetches.back().stream;
  driver_.hold(in_stream, true);
  TransferBatch batch;
  batch.prefetch = {{kBase + 8 * kMiB, 2 * kMiB}};
  const Fence in = b.submit(std::move(batch)).in;
  ASSERT_TRUE(b.wait_issued(std::chrono::seconds(2)));
  const uint64_t queries = driver_.count("cuEventQuery");
  EXPECT_FALSE(b.done(in));
  EXPECT_FALSE(b.done(in));
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 2);
  driver_.hold(in_stream, false);
  EXPECT_TRUE(b.done(in));
}

// The trust runs out, so a fence that completed is seen complete again (a host wait polls).
TEST_F(FakeDriverTest, AFenceSeenNotReadyIsAskedAgainOnceItsTrustRanOut) {
  Fence first, second;
  CudaBackend& b = start_held_with_trust(std::chrono::microseconds(100), &first, &second);
  EXPECT_FALSE(b.done(first));
  driver_.hold(kAppStream, false);
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(b.done(second));
  EXPECT_TRUE(b.done(first));
}

// With no trust every fence not yet seen complete is asked about.
TEST_F(FakeDriverTest, WithoutTrustEveryFenceNotSeenCompleteIsAskedAbout) {
  Fence first, second;
  CudaBackend& b = start_held_with_trust(std::chrono::microseconds(0), &first, &second);
  const uint64_t queries = driver_.count("cuEventQuery");
  EXPECT_FALSE(b.done(first));
  EXPECT_FALSE(b.done(second));
  EXPECT_EQ(driver_.count("cuEventQuery"), queries + 2);
  driver_.hold(kAppStream, false);
}

TEST_F(FakeDriverTest, DestructionIssuesEveryQueuedBatchFirst) {
  CudaBackend& b = start();
  driver_.gate(true);
  for (uint64_t i = 0; i < 3; ++i) {
    TransferBatch batch;
    batch.prefetch = {{kBase + i * 8 * kMiB, 2 * kMiB}};
    b.submit(std::move(batch));
  }
  std::thread opener([&] {
    std::this_thread::sleep_for(20ms);
    driver_.gate(false);
  });
  backend_.reset();
  opener.join();
  EXPECT_EQ(calls_named("cuMemPrefetchAsync").size(), 3u);
}

TEST_F(FakeDriverTest, CountsTheWorkersTimeInsidePrefetchCalls) {
  CudaBackend& b = start();
  driver_.gate(true);
  TransferBatch batch;
  batch.prefetch = {{kBase, 2 * kMiB}};
  Fence f = b.submit(std::move(batch)).in;
  std::this_thread::sleep_for(30ms);
  driver_.gate(false);
  ASSERT_TRUE(wait_done(f));
  EXPECT_GE(b.stats().prefetch_call_ns, 20'000'000u);
}

// ------------------------------------------------------------------ the copy data path

std::vector<std::string> names_on(const std::vector<FakeCall>& calls, uint64_t stream) {
  std::vector<std::string> out;
  for (const FakeCall& c : calls)
    if (c.stream == stream && std::strcmp(c.name, "cuStreamWaitEvent") != 0) out.push_back(c.name);
  return out;
}

TEST_F(FakeDriverTest, SavesCopyToTheShadowThenDiscardOnTheOutStreamAndRestoresPopulateThenCopyOnTheInStream) {
  CudaBackend& b = start();
  ASSERT_TRUE(b.has_copy_path());
  BatchFences f;
  const uint64_t shadow = save_and_restore(b, &f);
  ASSERT_NE(shadow, 0u);
  EXPECT_EQ(b.stats().pinned_bytes, 2 * kPiece);
  ASSERT_FALSE(f.out.empty());
  ASSERT_NE(f.out.stream, f.in.stream);  // two directions, two streams
  const auto all = calls();
  auto copies_out = calls_named("cuMemcpyDtoHAsync");
  ASSERT_EQ(copies_out.size(), 1u);
  EXPECT_EQ(copies_out[0].address, kBase);
  EXPECT_EQ(copies_out[0].value, shadow);
  const uint64_t out_stream = copies_out[0].stream;
  EXPECT_EQ(names_on(all, out_stream),
            (std::vector<std::string>{"cuMemcpyDtoHAsync", "cuMemDiscardBatchAsync", "cuEventRecord"}));
  auto copies_in = calls_named("cuMemcpyHtoDAsync");
  ASSERT_EQ(copies_in.size(), 1u);
  EXPECT_EQ(copies_in[0].address, kBase + 8 * kMiB);
  const uint64_t in_stream = copies_in[0].stream;
  EXPECT_NE(in_stream, out_stream);
  // The pages are populated first, on a stream of their own, and the copy waits for that.
  size_t populate_at = 0, wait_at = 0, copy_at = 0;
  uint64_t populate_stream = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const FakeCall& c = all[i];
    if (std::strcmp(c.name, "cuMemPrefetchAsync") == 0 && c.address == kBase + 8 * kMiB &&
        c.location_type == CU_MEM_LOCATION_TYPE_DEVICE) {
      populate_at = i + 1;
      populate_stream = c.stream;
    }
    if (c.stream == in_stream && std::strcmp(c.name, "cuStreamWaitEvent") == 0 && !wait_at) wait_at = i + 1;
    if (c.stream == in_stream && std::strcmp(c.name, "cuMemcpyHtoDAsync") == 0) copy_at = i + 1;
  }
  ASSERT_NE(populate_at, 0u);
  EXPECT_NE(populate_stream, in_stream);
  EXPECT_NE(populate_stream, out_stream);
  EXPECT_LT(populate_at, wait_at);
  EXPECT_LT(wait_at, copy_at);
  const CudaBackendStats s = b.stats();
  EXPECT_EQ(s.save_bytes, kPiece);
  EXPECT_EQ(s.restore_bytes, kPiece);
  EXPECT_EQ(s.discard_bytes, kPiece);
  EXPECT_EQ(s.populate_bytes, kPiece);
}

// Where a call landed in the driver's call order, at or after index `from` (1-based; 0: not called).
size_t position(const std::vector<FakeCall>& all, const char* name, uint64_t address, size_t from = 0) {
  for (size_t i = from; i < all.size(); ++i)
    if (std::strcmp(all[i].name, name) == 0 && all[i].address == address) return i + 1;
  return 0;
}

// The worker's CPU time is counted beside its busy time (on the H100 they told discards,
// pure driver work, from populates that sleep until their stream gets somewhere).
TEST_F(FakeDriverTest, TheWorkersCpuTimeInBatchesAndDiscardsIsCounted) {
  CudaBackend& b = start();
  const uint64_t shadow = b.allocate_host(2 * kPiece);
  ASSERT_NE(shadow, 0u);
  TransferBatch batch;
  batch.save = {{kBase, kPiece, shadow}};
  const BatchFences f = b.submit(std::move(batch));
  ASSERT_TRUE(wait_done(f.out));
  // Added once the batch is issued whole, after its fences were published.
  for (int i = 0; i < 2000 && b.stats().worker_cpu_ns == 0; ++i) std::this_thread::sleep_for(1ms);
  const CudaBackendStats s = b.stats();
  EXPECT_EQ(s.discard_calls, 1u);
  EXPECT_GT(s.worker_cpu_ns, 0u);
  EXPECT_GT(s.discard_cpu_ns, 0u);
  EXPECT_LE(s.discard_cpu_ns, s.worker_cpu_ns) << "the discard's CPU time is part of the batch's";
}

// A batch whose fetches need nothing of its evictions (no fetch_after_out) has its in side
// issued first: populates and restores before the out side's copies and discards, so a
// launch waiting for the fetches goes on while the drops are issued. With fetch_after_out
// the out side goes first and the in side waits for it.
TEST_F(FakeDriverTest, ABatchsInSideIsIssuedBeforeItsOutSideUnlessItNeedsTheirRoom) {
  CudaBackend& b = start();
  ASSERT_TRUE(b.has_copy_path());
  const uint64_t shadow = b.allocate_host(2 * kPiece);
  ASSERT_NE(shadow, 0u);
  for (const bool after_out : {false, true}) {
    const size_t first = calls().size();
    TransferBatch batch;
    batch.save = {{kBase, kPiece, shadow}};
    batch.restore = {{kBase + 8 * kMiB, kPiece, shadow + kPiece}};
    batch.fetch_after_out = after_out;
    const BatchFences f = b.submit(std::move(batch));
    ASSERT_TRUE(wait_done(f.in));
    ASSERT_TRUE(wait_done(f.out));
    const auto all = calls();
    const size_t populate_at = position(all, "cuMemPrefetchAsync", kBase + 8 * kMiB, first);
    const size_t save_at = position(all, "cuMemcpyDtoHAsync", kBase, first);
    const size_t discard_at = position(all, "cuMemDiscardBatchAsync", kBase, first);
    const size_t restore_at = position(all, "cuMemcpyHtoDAsync", kBase + 8 * kMiB, first);
    ASSERT_NE(populate_at * save_at * discard_at * restore_at, 0u) << "after_out " << after_out;
    if (after_out) {
      EXPECT_LT(discard_at, populate_at);
      EXPECT_LT(discard_at, restore_at);
    } else {
      EXPECT_LT(populate_at, save_at);
      EXPECT_LT(restore_at, save_at);
      EXPECT_LT(restore_at, discard_at);
    }
  }
}

TEST_F(FakeDriverTest, FetchesWaitForTheOutWorkOfTheirBatchOnlyWhenAskedTo) {
  CudaBackend& b = start();
  auto waits_on_in_stream = [&](const BatchFences& f) {
    EXPECT_TRUE(wait_done(f.in));
    uint64_t in_stream = 0;
    for (const FakeCall& c : calls())
      if (std::strcmp(c.name, "cuMemPrefetchAsync") == 0) in_stream = c.stream;
    size_t n = 0;
    for (const FakeCall& c : calls())
      if (c.stream == in_stream && std::strcmp(c.name, "cuStreamWaitEvent") == 0) ++n;
    return n;
  };
  TransferBatch apart;
  apart.discard = {{kBase, kMiB}};
  apart.prefetch = {{kBase + 4 * kMiB, kMiB}};
  EXPECT_EQ(waits_on_in_stream(b.submit(std::move(apart))), 0u);
  TransferBatch after;
  after.discard = {{kBase + 8 * kMiB, kMiB}};
  after.prefetch = {{kBase + 12 * kMiB, kMiB}};
  after.fetch_after_out = true;
  EXPECT_EQ(waits_on_in_stream(b.submit(std::move(after))), 1u);
}

// fetch_after_out (the fetches take the room the evictions free): with overlap_out_in each
// group of fetches is queued as soon as the evictions queued before it free its room, clean
// drops first, so restores run while later saves do.
TEST_F(FakeDriverTest, FetchesTakingTheRoomOfEvictionsStartAsEachGroupOfThemIsQueued) {
  CudaBackendOptions options;
  options.overlap_out_in = true;
  options.out_group_bytes = kPiece;
  options.restore_group_bytes = kPiece;
  CudaBackend& b = start({}, options);
  const uint64_t shadow = b.allocate_host(5 * kPiece);
  ASSERT_NE(shadow, 0u);
  const uint64_t clean = kBase, s1 = kBase + kMiB, s2 = kBase + 2 * kMiB;
  const uint64_t r1 = kBase + 8 * kMiB, r2 = kBase + 9 * kMiB, r3 = kBase + 10 * kMiB;
  TransferBatch batch;
  batch.discard = {{clean, kPiece}};
  batch.save = {{s1, kPiece, shadow}, {s2, kPiece, shadow + kPiece}};
  batch.restore = {
      {r1, kPiece, shadow + 2 * kPiece}, {r2, kPiece, shadow + 3 * kPiece}, {r3, kPiece, shadow + 4 * kPiece}};
  batch.fetch_after_out = true;
  const BatchFences f = b.submit(std::move(batch));
  ASSERT_TRUE(wait_done(f.in) && wait_done(f.out));
  const auto all = calls();
  const size_t drop_clean = position(all, "cuMemDiscardBatchAsync", clean);
  const size_t save1 = position(all, "cuMemcpyDtoHAsync", s1), save2 = position(all, "cuMemcpyDtoHAsync", s2);
  const size_t drop1 = position(all, "cuMemDiscardBatchAsync", s1), drop2 = position(all, "cuMemDiscardBatchAsync", s2);
  const size_t fetch1 = position(all, "cuMemcpyHtoDAsync", r1), fetch2 = position(all, "cuMemcpyHtoDAsync", r2),
               fetch3 = position(all, "cuMemcpyHtoDAsync", r3);
  ASSERT_TRUE(drop_clean && save1 && save2 && drop1 && drop2 && fetch1 && fetch2 && fetch3);
  EXPECT_LT(drop_clean, save1) << "clean data waited for the saves before leaving";
  EXPECT_LT(drop_clean, fetch1);
  EXPECT_LT(fetch1, save1) << "the first restore waited for saves it does not need";
  EXPECT_LT(drop1, fetch2);
  EXPECT_LT(fetch2, save2);
  EXPECT_LT(drop2, fetch3);
  // Each restore's populate and copy follow a wait of their streams for the out stream.
  size_t waits_before_fetch2 = 0;
  const uint64_t out_stream = all[save1 - 1].stream;
  for (size_t i = drop1; i < fetch2; ++i)
    waits_before_fetch2 += std::strcmp(all[i].name, "cuEventRecord") == 0 && all[i].stream == out_stream;
  EXPECT_GE(waits_before_fetch2, 1u) << "the second restore was not ordered after the first save's drop";
  EXPECT_EQ(b.stats().restore_bytes, 3 * kPiece);
  EXPECT_EQ(b.stats().save_bytes, 2 * kPiece);
}

TEST_F(FakeDriverTest, WithoutOverlapOrForABlockLeavingAndComingBackFetchesWaitForEveryEviction) {
  for (const bool overlap : {false, true}) {
    CudaBackendOptions options;
    options.overlap_out_in = overlap;
    options.out_group_bytes = kPiece;
    options.restore_group_bytes = kPiece;
    CudaBackend& b = start({}, options);
    const uint64_t shadow = b.allocate_host(3 * kPiece);
    ASSERT_NE(shadow, 0u);
    TransferBatch batch;
    batch.save = {{kBase, kPiece, shadow}, {kBase + kMiB, kPiece, shadow + kPiece}};
    // Without overlap any restore; with it, one of a block that leaves in this very batch.
    const uint64_t back = overlap ? kBase + kMiB : kBase + 8 * kMiB;
    batch.restore = {{back, kPiece, overlap ? shadow + kPiece : shadow + 2 * kPiece}};
    batch.fetch_after_out = true;
    const BatchFences f = b.submit(std::move(batch));
    ASSERT_TRUE(wait_done(f.in) && wait_done(f.out));
    const auto all = calls();
    const size_t last_drop =
        position(all, "cuMemDiscardBatchAsync", kBase + kMiB) > position(all, "cuMemDiscardBatchAsync", kBase)
            ? position(all, "cuMemDiscardBatchAsync", kBase + kMiB)
            : position(all, "cuMemDiscardBatchAsync", kBase);
    const size_t fetch = position(all, "cuMemcpyHtoDAsync", back);
    ASSERT_TRUE(last_drop && fetch);
    EXPECT_LT(last_drop, fetch) << (overlap ? "a block came back before all of its way out" : "overlapped while off");
  }
}

TEST_F(FakeDriverTest, AFailedCopyToTheShadowIsDoneByTheHostAndNothingIsLost) {
  FakeDriverConfig config;
  config.copy_result = CUDA_ERROR_INVALID_VALUE;
  CudaBackend& b = start(config, CudaBackendOptions{});
  // Real host memory stands in for the managed range, so the host fallback can copy it.
  std::vector<uint8_t> range(64 * 1024), shadow(64 * 1024, 0);
  for (size_t i = 0; i < range.size(); ++i) range[i] = static_cast<uint8_t>(i * 7);
  const uint64_t address = reinterpret_cast<uint64_t>(range.data());
  TransferBatch batch;
  batch.save = {{address, range.size(), reinterpret_cast<uint64_t>(shadow.data())}};
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).out));
  EXPECT_EQ(shadow, range);
  EXPECT_EQ(b.stats().copy_failures, 1u);
  EXPECT_TRUE(calls_named("cuMemDiscardBatchAsync").empty());  // its pages are kept
}

TEST_F(FakeDriverTest, AFailedCopyBackIsDoneByTheHost) {
  FakeDriverConfig config;
  config.copy_result = CUDA_ERROR_INVALID_VALUE;
  CudaBackend& b = start(config, CudaBackendOptions{});
  std::vector<uint8_t> range(64 * 1024, 0), shadow(64 * 1024);
  for (size_t i = 0; i < shadow.size(); ++i) shadow[i] = static_cast<uint8_t>(i * 13);
  TransferBatch batch;
  batch.restore = {{reinterpret_cast<uint64_t>(range.data()), range.size(), reinterpret_cast<uint64_t>(shadow.data())}};
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).in));
  EXPECT_EQ(range, shadow);
  EXPECT_EQ(b.stats().copy_failures, 1u);
}

TEST_F(FakeDriverTest, WithoutTheCopyCallsThereIsNoHostMemoryForShadows) {
  FakeDriverConfig config;
  config.copy_calls = 0;
  CudaBackend& b = start(config, CudaBackendOptions{});
  EXPECT_FALSE(b.has_copy_path());
  EXPECT_EQ(b.allocate_host(kMiB), 0u);  // so the engine never saves: unified memory instead
}

TEST_F(FakeDriverTest, PoisonFillsDiscardedRangesWithNanAndKeepsThePages) {
  CudaBackendOptions options;
  options.poison = true;
  CudaBackend& b = start({}, options);
  TransferBatch batch;
  batch.discard = {{kBase, kMiB + 2}};
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).out));
  EXPECT_TRUE(calls_named("cuMemDiscardBatchAsync").empty());
  auto words = calls_named("cuMemsetD32Async");
  ASSERT_EQ(words.size(), 1u);
  EXPECT_EQ(words[0].value, 0xFFFFFFFFu);
  EXPECT_EQ(words[0].bytes, kMiB);
  ASSERT_EQ(calls_named("cuMemsetD8Async").size(), 1u);
  EXPECT_EQ(b.stats().poisoned_bytes, kMiB + 2);
}

TEST_F(FakeDriverTest, ChecksumModeReportsACleanRangeThatNoLongerMatchesItsShadow) {
  FakeDriverConfig config;
  config.model_memory = 1;
  CudaBackendOptions options;
  options.check_clean = true;
  options.check_chunk_bytes = 16 * 1024;
  CudaBackend& b = start(config, options);
  // Host memory stands in for the two managed ranges; their shadows hold what was saved.
  std::vector<uint8_t> same(40 * 1024), changed(40 * 1024);
  for (size_t i = 0; i < same.size(); ++i) same[i] = changed[i] = static_cast<uint8_t>(i * 31);
  std::vector<uint8_t> same_shadow = same, changed_shadow = changed;
  changed[33 * 1024 + 5] ^= 1;  // a write pump did not see, in the third piece read back
  auto at = [](std::vector<uint8_t>& v) { return reinterpret_cast<uint64_t>(v.data()); };
  TransferBatch batch;
  batch.discard = {{at(same), same.size()}, {at(changed), changed.size()}};
  batch.check_clean = {{at(same), same.size(), at(same_shadow)}, {at(changed), changed.size(), at(changed_shadow)}};
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).out));
  EXPECT_EQ(b.stats().checked_clean_bytes, same.size() + changed.size());
  EXPECT_EQ(b.stats().clean_mismatches, 1u);
  EXPECT_EQ(calls_named("cuMemDiscardBatchAsync").size(), 1u);  // the discards still happen
}

// PUMP_POPULATE=discard-and-prefetch: a restore's dropped pages are populated by one
// discard-and-prefetch batch call, before the copy back (which then lands: the call may
// leave any bytes there), and not by prefetches.
TEST_F(FakeDriverTest, DiscardAndPrefetchPopulatesBeforeTheRestoreCopiesBack) {
  CudaBackend& b = start_discard_and_prefetch();
  const RestoreRun r = restore_back(b, 3);
  EXPECT_TRUE(r.bytes_back) << "the restore copied the shadow back";
  const size_t populate_at = position(r.calls, "cuMemDiscardAndPrefetchBatchAsync", r.address);
  const size_t copy_at = position(r.calls, "cuMemcpyHtoDAsync", r.address);
  ASSERT_NE(populate_at, 0u);
  ASSERT_NE(copy_at, 0u);
  EXPECT_LT(populate_at, copy_at);
  EXPECT_EQ(position(r.calls, "cuMemPrefetchAsync", r.address), 0u) << "no prefetch populates it";
  EXPECT_EQ(b.stats().populate_calls, 1u);
}

// A discard-and-prefetch call that fails populates by prefetch instead: nothing is lost.
TEST_F(FakeDriverTest, AFailedDiscardAndPrefetchPopulatesByPrefetch) {
  CudaBackend& b = start_discard_and_prefetch();
  driver_.fail("cuMemDiscardAndPrefetchBatchAsync", 0, CUDA_ERROR_INVALID_VALUE, 1);
  const RestoreRun r = restore_back(b, 2);
  EXPECT_TRUE(r.bytes_back);
  const size_t prefetch_at = position(r.calls, "cuMemPrefetchAsync", r.address);
  ASSERT_NE(prefetch_at, 0u) << "populated by prefetch after the failure";
  EXPECT_LT(prefetch_at, position(r.calls, "cuMemcpyHtoDAsync", r.address));
  EXPECT_EQ(b.stats().failed_calls, 1u);
}

// The hold kernel's launches among `all` (the fake records them with value kHoldKernel).
std::vector<FakeCall> holds_in(const std::vector<FakeCall>& all) {
  std::vector<FakeCall> out;
  for (const FakeCall& c : all)
    if (std::strcmp(c.name, "cuLaunchKernel") == 0 && c.value == kHoldKernel) out.push_back(c);
  return out;
}

// PUMP_POPULATE=auto with the copy kernels: a populate on an idle stream queues an empty
// kernel first, on that stream, then prefetches each piece (deferred behind it, they
// populate); one queued behind work needs no kernel.
// Shadows are pinned by registering memory the backend mapped and touched (the driver is
// held for the register call only: core/cuda/host_pinner.h), and are real, writable memory.
TEST_F(FakeDriverTest, ShadowsArePinnedByRegisteringMappedMemory) {
  FakeDriverConfig config;
  config.host_register = 1;
  CudaBackend& b = start(config);
  const uint64_t shadow = b.allocate_host(4 * kMiB);
  ASSERT_NE(shadow, 0u);
  EXPECT_EQ(shadow % (2 * kMiB), 0u) << "at a huge-page boundary";
  std::memset(reinterpret_cast<void*>(shadow), 0x5A, 4 * kMiB);
  const auto registered = calls_named("cuMemHostRegister");
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(registered[0].address, shadow);
  EXPECT_EQ(registered[0].bytes, 4 * kMiB);
  EXPECT_TRUE(registered[0].value & CU_MEMHOSTREGISTER_PORTABLE) << "the worker copies from it too";
  EXPECT_EQ(driver_.count("cuMemHostAlloc"), 0u);
  EXPECT_EQ(b.stats().pinned_registered_bytes, 4 * kMiB);
  EXPECT_EQ(b.stats().pinned_bytes, 4 * kMiB);
}

// The pages are touched by PUMP_PIN_THREADS threads in parts of whole huge pages: whatever the
// count against the slab's pages (fewer, more, not a divisor), every page is present before the
// register call, and the slab is one registration of the whole, writable.
TEST_F(FakeDriverTest, EveryPageOfASlabIsTouchedWhateverTheThreadCount) {
  const long page = sysconf(_SC_PAGESIZE);
  for (unsigned threads : {1u, 3u, 8u, 64u}) {
    for (uint64_t bytes : {kMiB, 9 * kMiB, 16 * kMiB}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, " << bytes / kMiB << " MiB");
      FakeDriverConfig config;
      config.host_register = 1;
      CudaBackendOptions options;
      options.pin_threads = threads;
      CudaBackend& b = start(config, options);
      const uint64_t shadow = b.allocate_host(bytes);
      ASSERT_NE(shadow, 0u);
      const uint64_t mapped = (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
      std::vector<unsigned char> resident(mapped / page);
      ASSERT_EQ(mincore(reinterpret_cast<void*>(shadow), mapped, resident.data()), 0);
      size_t absent = 0;
      for (unsigned char r : resident) absent += (r & 1) == 0;
      EXPECT_EQ(absent, 0u) << "pages not touched before registering";
      const auto registered = calls_named("cuMemHostRegister");
      ASSERT_EQ(registered.size(), 1u);
      EXPECT_EQ(registered[0].address, shadow);
      EXPECT_EQ(registered[0].bytes, mapped);
      std::memset(reinterpret_cast<void*>(shadow), 0x5A, bytes);
      EXPECT_EQ(b.stats().pinned_registered_bytes, mapped);
    }
  }
}

TEST_F(FakeDriverTest, ARefusedRegistrationFallsBackToHostAllocAndIsNotTriedAgain) {
  FakeDriverConfig config;
  config.host_register = 1;
  CudaBackend& b = start(config);
  driver_.fail("cuMemHostRegister", 0, CUDA_ERROR_NOT_SUPPORTED, -1);
  EXPECT_NE(b.allocate_host(kMiB), 0u);
  EXPECT_NE(b.allocate_host(kMiB), 0u);
  EXPECT_EQ(driver_.count("cuMemHostRegister"), 1u);
  EXPECT_EQ(driver_.count("cuMemHostAlloc"), 2u);
  EXPECT_EQ(b.stats().pinned_registered_bytes, 0u);
  EXPECT_EQ(b.stats().pinned_bytes, 2 * kMiB);
}

// The copy kernel reaches shadows at their host address: registered memory the device cannot
// reach so is given back, and cuMemHostAlloc's is used (from then on).
TEST_F(FakeDriverTest, RegisteredMemoryTheCopyKernelCannotReachByItsAddressIsNotUsed) {
  FakeDriverConfig config;
  config.host_register = 1;
  config.copy_kernels = 1;
  CudaBackendOptions options;
  options.copy_via = CudaBackendOptions::CopyVia::kKernel;  // saves by a kernel writing the shadow
  CudaBackend& b = start(config, options);
  ASSERT_STREQ(b.copy_path(), "kernel");
  const uint64_t host_allocs = driver_.count("cuMemHostAlloc");  // the kernel's chunk lists took some
  driver_.fail("cuMemHostGetDevicePointer", 0, CUDA_ERROR_NOT_SUPPORTED, -1);
  EXPECT_NE(b.allocate_host(kMiB), 0u);
  EXPECT_EQ(driver_.count("cuMemHostRegister"), 1u);
  EXPECT_EQ(driver_.count("cuMemHostUnregister"), 1u);
  EXPECT_EQ(driver_.count("cuMemHostAlloc"), host_allocs + 1);
  EXPECT_EQ(b.stats().pinned_registered_bytes, 0u);
}

TEST_F(FakeDriverTest, MemoryPinnedAheadIsHandedOverOnce) {
  FakeDriverConfig config;
  config.host_register = 1;
  CudaBackend& b = start(config);
  uint64_t bytes = 1;
  EXPECT_EQ(b.collect_host_ahead(&bytes), 0u) << "nothing was asked for";
  EXPECT_EQ(bytes, 0u);
  ASSERT_TRUE(b.allocate_host_ahead(4 * kMiB));
  EXPECT_FALSE(b.allocate_host_ahead(4 * kMiB)) << "one at a time";
  const uint64_t ahead = b.collect_host_ahead(&bytes);
  ASSERT_NE(ahead, 0u);
  EXPECT_EQ(bytes, 4 * kMiB);
  std::memset(reinterpret_cast<void*>(ahead), 0x5A, 4 * kMiB);
  EXPECT_EQ(b.collect_host_ahead(&bytes), 0u) << "handed over already";
  EXPECT_EQ(b.stats().pinned_ahead_bytes, 4 * kMiB);
  ASSERT_TRUE(b.allocate_host_ahead(2 * kMiB)) << "the next one may be asked for";
}

TEST_F(FakeDriverTest, NothingIsPinnedAheadWhenSwitchedOff) {
  FakeDriverConfig config;
  config.host_register = 1;
  CudaBackendOptions options;
  options.pin = CudaBackendOptions::Pin::kRegister;
  CudaBackend& b = start(config, options);
  EXPECT_FALSE(b.allocate_host_ahead(4 * kMiB));
  EXPECT_NE(b.allocate_host(kMiB), 0u) << "pinning when needed still works";
  EXPECT_EQ(driver_.count("cuMemHostRegister"), 1u);
}

TEST_F(FakeDriverTest, PinHostAllocPinsTheFormerWay) {
  FakeDriverConfig config;
  config.host_register = 1;
  CudaBackendOptions options;
  options.pin = CudaBackendOptions::Pin::kHostAlloc;
  CudaBackend& b = start(config, options);
  EXPECT_FALSE(b.allocate_host_ahead(4 * kMiB));
  EXPECT_NE(b.allocate_host(kMiB), 0u);
  EXPECT_EQ(driver_.count("cuMemHostRegister"), 0u);
  EXPECT_EQ(driver_.count("cuMemHostAlloc"), 1u);
}

// An ahead pin nobody collected is released with the backend (registered: unregistered).
TEST_F(FakeDriverTest, MemoryPinnedAheadAndNeverCollectedIsReleasedWithTheBackend) {
  FakeDriverConfig config;
  config.host_register = 1;
  CudaBackend& b = start(config);
  ASSERT_TRUE(b.allocate_host_ahead(2 * kMiB));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (b.stats().pinned_ahead_bytes == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(b.stats().pinned_ahead_bytes, 2 * kMiB);
  backend_.reset();
  EXPECT_EQ(driver_.count("cuMemHostRegister"), 1u);
  EXPECT_EQ(driver_.count("cuMemHostUnregister"), 1u);
}

TEST_F(FakeDriverTest, AutoQueuesAnEmptyKernelBeforePopulatesOnAnIdleStream) {
  FakeDriverConfig config;
  config.model_memory = 1;
  config.copy_kernels = 1;
  CudaBackendOptions options;
  options.populate = CudaBackendOptions::Populate::kAuto;
  options.populate_chunk_bytes = kPiece;
  CudaBackend& b = start(config, options);
  const RestoreRun idle = restore_back(b, 2);
  EXPECT_TRUE(idle.bytes_back);
  const std::vector<FakeCall> holds = holds_in(idle.calls);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].bytes, 0u) << "an empty kernel";
  const size_t hold_at = static_cast<size_t>(
      std::find_if(idle.calls.begin(), idle.calls.end(), [](const FakeCall& c) { return c.value == kHoldKernel; }) -
      idle.calls.begin() + 1);
  const size_t prefetch_at = position(idle.calls, "cuMemPrefetchAsync", idle.address);
  ASSERT_NE(prefetch_at, 0u);
  EXPECT_LT(hold_at, prefetch_at);
  EXPECT_EQ(idle.calls[prefetch_at - 1].stream, holds[0].stream) << "the kernel holds the populate's stream";
  EXPECT_EQ(position(idle.calls, "cuMemDiscardAndPrefetchBatchAsync", idle.address), 0u);
  EXPECT_EQ(b.stats().stream_holds, 1u);
  EXPECT_EQ(b.stats().populate_idle_calls, 1u);
  driver_.hold(holds[0].stream, true);  // busy: no kernel needed
  const RestoreRun busy = restore_back(b, 2);
  driver_.hold(holds[0].stream, false);
  EXPECT_TRUE(busy.bytes_back);
  EXPECT_TRUE(holds_in(busy.calls).empty());
  EXPECT_NE(position(busy.calls, "cuMemPrefetchAsync", busy.address), 0u);
}

// A hold kernel that fails to launch: one message, that populate (and every later one on an
// idle stream) is a discard-and-prefetch, and the bytes come back.
TEST_F(FakeDriverTest, AFailedHoldKernelFallsBackToDiscardAndPrefetch) {
  LogCapture capture;
  FakeDriverConfig config;
  config.model_memory = 1;
  config.copy_kernels = 1;
  CudaBackendOptions options;
  options.populate = CudaBackendOptions::Populate::kAuto;
  CudaBackend& b = start(config, options);
  driver_.fail("cuLaunchKernel", 0, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 1);
  const RestoreRun first = restore_back(b, 2);
  EXPECT_TRUE(first.bytes_back);
  EXPECT_NE(position(first.calls, "cuMemDiscardAndPrefetchBatchAsync", first.address), 0u);
  const RestoreRun second = restore_back(b, 2);
  EXPECT_TRUE(second.bytes_back);
  EXPECT_TRUE(holds_in(second.calls).empty()) << "not tried again";
  EXPECT_NE(position(second.calls, "cuMemDiscardAndPrefetchBatchAsync", second.address), 0u);
  EXPECT_EQ(b.stats().failed_calls, 1u);
  const std::string log = all_log();
  EXPECT_NE(log.find("pump_hold"), std::string::npos) << log;
  EXPECT_EQ(log.find("pump_hold"), log.rfind("pump_hold")) << "one message: " << log;
}

// PUMP_DISCARD_HOLD_US: a discard on an idle stream comes after a kernel holding that stream
// for the time asked; on a busy stream (and by default) none is queued.
TEST_F(FakeDriverTest, ADiscardOnAnIdleStreamIsHeldWhenAsked) {
  FakeDriverConfig config;
  config.copy_kernels = 1;
  CudaBackendOptions options;
  options.discard_hold_ns = 50000;
  CudaBackend& b = start(config, options);
  TransferBatch batch;
  batch.discard = {{kBase, 2 * kMiB}};
  ASSERT_TRUE(wait_done(b.submit(std::move(batch)).out));
  const std::vector<FakeCall> all = calls();
  const std::vector<FakeCall> holds = holds_in(all);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].bytes, 50000u);
  const size_t discard_at = position(all, "cuMemDiscardBatchAsync", kBase);
  ASSERT_NE(discard_at, 0u);
  EXPECT_EQ(all[discard_at - 1].stream, holds[0].stream);
  EXPECT_LT(
      static_cast<size_t>(
          std::find_if(all.begin(), all.end(), [](const FakeCall& c) { return c.value == kHoldKernel; }) - all.begin()),
      discard_at - 1);
  driver_.hold(holds[0].stream, true);
  TransferBatch busy;
  busy.discard = {{kBase + 8 * kMiB, 2 * kMiB}};
  const Fence out = b.submit(std::move(busy)).out;
  ASSERT_TRUE(b.wait_issued(std::chrono::seconds(10)));
  driver_.hold(holds[0].stream, false);
  ASSERT_TRUE(wait_done(out));
  EXPECT_EQ(holds_in(calls()).size(), 1u) << "a busy stream defers the discard without a kernel";
  EXPECT_EQ(calls_named("cuMemDiscardBatchAsync").size(), 2u);
  CudaBackend& plain = start(config);
  TransferBatch d;
  d.discard = {{kBase, 2 * kMiB}};
  ASSERT_TRUE(wait_done(plain.submit(std::move(d)).out));
  EXPECT_TRUE(holds_in(calls()).empty());
}

// Without the copy kernels (no hold kernel to queue), PUMP_POPULATE=auto makes a populate on
// an idle stream a discard-and-prefetch; one queued behind work is a prefetch.
TEST_F(FakeDriverTest, AutoPopulatesByDiscardAndPrefetchOnlyWhereTheStreamIsIdle) {
  FakeDriverConfig config;
  config.model_memory = 1;
  CudaBackendOptions options;
  options.populate = CudaBackendOptions::Populate::kAuto;
  options.populate_chunk_bytes = kPiece;  // two pieces a restore: prefetched each, as by default
  CudaBackend& b = start(config, options);
  const RestoreRun idle = restore_back(b, 2);
  EXPECT_TRUE(idle.bytes_back);
  EXPECT_NE(position(idle.calls, "cuMemDiscardAndPrefetchBatchAsync", idle.address), 0u);
  EXPECT_EQ(position(idle.calls, "cuMemPrefetchAsync", idle.address), 0u);
  EXPECT_EQ(b.stats().populate_idle_calls, 1u);
  EXPECT_EQ(b.stats().populate_idle_bytes, 2 * kPiece);
  // The populate stream still busy with earlier work: the prefetch is deferred, and populates.
  const std::vector<FakeCall> queries = calls_named("cuStreamQuery");
  ASSERT_FALSE(queries.empty());
  driver_.hold(queries.back().stream, true);
  const RestoreRun busy = restore_back(b, 2);
  driver_.hold(queries.back().stream, false);
  EXPECT_TRUE(busy.bytes_back);
  EXPECT_NE(position(busy.calls, "cuMemPrefetchAsync", busy.address), 0u);
  EXPECT_EQ(position(busy.calls, "cuMemDiscardAndPrefetchBatchAsync", busy.address), 0u);
  EXPECT_EQ(b.stats().populate_idle_calls, 1u);
}

// Under PUMP_STATS the default (prefetch) counts the populates issued on an idle stream, so a
// run shows whether it left pages to fault in; without it no stream is asked about.
TEST_F(FakeDriverTest, PopulatesOnAnIdleStreamAreCountedOnlyWhenObserved) {
  FakeDriverConfig config;
  config.model_memory = 1;
  CudaBackendOptions options;
  options.observe_populates = true;
  CudaBackend& b = start(config, options);
  const RestoreRun r = restore_back(b, 2);
  EXPECT_NE(position(r.calls, "cuMemPrefetchAsync", r.address), 0u) << "the default still prefetches";
  EXPECT_EQ(b.stats().populate_idle_calls, 1u);
  CudaBackend& quiet = start(config);
  restore_back(quiet, 2);
  EXPECT_EQ(quiet.stats().populate_idle_calls, 0u);
  EXPECT_TRUE(calls_named("cuStreamQuery").empty());
}

// ------------------------------------------------------------------ several devices

// The fake's cuCtxSetCurrent, for the calling thread (the backend's own are set by it).
void set_current_context(void* driver, uint64_t context) {
  auto get = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*)>(
      dlsym(driver, "cuGetProcAddress_v2"));
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(get("cuCtxSetCurrent", &fn, 13000, 0, &status), CUDA_SUCCESS);
  reinterpret_cast<CUresult (*)(CUcontext)>(fn)(reinterpret_cast<CUcontext>(context));
}

constexpr uint64_t kOwnContext = 0xc0, kOtherDeviceContext = 0xc1;

TEST_F(FakeDriverTest, TheBridgeIsAStreamOfTheBackendsOwn) {
  CudaBackend& b = start();
  ASSERT_NE(b.bridge_stream(), 0u);
  TransferBatch batch;
  batch.prefetch = {{kBase, kMiB}};
  batch.evict = {{kBase + 64 * kMiB, kMiB}};
  const BatchFences f = b.submit(std::move(batch));
  EXPECT_NE(b.bridge_stream(), f.in.stream);
  EXPECT_NE(b.bridge_stream(), f.out.stream);
  EXPECT_FALSE(b.capturing(b.bridge_stream()));
  const Fence fence = b.mark(b.bridge_stream());
  EXPECT_FALSE(fence.empty()) << "the engine records its fences on it";
}

TEST_F(FakeDriverTest, BeforeAnotherDevicesCallItsStreamWaitsForTheBridge) {
  CudaBackend& b = start();
  const size_t first = calls().size();
  b.bridge_before_access(kAppStream);
  const std::vector<FakeCall> all = calls();
  ASSERT_EQ(all.size(), first + 2);
  EXPECT_STREQ(all[first].name, "cuEventRecord");
  EXPECT_EQ(all[first].stream, b.bridge_stream());
  EXPECT_STREQ(all[first + 1].name, "cuStreamWaitEvent");
  EXPECT_EQ(all[first + 1].stream, kAppStream);
}

TEST_F(FakeDriverTest, AfterItTheBridgeWaitsForAnEventRecordedInTheCallStreamsContext) {
  CudaBackend& b = start();
  auto set_context = reinterpret_cast<FakeStreamContextFn>(dlsym(driver_.handle(), "fake_cuda_set_stream_context"));
  ASSERT_NE(set_context, nullptr);
  set_context(kAppStream, kOtherDeviceContext);  // a stream of device 1; this backend is device 0's
  const size_t first = calls().size();
  b.bridge_after_access(kAppStream);
  b.bridge_after_access(kAppStream);
  std::vector<std::string> seen;
  for (size_t i = first; i < calls().size(); ++i) {
    const FakeCall c = calls()[i];
    std::string line = c.name;
    if (line == "cuEventRecord" || line == "cuStreamWaitEvent")
      line += c.stream == kAppStream ? " call" : c.stream == b.bridge_stream() ? " bridge" : " ?";
    if (line == "cuEventCreate" || line == "cuCtxPushCurrent")
      line += c.value == kOtherDeviceContext ? " in 0xc1" : " in another";
    seen.push_back(line);
  }
  // The event is made in the stream's context, once; recorded on the call's stream (an
  // explicit stream carries its context), waited for by the bridge.
  EXPECT_EQ(seen, (std::vector<std::string>{"cuCtxPushCurrent in 0xc1", "cuEventCreate in 0xc1", "cuCtxPopCurrent",
                                            "cuEventRecord call", "cuStreamWaitEvent bridge", "cuEventRecord call",
                                            "cuStreamWaitEvent bridge"}));
}

TEST_F(FakeDriverTest, ADefaultStreamAfterTheCallIsTheCurrentContexts) {
  CudaBackend& b = start();
  set_current_context(driver_.handle(), kOtherDeviceContext);
  const size_t first = calls().size();
  b.bridge_after_access(0);
  const std::vector<FakeCall> all = calls();
  ASSERT_EQ(all.size(), first + 3);
  EXPECT_STREQ(all[first].name, "cuEventCreate");
  EXPECT_EQ(all[first].value, kOtherDeviceContext) << "no push: it is current";
  EXPECT_STREQ(all[first + 1].name, "cuEventRecord");
  EXPECT_EQ(all[first + 1].stream, 0u);
  EXPECT_STREQ(all[first + 2].name, "cuStreamWaitEvent");
  EXPECT_EQ(all[first + 2].stream, b.bridge_stream());
  set_current_context(driver_.handle(), 0);
}

TEST_F(FakeDriverTest, AnotherDevicesDefaultStreamIsAskedAboutCaptureInItsOwnContext) {
  CudaBackend& b = start();
  set_current_context(driver_.handle(), kOtherDeviceContext);
  driver_.set_capturing(0, true);
  const size_t pushes = calls_named("cuCtxPushCurrent").size();
  EXPECT_TRUE(b.access_stream_capturing(0));
  EXPECT_EQ(calls_named("cuCtxPushCurrent").size(), pushes) << "not this device's legacy stream: nothing pushed";
  driver_.set_capturing(0, false);
  EXPECT_FALSE(b.access_stream_capturing(0));
  set_current_context(driver_.handle(), 0);
}

TEST_F(FakeDriverTest, AnOrderingTheDriverRefusesBecomesAHostSynchronization) {
  LogCapture capture;
  FakeDriverConfig config;
  config.fail_event_records = 1;
  CudaBackend& b = start(config);
  b.bridge_after_access(kAppStream);
  auto syncs = calls_named("cuStreamSynchronize");
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0].stream, kAppStream) << "the call is finished before anything of the bridge follows it";
  EXPECT_EQ(b.stats().failed_calls, 1u);
}

TEST_F(FakeDriverTest, AMarkOfTheDefaultStreamIsThisDevicesWhateverContextIsCurrent) {
  FakeDriverConfig config;
  config.devices = 2;
  CudaBackend& b = start(config);
  CudaBackendOptions options;
  options.driver_library = PUMP_FAKE_CUDA_DRIVER;
  auto other = CudaBackend::create(1, options);  // device 1's backend: two contexts in the process
  ASSERT_NE(other, nullptr);
  set_current_context(driver_.handle(), kOtherDeviceContext);  // a later eviction on a thread of device 1
  const size_t first = calls().size();
  const Fence f = b.mark(0);
  EXPECT_FALSE(f.empty());
  std::vector<FakeCall> records;
  for (size_t i = first; i < calls().size(); ++i)
    if (std::strcmp(calls()[i].name, "cuEventRecord") == 0) records.push_back(calls()[i]);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].stream, 0u);
  EXPECT_EQ(records[0].value, kOwnContext) << "recorded on device 0's legacy stream";
  EXPECT_FALSE(calls_named("cuCtxPopCurrent").empty()) << "the thread's context is given back";

  set_current_context(driver_.handle(), kOwnContext);
  const size_t pushes = calls_named("cuCtxPushCurrent").size();
  EXPECT_FALSE(b.mark(0).empty());
  EXPECT_EQ(calls_named("cuCtxPushCurrent").size(), pushes) << "nothing to switch when it is current";
  set_current_context(driver_.handle(), 0);
}

TEST_F(FakeDriverTest, WithOneDeviceADefaultStreamCostsNoContextCheck) {
  CudaBackend& b = start();
  set_current_context(driver_.handle(), kOtherDeviceContext);
  EXPECT_FALSE(b.mark(0).empty());
  EXPECT_TRUE(calls_named("cuCtxPushCurrent").empty()) << "no other device's backend: no other context to fear";
  set_current_context(driver_.handle(), 0);
}

TEST_F(FakeDriverTest, AMarkThatCannotBeRecordedSynchronizesItsStream) {
  LogCapture capture;
  FakeDriverConfig config;
  config.fail_event_records = 1;
  CudaBackend& b = start(config);
  EXPECT_TRUE(b.mark(kAppStream).empty());
  auto syncs = calls_named("cuStreamSynchronize");
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0].stream, kAppStream) << "an empty fence must mean the stream's work is done";
}

TEST_F(FakeDriverTest, KnowsTheDevicesFreeMemoryAtStart) {
  FakeDriverConfig config;
  config.free_memory = 5ull << 30;
  CudaBackend& b = start(config);
  EXPECT_EQ(b.free_memory_at_start(), 5ull << 30);
}

}  // namespace
}  // namespace pump
