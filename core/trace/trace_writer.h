// TraceWriter: appends trace records (trace_format.h) to a file. The runtime
// opens one from PUMP_TRACE and calls record_* from any application thread.
// Thread-safe; each record is formatted outside the lock and appended to a
// buffer written out in large chunks, so a launch costs a format and a memcpy.
// The file is complete once the writer is destroyed (or after flush()).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "core/common/fence.h"
#include "pump/extractor_v1.h"

namespace pump {

class TraceWriter {
 public:
  // Creates/truncates `path` and writes the header. On failure logs one error
  // naming the path and the reason, and returns nullptr (the caller runs on untraced).
  static std::unique_ptr<TraceWriter> open(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void record_alloc(uint64_t address, uint64_t bytes);
  void record_free(uint64_t address);
  // `seconds` < 0: duration unknown. `name` may be null. `inexact` (null: none) marks the
  // extents guessed from a pointer. The record carries the calling thread's time since its
  // previous kernel record (host_seconds), none for a thread's first.
  void record_kernel(StreamId stream, const pump_extent_v1_t* extents, size_t count, const char* name = nullptr,
                     double seconds = -1, const uint8_t* inexact = nullptr);
  // Writes the buffer out (fflush too). Also done when the buffer passes kFlushBytes.
  void flush();

  uint64_t records() const;
  // False once a write failed (reported once); later records are dropped.
  bool healthy() const;

  static constexpr size_t kFlushBytes = 1 << 20;

 private:
  TraceWriter(std::FILE* file, std::string path);
  void append_line(const std::string& line);
  void write_out_locked();

  mutable std::mutex mutex_;
  std::FILE* file_;
  std::string path_;
  std::string buffer_;
  uint64_t records_ = 0;
  bool failed_ = false;
  const uint64_t id_;  // names this writer to its threads' last-kernel clocks (trace_writer.cc)
};

}  // namespace pump
