#include "core/trace/trace_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace pump {

namespace {

constexpr const char* kAccessNames[] = {"-", "r", "w", "rw"};
constexpr const char* kRoleNames[] = {"unknown", "weight", "activation", "workspace"};

void append_address(std::string* out, uint64_t address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"0x%" PRIx64 "\"", address);
  *out += buf;
}

// A kernel name as a JSON string: nlohmann's escaping; bytes that are not UTF-8
// (a mangled name cut short) become U+FFFD, so every line stays valid JSON.
// Printable ASCII without '"' or '\\' needs no escaping and is copied as is:
// record_kernel runs per launch under PUMP_TRACE, and nlohmann's dump of a string
// costs ~200 ns more per record (docs/architecture.md, "Libraries").
void append_string(std::string* out, const std::string& s) {
  const bool plain =
      std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (plain) {
    out->push_back('"');
    *out += s;
    out->push_back('"');
    return;
  }
  *out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_seconds(std::string* out, double seconds) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", seconds);
  *out += buf;
}

}  // namespace

const char* trace_access_name(uint32_t access) { return access < 4 ? kAccessNames[access] : "rw"; }
const char* trace_role_name(uint32_t role) { return role < 4 ? kRoleNames[role] : "unknown"; }

std::optional<uint32_t> parse_trace_access(std::string_view name) {
  for (uint32_t i = 0; i < 4; ++i)
    if (name == kAccessNames[i]) return i;
  return std::nullopt;
}

std::optional<uint32_t> parse_trace_role(std::string_view name) {
  for (uint32_t i = 0; i < 4; ++i)
    if (name == kRoleNames[i]) return i;
  return std::nullopt;
}

std::string format_trace_header() {
  return "{\"pump_trace\":" + std::to_string(kTraceFormatVersion) + ",\"writer\":\"pump\",\"inexact\":true}";
}

std::string format_trace_record(const TraceRecord& r) {
  std::string out;
  out.reserve(64 + r.extents.size() * 72);
  switch (r.op) {
    case TraceRecord::Op::kAlloc:
      out += "{\"op\":\"alloc\",\"address\":";
      append_address(&out, r.address);
      out += ",\"bytes\":" + std::to_string(r.bytes) + "}";
      break;
    case TraceRecord::Op::kFree:
      out += "{\"op\":\"free\",\"address\":";
      append_address(&out, r.address);
      out += "}";
      break;
    case TraceRecord::Op::kKernel:
      out += "{\"op\":\"kernel\",\"stream\":" + std::to_string(r.stream);
      if (!r.name.empty()) {
        out += ",\"name\":";
        append_string(&out, r.name);
      }
      if (r.seconds >= 0) {
        out += ",\"seconds\":";
        append_seconds(&out, r.seconds);
      }
      if (r.host_seconds >= 0) {
        out += ",\"host_seconds\":";
        append_seconds(&out, r.host_seconds);
      }
      out += ",\"extents\":[";
      for (size_t i = 0; i < r.extents.size(); ++i) {
        const pump_extent_v1_t& e = r.extents[i];
        if (i) out += ",";
        out += "{\"address\":";
        append_address(&out, e.address);
        out += ",\"bytes\":" + std::to_string(e.bytes) + ",\"access\":\"" + trace_access_name(e.access) +
               "\",\"role\":\"" + trace_role_name(e.role) + "\"";
        if (i < r.inexact.size() && r.inexact[i]) out += ",\"inexact\":true";
        out += "}";
      }
      out += "]}";
      break;
  }
  return out;
}

}  // namespace pump
