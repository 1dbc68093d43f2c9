// A DeviceBackend that records what the engine asks of it, with fences whose
// completion the test controls. For engine unit tests.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/engine/device_backend.h"

namespace pump::testing {

class RecordingBackend : public DeviceBackend {
 public:
  static constexpr StreamId kPrefetchStream = ~0ull;  // the "in" direction
  static constexpr StreamId kOutStream = ~1ull;

  explicit RecordingBackend(uint64_t device_bytes = 1ull << 34) : device_bytes_(device_bytes) {}

  std::string_view name() const override { return "recording"; }
  uint64_t device_memory_bytes() const override { return device_bytes_; }
  BatchFences submit(TransferBatch&& batch) override {
    BatchFences f;
    if (batch.has_out()) f.out = {kOutStream, ++out_counter_};
    if (batch.has_in() || !batch.fetch_wait_for.empty()) f.in = {kPrefetchStream, ++prefetch_counter_};
    batches.push_back(std::move(batch));
    return f;
  }
  uint64_t allocate_host(uint64_t bytes) override {
    if (!host_memory) return 0;
    const uint64_t at = next_host_;
    next_host_ += bytes;
    return at;
  }
  void stream_wait(StreamId stream, const Fence& fence) override {
    if (on_query) on_query();
    waits.push_back({stream, fence});
  }
  Fence mark(StreamId stream) override {
    marks.push_back(stream);
    note("mark", stream);
    return {stream, ++mark_counter_};
  }
  bool done(const Fence& fence) override {
    ++done_queries;
    return all_done || completed.count({fence.stream, fence.value});
  }
  bool capturing(StreamId stream) override {
    if (on_query) on_query();
    return capturing_streams.count(stream) > 0;
  }
  // A capturing stream without an entry in capture_ids is one the backend cannot name.
  uint64_t capture_id(StreamId stream) override {
    auto it = capture_ids.find(stream);
    return capturing(stream) && it != capture_ids.end() ? it->second : DeviceBackend::capture_id(stream);
  }
  // Nothing runs here: a wait completes the fence (and is recorded).
  void host_wait(const Fence& fence) override {
    host_waits.push_back(fence);
    complete(fence);
  }

  void complete(const Fence& f) { completed.insert({f.stream, f.value}); }
  uint64_t out_submitted() const { return out_counter_; }  // the newest out fence's value
  uint64_t in_submitted() const { return prefetch_counter_; }

  // A bridge (0: none, the default) whose orderings are only noted in the journal.
  StreamId bridge_stream() override { return bridge; }
  void bridge_before_access(StreamId stream) override { note("bridge_before", stream); }
  void bridge_after_access(StreamId stream) override { note("bridge_after", stream); }

  struct Wait {
    StreamId stream;
    Fence fence;
  };
  std::vector<TransferBatch> batches;
  std::vector<Wait> waits;
  std::vector<StreamId> marks;  // streams mark() was called for, in order
  std::vector<Fence> host_waits;
  uint64_t done_queries = 0;  // done() calls
  std::set<std::pair<StreamId, uint64_t>> completed;
  std::set<StreamId> capturing_streams;
  std::map<StreamId, uint64_t> capture_ids;
  bool all_done = false;
  // Called at the start of each stream_wait() and capturing(): what the engine asks the
  // driver for a launch (a test checks what holds meanwhile).
  std::function<void()> on_query;
  bool host_memory = false;  // allocate_host hands out (fake) addresses
  StreamId bridge = 0;
  // When set, gets "<name> <prefix>:<stream in hex>" for each mark and bridge ordering, so a
  // test can interleave them with what else it journals.
  std::vector<std::string>* journal = nullptr;
  std::string journal_prefix;

 private:
  uint64_t device_bytes_;
  uint64_t prefetch_counter_ = 0;
  uint64_t out_counter_ = 0;
  uint64_t next_host_ = 0x10000000000ull;
  uint64_t mark_counter_ = 0;

  void note(const char* what, StreamId stream) {
    if (!journal) return;
    char hex[32];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(stream));
    journal->push_back(std::string(what) + " " + journal_prefix + hex);
  }
};

}  // namespace pump::testing
