// Settings pump gives frameworks before they start, where a framework's default would
// defeat the budget.
//
// XLA (JAX, TensorFlow) runs a jitted step as CUDA graphs, its "command buffers": one
// graph launch takes every buffer of the step at once, which no budget smaller than the
// step can hold (the launch runs over budget, on demand paging). With PUMP_GPU_BUDGET set,
// pump turns them off through XLA_FLAGS, so each kernel is launched, and decided, on its
// own; unless XLA_FLAGS already says which command buffers to use (the user's choice).
#pragma once

#include <optional>
#include <string>

namespace pump::interpose {

inline constexpr const char* kXlaCommandBufferFlag = "--xla_gpu_enable_command_buffer";

// The XLA_FLAGS to set, or nothing to change. Arguments are the environment's values
// (nullptr: unset).
std::optional<std::string> xla_flags_under_budget(const char* budget, const char* disable, const char* xla_flags);

// Reads the environment and changes it as above, with one info line. Called while
// libpump.so loads; does nothing unless it is preloaded (LD_PRELOAD names libpump), so
// that it runs before the program (or any thread of it).
void apply_framework_settings();

}  // namespace pump::interpose
