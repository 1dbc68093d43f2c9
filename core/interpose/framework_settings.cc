#include "core/interpose/framework_settings.h"

#include <cstdlib>
#include <cstring>

#include "core/common/log.h"

namespace pump::interpose {

std::optional<std::string> xla_flags_under_budget(const char* budget, const char* disable, const char* xla_flags) {
  if (budget == nullptr || *budget == '\0') return std::nullopt;  // no budget: nothing to split
  if (disable != nullptr && std::strcmp(disable, "1") == 0) return std::nullopt;
  const std::string flags = xla_flags ? xla_flags : "";
  if (flags.find(kXlaCommandBufferFlag) != std::string::npos) return std::nullopt;
  return flags.empty() ? std::string(kXlaCommandBufferFlag) + "=" : flags + " " + kXlaCommandBufferFlag + "=";
}

void apply_framework_settings() {
  // Only as a preload, before the program runs: loaded later (dlopen), other threads may be
  // reading the environment, which setenv must not change under them, and the framework
  // may have read it already.
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload == nullptr || std::strstr(preload, "libpump") == nullptr) return;
  const auto flags =
      xla_flags_under_budget(std::getenv("PUMP_GPU_BUDGET"), std::getenv("PUMP_DISABLE"), std::getenv("XLA_FLAGS"));
  if (!flags) return;
  if (setenv("XLA_FLAGS", flags->c_str(), 1) != 0) return;  // out of memory: XLA keeps its graphs
  log(LogLevel::kInfo,
      "PUMP_GPU_BUDGET is set: XLA's command buffers (CUDA graphs of a whole step) are turned off, XLA_FLAGS='%s'",
      flags->c_str());
}

}  // namespace pump::interpose
