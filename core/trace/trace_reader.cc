#include "core/trace/trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/common/json_error.h"

namespace pump {

namespace {

using Json = nlohmann::json;

// Thrown only inside this file, to leave a record with one message.
struct LineError {
  std::string what;
};

std::string field_context(const char* op, const char* field) { return std::string(op) + " record: \"" + field + "\""; }

// Member `key` of an object, or nullptr.
const Json* find(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const Json& required(const Json& object, const char* op, const char* field) {
  const Json* v = find(object, field);
  if (v == nullptr) throw LineError{std::string(op) + " record has no \"" + field + "\""};
  return *v;
}

// Integers written without sign, fraction or exponent, up to 2^64-1, exactly.
uint64_t to_uint(const Json& v, const char* op, const char* field) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  throw LineError{field_context(op, field) + " must be a non-negative integer"};
}

uint64_t to_address(const Json& v, const char* op, const char* field) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s.size() <= 18) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long a = std::strtoull(s.c_str() + 2, &end, 16);
      if (errno == 0 && end != nullptr && *end == '\0') return a;
    }
    throw LineError{field_context(op, field) + " must be a hex string \"0x...\" or an integer, not \"" + s + "\""};
  }
  return to_uint(v, op, field);
}

pump_extent_v1_t to_extent(const Json& v, size_t index, uint8_t* inexact) {
  const std::string where = "extent " + std::to_string(index);
  if (!v.is_object()) throw LineError{"kernel record: " + where + " is not an object"};
  pump_extent_v1_t e{};
  try {
    e.address = to_address(required(v, "kernel", "address"), "kernel", "address");
    e.bytes = to_uint(required(v, "kernel", "bytes"), "kernel", "bytes");
    const Json& access = required(v, "kernel", "access");
    std::optional<uint32_t> a =
        access.is_string() ? parse_trace_access(access.get_ref<const std::string&>()) : std::nullopt;
    if (!a) throw LineError{"kernel record: \"access\" must be \"r\", \"w\", \"rw\" or \"-\""};
    e.access = *a;
    const Json& role = required(v, "kernel", "role");
    std::optional<uint32_t> r = role.is_string() ? parse_trace_role(role.get_ref<const std::string&>()) : std::nullopt;
    if (!r) throw LineError{"kernel record: \"role\" must be unknown, weight, activation or workspace"};
    e.role = *r;
    const Json* guessed = find(v, "inexact");
    if (guessed && !guessed->is_boolean()) throw LineError{"kernel record: \"inexact\" must be true or false"};
    *inexact = guessed && guessed->get<bool>() ? 1 : 0;
  } catch (LineError& error) {
    error.what = where + ": " + error.what;
    throw;
  }
  return e;
}

TraceRecord to_record(const Json& v) {
  if (!v.is_object()) throw LineError{"a record must be a JSON object"};
  const Json* op = find(v, "op");
  if (op == nullptr || !op->is_string()) throw LineError{"record has no \"op\" string"};
  TraceRecord r;
  const std::string& name = op->get_ref<const std::string&>();
  if (name == "alloc") {
    r.op = TraceRecord::Op::kAlloc;
    r.address = to_address(required(v, "alloc", "address"), "alloc", "address");
    r.bytes = to_uint(required(v, "alloc", "bytes"), "alloc", "bytes");
  } else if (name == "free") {
    r.op = TraceRecord::Op::kFree;
    r.address = to_address(required(v, "free", "address"), "free", "address");
  } else if (name == "kernel") {
    r.op = TraceRecord::Op::kKernel;
    r.stream = to_uint(required(v, "kernel", "stream"), "kernel", "stream");
    if (const Json* n = find(v, "name")) {
      if (!n->is_string()) throw LineError{"kernel record: \"name\" must be a string"};
      r.name = n->get<std::string>();
    }
    if (const Json* s = find(v, "seconds")) {
      if (!s->is_number() || s->get<double>() < 0)
        throw LineError{"kernel record: \"seconds\" must be a non-negative number"};
      r.seconds = s->get<double>();
    }
    if (const Json* s = find(v, "host_seconds")) {
      if (!s->is_number() || s->get<double>() < 0)
        throw LineError{"kernel record: \"host_seconds\" must be a non-negative number"};
      r.host_seconds = s->get<double>();
    }
    const Json& extents = required(v, "kernel", "extents");
    if (!extents.is_array()) throw LineError{"kernel record: \"extents\" must be an array"};
    r.inexact.assign(extents.size(), 0);
    for (size_t i = 0; i < extents.size(); ++i) r.extents.push_back(to_extent(extents[i], i, &r.inexact[i]));
    if (std::find(r.inexact.begin(), r.inexact.end(), 1) == r.inexact.end()) r.inexact.clear();
  } else {
    throw LineError{"unknown op \"" + name + "\" (this reader knows alloc, free, kernel)"};
  }
  return r;
}

int to_header(const Json& v) {
  const Json* version = v.is_object() ? find(v, "pump_trace") : nullptr;
  if (version == nullptr) throw LineError{"not a pump trace: the first line must be a header {\"pump_trace\":N}"};
  if (!version->is_number_unsigned() || version->get<uint64_t>() == 0)
    throw LineError{"\"pump_trace\" must be a positive integer version"};
  const uint64_t n = version->get<uint64_t>();
  if (n > static_cast<uint64_t>(kTraceFormatVersion))
    throw LineError{"trace version " + std::to_string(n) + " is newer than this reader (version " +
                    std::to_string(kTraceFormatVersion) + ")"};
  return static_cast<int>(n);
}

// One line as JSON; a LineError "not valid JSON: <nlohmann's reason>" otherwise.
Json parse_line(const std::string& line) {
  try {
    return Json::parse(line);
  } catch (const Json::parse_error& e) {
    throw LineError{"not valid JSON: " + json_parse_reason(e)};
  }
}

}  // namespace

std::optional<Trace> read_trace(std::istream& in, const std::string& source, std::string* error) {
  Trace trace;
  std::string line;
  size_t number = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const Json v = parse_line(line);
      if (!have_header) {
        trace.version = to_header(v);
        const Json* marks = v.is_object() ? find(v, "inexact") : nullptr;
        trace.marks_inexact = marks && marks->is_boolean() && marks->get<bool>();
        have_header = true;
      } else {
        trace.records.push_back(to_record(v));
      }
    } catch (const LineError& e) {
      if (error) *error = source + ":" + std::to_string(number) + ": " + e.what;
      return std::nullopt;
    }
  }
  if (!have_header) {
    if (error) *error = source + ": empty file, not a pump trace";
    return std::nullopt;
  }
  return trace;
}

std::optional<Trace> read_trace_file(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (error) *error = path + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  return read_trace(in, path, error);
}

}  // namespace pump
