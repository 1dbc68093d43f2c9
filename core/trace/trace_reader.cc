#include "core/trace/trace_reader.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/trace/json_value.h"

namespace pump {

namespace {

// Thrown only inside this file, to leave a record with one message.
struct LineError {
  std::string what;
};

std::string field_context(const char* op, const char* field) { return std::string(op) + " record: \"" + field + "\""; }

const JsonValue& required(const JsonValue& object, const char* op, const char* field) {
  const JsonValue* v = object.find(field);
  if (v == nullptr) throw LineError{std::string(op) + " record has no \"" + field + "\""};
  return *v;
}

uint64_t to_uint(const JsonValue& v, const char* op, const char* field) {
  if (std::optional<uint64_t> u = v.as_uint(); v.is_number() && u) return *u;
  throw LineError{field_context(op, field) + " must be a non-negative integer"};
}

uint64_t to_address(const JsonValue& v, const char* op, const char* field) {
  if (v.is_string()) {
    const std::string& s = v.as_string();
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

pump_extent_v1_t to_extent(const JsonValue& v, size_t index) {
  const std::string where = "extent " + std::to_string(index);
  if (!v.is_object()) throw LineError{"kernel record: " + where + " is not an object"};
  pump_extent_v1_t e{};
  try {
    e.address = to_address(required(v, "kernel", "address"), "kernel", "address");
    e.bytes = to_uint(required(v, "kernel", "bytes"), "kernel", "bytes");
    const JsonValue& access = required(v, "kernel", "access");
    std::optional<uint32_t> a = access.is_string() ? parse_trace_access(access.as_string()) : std::nullopt;
    if (!a) throw LineError{"kernel record: \"access\" must be \"r\", \"w\", \"rw\" or \"-\""};
    e.access = *a;
    const JsonValue& role = required(v, "kernel", "role");
    std::optional<uint32_t> r = role.is_string() ? parse_trace_role(role.as_string()) : std::nullopt;
    if (!r) throw LineError{"kernel record: \"role\" must be unknown, weight, activation or workspace"};
    e.role = *r;
  } catch (LineError& error) {
    error.what = where + ": " + error.what;
    throw;
  }
  return e;
}

TraceRecord to_record(const JsonValue& v) {
  if (!v.is_object()) throw LineError{"a record must be a JSON object"};
  const JsonValue* op = v.find("op");
  if (op == nullptr || !op->is_string()) throw LineError{"record has no \"op\" string"};
  TraceRecord r;
  const std::string& name = op->as_string();
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
    if (const JsonValue* n = v.find("name")) {
      if (!n->is_string()) throw LineError{"kernel record: \"name\" must be a string"};
      r.name = n->as_string();
    }
    if (const JsonValue* s = v.find("seconds")) {
      if (!s->is_number() || s->as_double() < 0)
        throw LineError{"kernel record: \"seconds\" must be a non-negative number"};
      r.seconds = s->as_double();
    }
    const JsonValue& extents = required(v, "kernel", "extents");
    if (!extents.is_array()) throw LineError{"kernel record: \"extents\" must be an array"};
    for (size_t i = 0; i < extents.items().size(); ++i) r.extents.push_back(to_extent(extents.items()[i], i));
  } else {
    throw LineError{"unknown op \"" + name + "\" (this reader knows alloc, free, kernel)"};
  }
  return r;
}

int to_header(const JsonValue& v) {
  const JsonValue* version = v.is_object() ? v.find("pump_trace") : nullptr;
  if (version == nullptr) throw LineError{"not a pump trace: the first line must be a header {\"pump_trace\":N}"};
  std::optional<uint64_t> n = version->as_uint();
  if (!n || *n == 0) throw LineError{"\"pump_trace\" must be a positive integer version"};
  if (*n > static_cast<uint64_t>(kTraceFormatVersion))
    throw LineError{"trace version " + std::to_string(*n) + " is newer than this reader (version " +
                    std::to_string(kTraceFormatVersion) + ")"};
  return static_cast<int>(*n);
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
      std::string json_error;
      std::optional<JsonValue> v = parse_json(line, &json_error);
      if (!v) throw LineError{"not valid JSON: " + json_error};
      if (!have_header) {
        trace.version = to_header(*v);
        have_header = true;
      } else {
        trace.records.push_back(to_record(*v));
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
