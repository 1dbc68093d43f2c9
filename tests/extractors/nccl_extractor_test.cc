// The nccl extractor, driven through its exported struct with argument packs laid out
// as the interposer builds them (args[i] points at argument i, typed as in nccl.h). The
// communicator queries it makes (ncclCommCount, ncclCommUserRank) are scripted fakes.
// Expected sizes are computed by hand: count x the data type's size, x the rank count
// where the call spans the communicator.
#include <cstddef>

#include "tests/extractors/extractor_test_host.h"
#if __has_include(<nccl.h>)
#include <nccl.h>  // only to check the test's copy of NCCL's values
#define PUMP_TEST_HAVE_NCCL_H 1
#endif

namespace pump::testing {
namespace {

// nccl.h's values (the stable ABI): the extractor is built without NCCL, so are its tests.
enum NcclType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11
};
constexpr int kSum = 0;
#ifdef PUMP_TEST_HAVE_NCCL_H
constexpr bool same(int a, int b) { return a == b; }
static_assert(same(kInt8, ncclInt8) && same(kUint8, ncclUint8) && same(kInt32, ncclInt32) &&
                  same(kUint32, ncclUint32) && same(kInt64, ncclInt64) && same(kUint64, ncclUint64) &&
                  same(kFloat16, ncclFloat16) && same(kFloat32, ncclFloat32) && same(kFloat64, ncclFloat64) &&
                  same(kBfloat16, ncclBfloat16) && same(kFloat8e4m3, ncclFloat8e4m3) &&
                  same(kFloat8e5m2, ncclFloat8e5m2) && same(kSum, ncclSum),
              "the test's NCCL values differ from nccl.h");
#endif

constexpr uint64_t kSend = 0x7f0000000000, kRecv = 0x7f0010000000, kOther = 0x7f0020000000;  // 64 MiB blocks apart
void* const kComm = reinterpret_cast<void*>(uintptr_t{0xc0111});
void* const kStream = reinterpret_cast<void*>(uintptr_t{0x5});

// The communicator the fakes describe.
int g_ranks = 4;
int g_rank = 1;
int g_queries = 0;
int fake_comm_count(const void* comm, int* out) {
  ++g_queries;
  if (comm != kComm) return 4;  // ncclInvalidArgument
  *out = g_ranks;
  return 0;
}
int fake_comm_user_rank(const void* comm, int* out) {
  ++g_queries;
  if (comm != kComm) return 4;
  *out = g_rank;
  return 0;
}

class NcclExtractorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_ranks = 4;
    g_rank = 1;
    g_queries = 0;
    host.script_symbol("ncclCommCount", reinterpret_cast<void*>(&fake_comm_count));
    host.script_symbol("ncclCommUserRank", reinterpret_cast<void*>(&fake_comm_user_rank));
    host.add_block(kSend, 64 << 20);
    host.add_block(kRecv, 64 << 20);
  }

  // ncclAllReduce(send, recv, count, type, op, comm, stream) and the others, typed as in nccl.h.
  pump_status_v1_t all_reduce(LoadedExtractor& p, uint64_t send, uint64_t recv, size_t count, int type) {
    return p.extract("ncclAllReduce", &extents, static_cast<const void*>(device_address(send)), device_address(recv),
                     count, type, kSum, kComm, kStream);
  }

  FakeExtractorHost host;
  std::vector<pump_extent_v1_t> extents;
};

void expect_extent(const std::vector<pump_extent_v1_t>& extents, uint64_t address, uint64_t bytes, uint32_t access) {
  const pump_extent_v1_t* e = extent_at(extents, address);
  ASSERT_NE(e, nullptr) << std::hex << "no extent at 0x" << address;
  EXPECT_EQ(e->bytes, bytes) << std::hex << "at 0x" << address;
  EXPECT_EQ(e->access, access) << std::hex << "at 0x" << address;
  EXPECT_EQ(e->role, static_cast<uint32_t>(PUMP_ROLE_UNKNOWN));
}

