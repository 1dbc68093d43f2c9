// fork() while another thread holds an engine's lock (a launch being decided: the policy
// runs under it) must leave the child an engine it can lock: its PUMP_STATS report at exit
// takes every engine's lock. Without the fork guard the child hangs on it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

#include "core/engine/policy.h"
#include "core/interpose/fork_guard.h"
#include "core/interpose/hook_dispatch.h"
#include "tests/core/engine/recording_backend.h"

namespace pump::interpose {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kA = 0x7f0000000000ull;

// A policy that takes its time deciding, under the engine's lock.
class SlowPolicy final : public Policy {
 public:
  explicit SlowPolicy(std::atomic<bool>* deciding) : deciding_(deciding) {}
  const char* name() const override { return "slow"; }
  bool attach(Engine&) override { return true; }
  void on_kernel(const pump_kernel_v1_t&) override {
    deciding_->store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  void on_pressure(const pump_kernel_v1_t&, uint64_t) override {}
  void on_alloc(const pump_block_v1_t&) override {}
  void on_free(const pump_block_v1_t&) override {}

 private:
  std::atomic<bool>* deciding_;
};

TEST(ForkGuard, AChildForkedWhileALaunchIsDecidedCanTakeTheEnginesLock) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "fork() from a multithreaded process under TSan";
#endif
  std::atomic<bool> deciding{false};
  testing::RecordingBackend backend;
  backend.all_done = true;
  EngineOptions options;
  options.budget_bytes = 8 * kMiB;
  Config config;
  Engine engine(backend, std::make_unique<SlowPolicy>(&deciding), options, &config);
  engine.on_alloc(kA, kMiB);
  TestDevices devices;
  devices.engines = {&engine};
  set_devices_for_testing(&devices);
  install_fork_guard();

  std::thread launch([&] {
    pump_extent_v1_t e{kA, kMiB, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN};
    KernelTicket ticket;
    engine.before_kernel(&ticket, 1, &e, 1);
    engine.after_kernel(&ticket);
  });
  while (!deciding.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const pid_t child = fork();  // the launch's thread holds the engine's lock now
  if (child == 0) {
    alarm(10);                                   // a hung child dies of SIGALRM
    (void)engine.stats();                        // what the child's report takes at exit
    _exit(engine.stats().kernels == 1 ? 0 : 3);  // the launch was whole when the child was made
  }
  ASSERT_GT(child, 0);
  launch.join();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  set_devices_for_testing(nullptr);
  ASSERT_TRUE(WIFEXITED(status)) << "the child hung on the engine's lock (signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace pump::interpose
