#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "core/trace/trace_reader.h"
#include "core/trace/trace_writer.h"

namespace pump {
namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("pump_trace_test_") + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::optional<Trace> parse(const std::string& text, std::string* error) {
  std::istringstream in(text);
  return read_trace(in, "t.trace", error);
}

TEST(Trace, RoundTripKeepsEveryFieldExactly) {
  const std::string path = temp_path("round_trip");
  const pump_extent_v1_t extents[] = {
      {0x7f0000000000ull, 4096, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT},
      {0xffffffffffff0000ull, 1, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION},
      {0x7f0000200000ull, 1ull << 40, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE},
      {0x10, 0, PUMP_ACCESS_NONE, PUMP_ROLE_UNKNOWN},
  };
  {
    std::unique_ptr<TraceWriter> w = TraceWriter::open(path);
    ASSERT_TRUE(w);
    w->record_alloc(0x7f0000000000ull, 64ull << 20);
    w->record_kernel(0x55aa00001234ull, extents, 4, "cublasSgemm_v2 \"quoted\"", 0.000125);
    w->record_kernel(0, extents, 1);
    w->record_free(0x7f0000000000ull);
    EXPECT_EQ(w->records(), 5u);  // header included
  }
  std::string error;
  std::optional<Trace> t = read_trace_file(path, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->version, kTraceFormatVersion);
  ASSERT_EQ(t->records.size(), 4u);
  EXPECT_EQ(t->records[0].op, TraceRecord::Op::kAlloc);
  EXPECT_EQ(t->records[0].address, 0x7f0000000000ull);
  EXPECT_EQ(t->records[0].bytes, 64ull << 20);
  const TraceRecord& k = t->records[1];
  EXPECT_EQ(k.op, TraceRecord::Op::kKernel);
  EXPECT_EQ(k.stream, 0x55aa00001234ull);
  EXPECT_EQ(k.name, "cublasSgemm_v2 \"quoted\"");
  EXPECT_DOUBLE_EQ(k.seconds, 0.000125);
  ASSERT_EQ(k.extents.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(k.extents[i].address, extents[i].address);
    EXPECT_EQ(k.extents[i].bytes, extents[i].bytes);
    EXPECT_EQ(k.extents[i].access, extents[i].access);
    EXPECT_EQ(k.extents[i].role, extents[i].role);
  }
  EXPECT_LT(t->records[2].seconds, 0);  // unknown duration stays unknown
  EXPECT_TRUE(t->records[2].name.empty());
  EXPECT_EQ(t->records[3].op, TraceRecord::Op::kFree);
  std::filesystem::remove(path);
}

// Each kernel record carries its thread's time since that thread's previous one (the
// program's host work between launches), and a replay spends it before the launch.
TEST(Trace, KernelRecordsCarryTheLaunchingThreadsHostTime) {
  const std::string path = temp_path("host_time");
  const pump_extent_v1_t extent{0x7f0000000000ull, 4096, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT};
  {
    std::unique_ptr<TraceWriter> w = TraceWriter::open(path);
    ASSERT_TRUE(w);
    w->record_kernel(1, &extent, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w->record_kernel(1, &extent, 1);
    std::thread([&] { w->record_kernel(2, &extent, 1); }).join();  // another thread: its first
  }
  std::string error;
  std::optional<Trace> t = read_trace_file(path, &error);
  ASSERT_TRUE(t) << error;
  ASSERT_EQ(t->records.size(), 3u);
  EXPECT_LT(t->records[0].host_seconds, 0);  // a thread's first record: unknown
  EXPECT_GE(t->records[1].host_seconds, 0.02);
  EXPECT_LT(t->records[1].host_seconds, 5.0);
  EXPECT_LT(t->records[2].host_seconds, 0);
  std::filesystem::remove(path);
  // A hand-written line round-trips the field; a negative one is refused.
  std::optional<Trace> hand =
      parse("{\"pump_trace\":1}\n{\"op\":\"kernel\",\"stream\":1,\"host_seconds\":0.00006,\"extents\":[]}\n", &error);
  ASSERT_TRUE(hand) << error;
  EXPECT_DOUBLE_EQ(hand->records[0].host_seconds, 0.00006);
  EXPECT_FALSE(
      parse("{\"pump_trace\":1}\n{\"op\":\"kernel\",\"stream\":1,\"host_seconds\":-1,\"extents\":[]}\n", &error));
}

TEST(Trace, GuessedExtentsKeepTheirMark) {
  const std::string path = temp_path("inexact");
  const pump_extent_v1_t extents[] = {{0x7f0000000000ull, 4096, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN},
                                      {0x7f0000100000ull, 512, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT}};
  const uint8_t inexact[] = {1, 0};
  {
    std::unique_ptr<TraceWriter> w = TraceWriter::open(path);
    ASSERT_TRUE(w);
    w->record_kernel(3, extents, 2, nullptr, -1, inexact);
    w->record_kernel(3, extents, 2);
  }
  std::string error;
  std::optional<Trace> t = read_trace_file(path, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_TRUE(t->marks_inexact);
  ASSERT_EQ(t->records.size(), 2u);
  EXPECT_EQ(t->records[0].inexact, (std::vector<uint8_t>{1, 0}));
  EXPECT_TRUE(t->records[1].inexact.empty());  // none marked
  std::filesystem::remove(path);
  // A trace from an older writer does not say it marks them.
  std::optional<Trace> old = parse("{\"pump_trace\":1,\"writer\":\"pump\"}\n", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_FALSE(old->marks_inexact);
  EXPECT_FALSE(
      parse("{\"pump_trace\":1}\n{\"op\":\"kernel\",\"stream\":0,\"extents\":[{\"address\":1,"
            "\"bytes\":1,\"access\":\"r\",\"role\":\"unknown\",\"inexact\":1}]}\n",
            &error));
}

TEST(Trace, ConcurrentWritersProduceWholeLines) {
  const std::string path = temp_path("threads");
  constexpr int kThreads = 4, kPerThread = 5000;  // > kFlushBytes in total: several write-outs
  {
    std::unique_ptr<TraceWriter> w = TraceWriter::open(path);
    ASSERT_TRUE(w);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&w, t] {
        const pump_extent_v1_t e{0x1000ull * static_cast<uint64_t>(t + 1), 256, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT};
        for (int i = 0; i < kPerThread; ++i) w->record_kernel(static_cast<StreamId>(t), &e, 1, "k");
      });
    for (std::thread& th : threads) th.join();
  }
  std::string error;
  std::optional<Trace> t = read_trace_file(path, &error);
  ASSERT_TRUE(t) << error;
  ASSERT_EQ(t->records.size(), static_cast<size_t>(kThreads * kPerThread));
  for (const TraceRecord& r : t->records) EXPECT_EQ(r.extents.at(0).address, 0x1000ull * (r.stream + 1));
  std::filesystem::remove(path);
}

TEST(Trace, OpenOfAnUnwritablePathReturnsNull) {
  EXPECT_EQ(TraceWriter::open("/nonexistent-dir/x/trace.jsonl"), nullptr);
}

TEST(Trace, MalformedLineGivesOneErrorWithItsLineNumber) {
  const std::string header = "{\"pump_trace\":1}\n";
  const std::string alloc = "{\"op\":\"alloc\",\"address\":\"0x1000\",\"bytes\":4096}\n";
  struct Case {
    std::string bad_line;
    std::string expected;
  } cases[] = {
      {"{\"op\":\"alloc\",\"address\":\"0x1000\"", "not valid JSON"},
      {"{\"op\":\"alloc\",\"address\":\"0x1000\"}", "alloc record has no \"bytes\""},
      {"{\"op\":\"alloc\",\"address\":\"12zz\",\"bytes\":1}", "hex string"},
      {"{\"op\":\"alloc\",\"address\":1,\"bytes\":-1}", "non-negative integer"},
      {"{\"op\":\"launch\"}", "unknown op \"launch\""},
      {"[1,2]", "must be a JSON object"},
      {"{\"op\":\"kernel\",\"stream\":1,\"extents\":[{\"address\":1,\"bytes\":2,\"access\":\"x\",\"role\":\"weight\"}]"
       "}",
       "extent 0: kernel record: \"access\""},
      {"{\"op\":\"kernel\",\"stream\":1,\"extents\":{}}", "\"extents\" must be an array"},
      {"{\"op\":\"kernel\",\"stream\":1,\"seconds\":-1,\"extents\":[]}", "\"seconds\""},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_FALSE(parse(header + alloc + "\n" + c.bad_line + "\n" + alloc, &error)) << c.bad_line;
    EXPECT_EQ(error.rfind("t.trace:4: ", 0), 0u) << error;  // the blank line 3 still counts
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  }
}

TEST(Trace, HeaderIsRequiredAndNewerVersionsAreRefused) {
  std::string error;
  EXPECT_FALSE(parse("{\"op\":\"free\",\"address\":1}\n", &error));
  EXPECT_NE(error.find("t.trace:1: not a pump trace"), std::string::npos) << error;
  EXPECT_FALSE(parse("{\"pump_trace\":2}\n", &error));
  EXPECT_NE(error.find("newer than this reader"), std::string::npos) << error;
  EXPECT_FALSE(parse("", &error));
  EXPECT_NE(error.find("empty file"), std::string::npos) << error;
}

TEST(Trace, UnknownFieldsAreIgnored) {
  std::string error;
  std::optional<Trace> t =
      parse("{\"pump_trace\":1,\"host\":\"x\"}\n{\"op\":\"free\",\"address\":16,\"pid\":7}\n", &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->records.at(0).address, 16u);
}

// Names are written by nlohmann's escaper (plain ASCII is copied as is): every odd
// byte still reads back, and bytes that are not UTF-8 become U+FFFD rather than
// making the line invalid JSON.
TEST(Trace, OddKernelNamesRoundTripAndInvalidUtf8BecomesReplacement) {
  const std::string path = temp_path("odd_names");
  const pump_extent_v1_t e{0x1000, 16, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT};
  const std::vector<std::string> kept = {"plain_kernel<float, 128>", "quote\" back\\slash / slash",
                                         "tab\tnl\ncr\rbs\bff\f", std::string("nul\0x\x01\x1f\x7f", 8),
                                         "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"};
  {
    std::unique_ptr<TraceWriter> w = TraceWriter::open(path);
    ASSERT_TRUE(w);
    for (const std::string& name : kept) w->record_kernel(1, &e, 1, name.c_str());
    w->record_kernel(1, &e, 1, "cut\xe2\x86");  // a multi-byte character cut short
    w->record_kernel(1, &e, 1, "\xff\xfe");
  }
  std::string error;
  std::optional<Trace> t = read_trace_file(path, &error);
  ASSERT_TRUE(t) << error;
  ASSERT_EQ(t->records.size(), kept.size() + 2);
  // The NUL ends a C string: record_kernel takes const char*.
  EXPECT_EQ(t->records[0].name, kept[0]);
  EXPECT_EQ(t->records[1].name, kept[1]);
  EXPECT_EQ(t->records[2].name, kept[2]);
  EXPECT_EQ(t->records[3].name, "nul");
  EXPECT_EQ(t->records[4].name, kept[4]);
  EXPECT_EQ(t->records[5].name, "cut\xef\xbf\xbd");
  EXPECT_EQ(t->records[6].name, "\xef\xbf\xbd\xef\xbf\xbd");
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    for (char c : line) EXPECT_GE(static_cast<unsigned char>(c), 0x20u) << "raw control byte in: " << line;
  std::filesystem::remove(path);
  TraceRecord r;
  r.name = std::string("a\0b\x01", 4);
  EXPECT_EQ(format_trace_record(r), "{\"op\":\"kernel\",\"stream\":0,\"name\":\"a\\u0000b\\u0001\",\"extents\":[]}");
}

TEST(Trace, BadJsonLinesAreOneLineErrorsAndNeverCrash) {
  const std::string header = "{\"pump_trace\":1}\n";
  const std::string cases[] = {
      std::string(100000, '['),                      // hostile nesting
      "{\"op\":\"free\",\"address\":16,}",           // trailing comma
      "{\"op\":\"free\",\"address\":16} trailing",   // text after the value
      "{\"op\":\"free\",\"address\":\"0x10\xff\"}",  // not UTF-8
      "{\"op\":\"free\",\"address\":\"open",         // unterminated string
      "{\"op\":\"free\",\"address\":\"a\x01b\"}",    // raw control character
      "{\"op\":\"free\",\"address\":\"\\ud800\"}",   // lone surrogate
      "NaN",
  };
  for (const std::string& bad : cases) {
    std::string error;
    EXPECT_FALSE(parse(header + bad + "\n", &error)) << bad.substr(0, 40);
    EXPECT_EQ(error.rfind("t.trace:2: not valid JSON: ", 0), 0u) << error.substr(0, 200);
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error.substr(0, 200);
    EXPECT_EQ(error.find("[json.exception"), std::string::npos) << error.substr(0, 200);
  }
  std::string error;
  EXPECT_FALSE(parse(header + "{\"op\":\"free\",\"address\":18446744073709551616}\n", &error));
  EXPECT_NE(error.find("non-negative integer"), std::string::npos) << error;  // 2^64: no longer exact
  std::optional<Trace> t = parse(header + "{\"op\":\"free\",\"address\":18446744073709551615}\n", &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->records.at(0).address, 18446744073709551615ull);
}

TEST(Trace, MissingFileIsOneClearError) {
  std::string error;
  EXPECT_FALSE(read_trace_file("/nonexistent/trace.jsonl", &error));
  EXPECT_NE(error.find("/nonexistent/trace.jsonl: cannot open"), std::string::npos) << error;
}

}  // namespace
}  // namespace pump