TEST_F(NcclExtractorTest, AllReduceReadsItsSendBufferAndWritesItsReceiveBuffer) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(all_reduce(plugin, kSend, kRecv, 1000, kFloat32), PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 4000, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 4000, PUMP_ACCESS_WRITE);
  EXPECT_EQ(g_queries, 0) << "an all-reduce's sizes do not depend on the communicator";
}

TEST_F(NcclExtractorTest, AnInPlaceAllReduceIsOneReadWriteExtent) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(all_reduce(plugin, kRecv, kRecv, 1 << 20, kBfloat16), PUMP_OK);
  ASSERT_EQ(extents.size(), 1u);
  expect_extent(extents, kRecv, 2 << 20, PUMP_ACCESS_READ_WRITE);
}

TEST_F(NcclExtractorTest, EveryDataTypeHasItsSize) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  const std::pair<int, uint64_t> sizes[] = {{kInt8, 1},    {kUint8, 1},    {kInt32, 4},      {kUint32, 4},
                                            {kInt64, 8},   {kUint64, 8},   {kFloat16, 2},    {kFloat32, 4},
                                            {kFloat64, 8}, {kBfloat16, 2}, {kFloat8e4m3, 1}, {kFloat8e5m2, 1}};
  for (const auto& [type, bytes] : sizes) {
    extents.clear();
    ASSERT_EQ(all_reduce(plugin, kSend, kSend, 3, type), PUMP_OK) << "type " << type;
    ASSERT_EQ(extents.size(), 1u) << "type " << type;
    EXPECT_EQ(extents[0].bytes, 3 * bytes) << "type " << type;
  }
  EXPECT_TRUE(host.logs().empty()) << host.logs().front().text;
}

TEST_F(NcclExtractorTest, AnUnknownDataTypeWarnsOnceAndReportsTheWholeBlocksReadAndWritten) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  for (int i = 0; i < 3; ++i) {
    extents.clear();
    ASSERT_EQ(all_reduce(plugin, kSend + 4096, kRecv, 100, 42), PUMP_OK) << "the call is not refused";
    ASSERT_EQ(extents.size(), 2u);
    expect_extent(extents, kSend, 64 << 20, PUMP_ACCESS_READ_WRITE);
    expect_extent(extents, kRecv, 64 << 20, PUMP_ACCESS_READ_WRITE);
  }
  ASSERT_EQ(host.logs().size(), 1u) << "one warning, not one per call";
  EXPECT_EQ(host.logs()[0].level, PUMP_LOG_WARN);
  EXPECT_NE(host.logs()[0].text.find("ncclAllReduce with NCCL data type 42"), std::string::npos) << host.logs()[0].text;
}

TEST_F(NcclExtractorTest, ReduceScatterReadsRanksTimesTheCountAndWritesOneShare) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(plugin.extract("ncclReduceScatter", &extents, static_cast<const void*>(device_address(kSend)),
                           device_address(kRecv), size_t{256}, int{kFloat16}, kSum, kComm, kStream),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 4 * 256 * 2, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 256 * 2, PUMP_ACCESS_WRITE);
}

TEST_F(NcclExtractorTest, InPlaceReduceScatterReportsTheShareInsideTheInput) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  // In place: recvbuff == sendbuff + rank * recvcount elements.
  const uint64_t share = kSend + g_rank * 256 * 4;
  ASSERT_EQ(plugin.extract("ncclReduceScatter", &extents, static_cast<const void*>(device_address(kSend)),
                           device_address(share), size_t{256}, int{kFloat32}, kSum, kComm, kStream),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 4 * 256 * 4, PUMP_ACCESS_READ);
  expect_extent(extents, share, 256 * 4, PUMP_ACCESS_WRITE);  // the engine counts the overlap read and written
}

TEST_F(NcclExtractorTest, AllGatherWritesRanksTimesTheCount) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  g_ranks = 2;
  ASSERT_EQ(plugin.extract("ncclAllGather", &extents, static_cast<const void*>(device_address(kSend)),
                           device_address(kRecv), size_t{1000}, int{kFloat64}, kComm, kStream),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 8000, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 2 * 8000, PUMP_ACCESS_WRITE);
}

