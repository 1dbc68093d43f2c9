#include "core/common/log.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace pump {
namespace {

LogLevel level_from_env() {
  const char* env = std::getenv("PUMP_LOG_LEVEL");
  LogLevel level = LogLevel::kWarn;
  if (env && *env && !parse_log_level(env, &level)) {
    std::fprintf(stderr, "pump: warning: PUMP_LOG_LEVEL='%s' is not one of error, warn, info, debug; using warn\n",
                 env);
    level = LogLevel::kWarn;
  }
  return level;
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(level_from_env())};
  return level;
}

std::atomic<LogSink> g_sink{nullptr};
thread_local int t_quiet = 0;

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warning";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}

}  // namespace

LogLevel log_level() { return static_cast<LogLevel>(level_storage().load(std::memory_order_relaxed)); }
void set_log_level(LogLevel level) { level_storage().store(static_cast<int>(level)); }

bool parse_log_level(std::string_view text, LogLevel* out) {
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "error") *out = LogLevel::kError;
  else if (lower == "warn" || lower == "warning") *out = LogLevel::kWarn;
  else if (lower == "info") *out = LogLevel::kInfo;
  else if (lower == "debug") *out = LogLevel::kDebug;
  else return false;
  return true;
}

void set_log_sink(LogSink sink) { g_sink.store(sink); }

QuietLogScope::QuietLogScope() { ++t_quiet; }
QuietLogScope::~QuietLogScope() { --t_quiet; }

void log(LogLevel level, const char* format, ...) {
  if (static_cast<int>(level) > static_cast<int>(log_level()) || t_quiet > 0) return;
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  char line[1100];
  std::snprintf(line, sizeof line, "pump: %s: %s\n", level_name(level), message);
  if (LogSink sink = g_sink.load()) {
    sink(level, line);
    return;
  }
  std::fputs(line, stderr);
}

}  // namespace pump
