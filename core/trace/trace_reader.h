// Reads a trace file (trace_format.h) back into records. Strict: the first
// malformed line stops the read with one message naming the file and line.
#pragma once

#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "core/trace/trace_format.h"

namespace pump {

struct Trace {
  int version = 0;
  bool marks_inexact = false;        // the header says guessed extents carry "inexact":true
  std::vector<TraceRecord> records;  // header excluded
};

// `source` names the input in messages ("run.trace:17: ..."). Blank lines are skipped.
std::optional<Trace> read_trace(std::istream& in, const std::string& source, std::string* error);
std::optional<Trace> read_trace_file(const std::string& path, std::string* error);

}  // namespace pump