TEST_F(NcclExtractorTest, WithoutTheRankCountTheBuffersAreTheirWholeBlocks) {
  host.script_symbol("ncclCommCount", nullptr);  // libnccl not found
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  const int resolved = host.pointers_resolved();
  ASSERT_EQ(plugin.extract("ncclAllGather", &extents, static_cast<const void*>(device_address(kSend + 64)),
                           device_address(kRecv + 128), size_t{10}, int{kInt8}, kComm, kStream),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 64 << 20, PUMP_ACCESS_READ_WRITE);
  expect_extent(extents, kRecv, 64 << 20, PUMP_ACCESS_READ_WRITE);
  EXPECT_EQ(host.pointers_resolved(), resolved + 2) << "whole blocks are pointers the host resolves (inexact)";

  host.offer_pointer_resolution(false);  // an SDK 1.2 host is asked with find_block
  extents.clear();
  const int lookups = host.find_block_calls();
  ASSERT_EQ(plugin.extract("ncclAllGather", &extents, static_cast<const void*>(device_address(kSend + 64)),
                           device_address(kRecv + 128), size_t{10}, int{kInt8}, kComm, kStream),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 64 << 20, PUMP_ACCESS_READ_WRITE);
  EXPECT_EQ(host.find_block_calls(), lookups + 2);
}

TEST_F(NcclExtractorTest, AlltoAllReadsAndWritesRanksTimesTheCount) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(plugin.extract("ncclAlltoAll", &extents, static_cast<const void*>(device_address(kSend)),
                           device_address(kRecv), size_t{16}, int{kInt32}, kComm, kStream),
            PUMP_OK);
  expect_extent(extents, kSend, 4 * 16 * 4, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 4 * 16 * 4, PUMP_ACCESS_WRITE);
}

TEST_F(NcclExtractorTest, BroadcastReadsOnlyAtTheRoot) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  auto broadcast = [&](uint64_t send, uint64_t recv, int root) {
    extents.clear();
    return plugin.extract("ncclBroadcast", &extents, static_cast<const void*>(device_address(send)),
                          device_address(recv), size_t{100}, int{kFloat32}, root, kComm, kStream);
  };
  ASSERT_EQ(broadcast(kSend, kRecv, /*root=*/1), PUMP_OK);  // this rank (1) is the root
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 400, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 400, PUMP_ACCESS_WRITE);
  ASSERT_EQ(broadcast(kSend, kRecv, /*root=*/0), PUMP_OK);
  ASSERT_EQ(extents.size(), 1u) << "elsewhere the send buffer is not used";
  expect_extent(extents, kRecv, 400, PUMP_ACCESS_WRITE);
  ASSERT_EQ(broadcast(kRecv, kRecv, /*root=*/1), PUMP_OK);
  ASSERT_EQ(extents.size(), 1u);
  expect_extent(extents, kRecv, 400, PUMP_ACCESS_READ_WRITE);
}

TEST_F(NcclExtractorTest, BcastIsReadAtTheRootWrittenElsewhereAndBothWhenTheRankIsUnknown) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  auto bcast = [&](int root) {
    extents.clear();
    return plugin.extract("ncclBcast", &extents, device_address(kRecv), size_t{8}, int{kInt64}, root, kComm, kStream);
  };
  ASSERT_EQ(bcast(1), PUMP_OK);
  expect_extent(extents, kRecv, 64, PUMP_ACCESS_READ);
  ASSERT_EQ(bcast(3), PUMP_OK);
  expect_extent(extents, kRecv, 64, PUMP_ACCESS_WRITE);
  g_rank = -1;  // the query fails
  ASSERT_EQ(bcast(3), PUMP_OK);
  expect_extent(extents, kRecv, 64, PUMP_ACCESS_READ_WRITE);
}

