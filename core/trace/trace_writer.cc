#include "core/trace/trace_writer.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/common/log.h"
#include "core/trace/trace_format.h"

namespace pump {

std::unique_ptr<TraceWriter> TraceWriter::open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    log(LogLevel::kError, "cannot write the trace file '%s': %s; running without a trace", path.c_str(),
        std::strerror(errno));
    return nullptr;
  }
  std::unique_ptr<TraceWriter> writer(new TraceWriter(file, path));
  writer->append_line(format_trace_header());
  return writer;
}

namespace {
std::atomic<uint64_t> g_next_writer_id{1};  // 0: no writer (a thread's clock not set yet)
}  // namespace

TraceWriter::TraceWriter(std::FILE* file, std::string path)
    : file_(file), path_(std::move(path)), id_(g_next_writer_id.fetch_add(1, std::memory_order_relaxed)) {
  buffer_.reserve(kFlushBytes + 4096);
}

TraceWriter::~TraceWriter() {
  flush();
  if (std::fclose(file_) != 0 && !failed_)
    log(LogLevel::kError, "closing the trace file '%s' failed: %s", path_.c_str(), std::strerror(errno));
}

void TraceWriter::record_alloc(uint64_t address, uint64_t bytes) {
  TraceRecord r;
  r.op = TraceRecord::Op::kAlloc;
  r.address = address;
  r.bytes = bytes;
  append_line(format_trace_record(r));
}

void TraceWriter::record_free(uint64_t address) {
  TraceRecord r;
  r.op = TraceRecord::Op::kFree;
  r.address = address;
  append_line(format_trace_record(r));
}

void TraceWriter::record_kernel(StreamId stream, const pump_extent_v1_t* extents, size_t count, const char* name,
                                double seconds, const uint8_t* inexact) {
  TraceRecord r;
  r.op = TraceRecord::Op::kKernel;
  r.stream = stream;
  if (name != nullptr) r.name = name;
  r.seconds = seconds;
  // The calling thread's time since its previous kernel record to this writer (none for
  // its first): a clock per thread, no lock.
  thread_local struct {
    uint64_t writer = 0;
    std::chrono::steady_clock::time_point at;
  } last;
  const auto now = std::chrono::steady_clock::now();
  if (last.writer == id_) r.host_seconds = std::chrono::duration<double>(now - last.at).count();
  last = {id_, now};
  if (extents != nullptr) r.extents.assign(extents, extents + count);
  if (extents != nullptr && inexact != nullptr) r.inexact.assign(inexact, inexact + count);
  append_line(format_trace_record(r));
}

void TraceWriter::append_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) return;
  buffer_ += line;
  buffer_.push_back('\n');
  ++records_;
  if (buffer_.size() >= kFlushBytes) write_out_locked();
}

void TraceWriter::write_out_locked() {
  if (failed_ || buffer_.empty()) return;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    failed_ = true;
    log(LogLevel::kError, "writing the trace file '%s' failed: %s; the trace stops here", path_.c_str(),
        std::strerror(errno));
  }
  buffer_.clear();
}

void TraceWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  write_out_locked();
  if (!failed_) std::fflush(file_);
}

uint64_t TraceWriter::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_;
}

bool TraceWriter::healthy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !failed_;
}

}  // namespace pump
