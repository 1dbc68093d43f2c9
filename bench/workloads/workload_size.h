// --size for the built-in workloads, shared by pump-bench (sim) and the GPU
// programs so both build the same shapes: a preset (small, medium, large) or a
// target footprint in bytes ("3GiB", "512MiB", "1GB": pump's one size grammar,
// core/common/byte_size.h, which the GPU programs compile in). C++17.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/common/byte_size.h"

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
  const std::optional<uint64_t> bytes = parse_byte_size(text);
  if (!bytes || *bytes == 0 || *bytes > uint64_t{1000000000000000}) return std::nullopt;
  return WorkloadSize{SizePreset::kBytes, *bytes};
}

// Stated compute rates used wherever a duration is estimated rather than measured.
// 50 TFLOP/s: an H100 running fp32 gemms and convolutions with TF32 tensor cores
// at a realistic fraction of peak. 2 TB/s: elementwise kernels are bound by HBM
// (facts: ~2200 GB/s on resident managed pages).
inline constexpr double kFlopsPerSecond = 50e12;
inline constexpr double kElementwiseBytesPerSecond = 2e12;

}  // namespace pump::bench
