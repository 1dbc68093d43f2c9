// pump trace files, format version 1: what a program did to memory, recorded by
// libpump.so (PUMP_TRACE=path) and replayed into the sim (pump-bench --trace).
//
// JSON lines, UTF-8, one record per line, in the order the runtime saw the calls.
// Line 1 is the header; every later line is an object with "op":
//   {"pump_trace":1,"writer":"pump 0.1.0"}
//   {"op":"alloc","address":"0x7f0000000000","bytes":67108864}
//   {"op":"free","address":"0x7f0000000000"}
//   {"op":"kernel","stream":1,"name":"cublasSgemm_v2","seconds":0.00012,
//    "extents":[{"address":"0x7f0000000000","bytes":4096,"access":"r","role":"weight"}]}
// A header with "inexact":true says the writer marks each extent that was only guessed
// from a pointer (a launch's parameter: the whole block it points into, which the kernel
// may reach beyond) with "inexact":true; older writers did not, and a replay must guess.
// Fields:
//   address   hex string "0x..." or a non-negative integer (exact to 64 bits)
//   bytes     non-negative integer
//   stream    integer: the runtime's stream id (0 = the legacy stream)
//   name      optional: the intercepted call or kernel
//   seconds   optional: measured or estimated duration on resident memory; absent
//             when unknown (the replay then estimates it from the bytes touched)
//   host_seconds  optional: the launching thread's time since its previous kernel record
//             (the program's own host work, and pump's); the replay spends it before
//             the launch, so a launch-bound program stays launch-bound
//   access    "r", "w", "rw" or "-"          (pump_access_v1_t)
//   role      "unknown", "weight", "activation" or "workspace"  (pump_role_v1_t)
// Unknown fields are ignored (writers may add some without a version bump); an
// unknown "op" or a missing required field is an error. A change of meaning
// bumps "pump_trace"; readers refuse versions newer than theirs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/fence.h"
#include "pump/extractor_v1.h"

namespace pump {

inline constexpr int kTraceFormatVersion = 1;

struct TraceRecord {
  enum class Op { kAlloc, kFree, kKernel };
  Op op = Op::kKernel;
  uint64_t address = 0;                   // alloc, free
  uint64_t bytes = 0;                     // alloc
  StreamId stream = 0;                    // kernel
  std::string name;                       // kernel, optional
  double seconds = -1;                    // kernel; < 0: unknown
  double host_seconds = -1;               // kernel; < 0: unknown
  std::vector<pump_extent_v1_t> extents;  // kernel
  std::vector<uint8_t> inexact;           // kernel: 1 per guessed extent; empty: none marked
};

const char* trace_access_name(uint32_t access);
const char* trace_role_name(uint32_t role);
std::optional<uint32_t> parse_trace_access(std::string_view name);
std::optional<uint32_t> parse_trace_role(std::string_view name);

// One record as its line (no newline).
std::string format_trace_record(const TraceRecord& record);
std::string format_trace_header();

}  // namespace pump
