// --size for the built-in workloads, shared by pump-bench (sim) and the GPU
// programs so both build the same shapes: a preset (small, medium, large) or a
// target footprint in bytes ("3GiB", "512MiB", "1e9"). C++17, header-only.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace pump::bench {

enum class SizePreset { kSmall, kMedium, kLarge, kBytes };

struct WorkloadSize {
  SizePreset preset = SizePreset::kMedium;
  uint64_t bytes = 0;  // kBytes only
};

inline std::optional<WorkloadSize> parse_workload_size(const std::string& text) {
  if (text == "small") return WorkloadSize{SizePreset::kSmall, 0};
  if (text == "medium") return WorkloadSize{SizePreset::kMedium, 0};
  if (text == "large") return WorkloadSize{SizePreset::kLarge, 0};
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(number > 0)) return std::nullopt;
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  if (scale == 0 || number * scale > 1e15) return std::nullopt;
  return WorkloadSize{SizePreset::kBytes, static_cast<uint64_t>(number * scale)};
}

// Stated compute rates used wherever a duration is estimated rather than measured.
// 50 TFLOP/s: an H100 running fp32 gemms and convolutions with TF32 tensor cores
// at a realistic fraction of peak. 2 TB/s: elementwise kernels are bound by HBM
// (facts: ~2200 GB/s on resident managed pages).
inline constexpr double kFlopsPerSecond = 50e12;
inline constexpr double kElementwiseBytesPerSecond = 2e12;

}  // namespace pump::bench