TEST_F(NcclExtractorTest, ReduceWritesOnlyTheRootsReceiveBuffer) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  auto reduce = [&](uint64_t recv, int root) {
    extents.clear();
    return plugin.extract("ncclReduce", &extents, static_cast<const void*>(device_address(kSend)), device_address(recv),
                          size_t{50}, int{kFloat16}, kSum, root, kComm, kStream);
  };
  ASSERT_EQ(reduce(kRecv, 1), PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(extents, kSend, 100, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 100, PUMP_ACCESS_WRITE);
  ASSERT_EQ(reduce(kOther, 0), PUMP_OK);  // not the root: recvbuff may be anything
  ASSERT_EQ(extents.size(), 1u);
  expect_extent(extents, kSend, 100, PUMP_ACCESS_READ);
  g_rank = -1;
  ASSERT_EQ(reduce(kRecv, 0), PUMP_OK);  // unknown: it may be the root's, and may not be written
  expect_extent(extents, kRecv, 100, PUMP_ACCESS_READ_WRITE);
}

TEST_F(NcclExtractorTest, GatherAndScatterSizeTheRootsBufferByTheRankCount) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  auto call = [&](const char* api, int root) {
    extents.clear();
    return plugin.extract(api, &extents, static_cast<const void*>(device_address(kSend)), device_address(kRecv),
                          size_t{10}, int{kFloat32}, root, kComm, kStream);
  };
  ASSERT_EQ(call("ncclGather", 1), PUMP_OK);
  expect_extent(extents, kSend, 40, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 4 * 40, PUMP_ACCESS_WRITE);
  ASSERT_EQ(call("ncclGather", 2), PUMP_OK);
  ASSERT_EQ(extents.size(), 1u) << "only the root receives";
  expect_extent(extents, kSend, 40, PUMP_ACCESS_READ);
  ASSERT_EQ(call("ncclScatter", 1), PUMP_OK);
  expect_extent(extents, kSend, 4 * 40, PUMP_ACCESS_READ);
  expect_extent(extents, kRecv, 40, PUMP_ACCESS_WRITE);
  ASSERT_EQ(call("ncclScatter", 0), PUMP_OK);
  ASSERT_EQ(extents.size(), 1u) << "only the root sends";
  expect_extent(extents, kRecv, 40, PUMP_ACCESS_WRITE);
  g_rank = -1;
  ASSERT_EQ(call("ncclGather", 0), PUMP_OK);
  // Maybe not the root: its receive buffer is not claimed as overwritten.
  expect_extent(extents, kRecv, 4 * 40, PUMP_ACCESS_READ_WRITE);
}

TEST_F(NcclExtractorTest, SendReadsAndRecvWrites) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(plugin.extract("ncclSend", &extents, static_cast<const void*>(device_address(kSend)), size_t{7},
                           int{kUint8}, /*peer=*/2, kComm, kStream),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 1u);
  expect_extent(extents, kSend, 7, PUMP_ACCESS_READ);
  extents.clear();
  ASSERT_EQ(
      plugin.extract("ncclRecv", &extents, device_address(kRecv), size_t{7}, int{kUint8}, /*peer=*/2, kComm, kStream),
      PUMP_OK);
  ASSERT_EQ(extents.size(), 1u);
  expect_extent(extents, kRecv, 7, PUMP_ACCESS_WRITE);
}

TEST_F(NcclExtractorTest, NothingIsReportedForAnEmptyCallOrNullBuffers) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(all_reduce(plugin, kSend, kRecv, 0, kFloat32), PUMP_OK);
  EXPECT_TRUE(extents.empty());
  ASSERT_EQ(
      plugin.extract("ncclRecv", &extents, static_cast<void*>(nullptr), size_t{7}, int{kUint8}, 2, kComm, kStream),
      PUMP_OK);
  EXPECT_TRUE(extents.empty());
}

TEST_F(NcclExtractorTest, TooFewArgumentsAreRefused) {
  LoadedExtractor plugin("nccl", host);
  ASSERT_TRUE(plugin.ok());
  EXPECT_EQ(plugin.extract("ncclAllReduce", &extents, static_cast<const void*>(device_address(kSend)),
                           device_address(kRecv), size_t{4}),
            PUMP_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(extents.empty());
}

}  // namespace
}  // namespace pump::testing
