#include "core/cuda/stream_key.h"

#include <gtest/gtest.h>

#include <thread>

namespace pump::cuda {
namespace {

TEST(StreamKey, LegacyHandlesShareOneKey) { EXPECT_EQ(stream_key(0), stream_key(kLegacyStreamHandle)); }

TEST(StreamKey, PerThreadDefaultStreamGetsADifferentKeyOnEachThread) {
  StreamId here = stream_key(kPerThreadStreamHandle);
  StreamId there = 0;
  std::thread([&] { there = stream_key(kPerThreadStreamHandle); }).join();
  EXPECT_NE(here, there);
  EXPECT_EQ(here, stream_key(kPerThreadStreamHandle));
  EXPECT_TRUE(here & kPerThreadKeyBit);
}

TEST(StreamKey, OrdinaryHandlesAreTheirOwnKey) { EXPECT_EQ(stream_key(0x7f001234), 0x7f001234u); }

}  // namespace
}  // namespace pump::cuda
