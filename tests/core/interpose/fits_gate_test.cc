#include "core/interpose/fits_gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace pump::interpose {
namespace {

TEST(FitsGate, AnOpenGateLetsCallsPassAndRemembersEachStreamOnce) {
  FitsGate gate(true);
  ASSERT_TRUE(gate.enter(0));  // the legacy default stream is a stream like any other
  gate.leave();
  ASSERT_TRUE(gate.enter(7));
  gate.leave();
  ASSERT_TRUE(gate.enter(7));
  gate.leave();
  EXPECT_EQ(gate.passed(), 3u);
  std::vector<StreamId> streams;
  ASSERT_TRUE(gate.close(&streams));
  std::sort(streams.begin(), streams.end());
  EXPECT_EQ(streams, (std::vector<StreamId>{0, 7}));
}

TEST(FitsGate, AClosedGateStaysClosedAndLetsNothingPass) {
  FitsGate gate(true);
  std::vector<StreamId> streams;
  ASSERT_TRUE(gate.close(&streams));
  EXPECT_FALSE(gate.open());
  EXPECT_FALSE(gate.enter(3));
  EXPECT_FALSE(gate.close(&streams)) << "a second close hands the streams out again";
  FitsGate never_open(false);
  EXPECT_FALSE(never_open.enter(3));
  EXPECT_EQ(never_open.passed(), 0u);
}

TEST(FitsGate, CloseWaitsForTheCallsInsideAndSeesTheirStreams) {
  FitsGate gate(true);
  ASSERT_TRUE(gate.enter(42));  // a call between its check and its real call's return
  std::atomic<bool> closed{false};
  std::vector<StreamId> streams;
  std::thread closer([&] {
    gate.close(&streams);
    closed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(closed.load()) << "closed while a call that passed was still inside";
  EXPECT_FALSE(gate.enter(43)) << "a call let in once closing began";
  gate.leave();
  closer.join();
  EXPECT_TRUE(closed.load());
  EXPECT_EQ(streams, (std::vector<StreamId>{42}));
}

TEST(FitsGate, AStreamTheTableCannotHoldDoesNotPass) {
  FitsGate gate(true);
  for (StreamId s = 1; s <= FitsGate::kMaxStreams; ++s) {
    ASSERT_TRUE(gate.enter(s));
    gate.leave();
  }
  EXPECT_FALSE(gate.enter(FitsGate::kMaxStreams + 1));
  EXPECT_TRUE(gate.enter(1)) << "a stream already remembered still passes";
  gate.leave();
}

// Threads on their own streams enter and leave while another closes: every stream of a
// call that passed is among those close() returns.
TEST(FitsGate, EveryStreamOfACallThatPassedIsHandedOverUnderContention) {
  for (int round = 0; round < 20; ++round) {
    FitsGate gate(true);
    std::atomic<bool> stop{false};
    std::vector<std::vector<StreamId>> passed(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (StreamId s = 100 * (t + 1); !stop.load(); ++s) {
          if (s >= StreamId(100 * (t + 1) + 50)) s = 100 * (t + 1);
          if (!gate.enter(s)) return;
          passed[t].push_back(s);
          gate.leave();
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round + 1)));
    std::vector<StreamId> streams;
    ASSERT_TRUE(gate.close(&streams));
    stop = true;
    for (std::thread& th : threads) th.join();
    for (const auto& list : passed)
      for (StreamId s : list) EXPECT_NE(std::find(streams.begin(), streams.end(), s), streams.end()) << s;
  }
}

}  // namespace
}  // namespace pump::interpose
