// Logging for the engine: one line per message on stderr, prefixed "pump: ".
// Level from PUMP_LOG_LEVEL (error, warn, info, debug; default warn).
// Never used on the per-launch hot path except behind a level check.
#pragma once

#include <atomic>
#include <cstdarg>
#include <string_view>

namespace pump {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

LogLevel log_level();
void set_log_level(LogLevel level);
// Parses "error", "warn", "info", "debug" (case-insensitive). False on anything else.
bool parse_log_level(std::string_view text, LogLevel* out);

void log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

// Logs once per call site (the flag lives at the caller): for warnings that could
// otherwise repeat on every call.
#define PUMP_LOG_ONCE(level, ...)                                      \
  do {                                                                 \
    static std::atomic<bool> pump_logged_{false};                      \
    if (!pump_logged_.exchange(true)) ::pump::log(level, __VA_ARGS__); \
  } while (0)

// While one is alive, this thread's log lines are dropped: for probes whose failures
// are not the user's concern (PluginHost reading the names plugins declare).
class QuietLogScope {
 public:
  QuietLogScope();
  ~QuietLogScope();
  QuietLogScope(const QuietLogScope&) = delete;
  QuietLogScope& operator=(const QuietLogScope&) = delete;
};

// Test hook: where log lines go (nullptr restores stderr). The sink gets the full line.
using LogSink = void (*)(LogLevel level, const char* line);
void set_log_sink(LogSink sink);

}  // namespace pump
