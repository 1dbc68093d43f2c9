// Parsing of sizes given by users: "8GiB", "512MiB", "1073741824", "50%".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pump {

// "123", "64KiB", "8GiB", "1.5GiB", "2TiB"; also KB/MB/GB (decimal) and K/M/G (binary).
// Returns nullopt for empty, negative, unknown-suffix, trailing-junk or overflowing input.
std::optional<uint64_t> parse_byte_size(std::string_view text);

// The smallest budget pump accepts: one page. Less holds nothing (a budget of 0
// would evict every block before every kernel), so it is a typo, not a setting.
inline constexpr uint64_t kMinBudgetBytes = 4096;

// A budget: a byte size as above, or a percentage ("50%", "12.5%") of `device_bytes`.
// Percentages must lie in (0, 100].
std::optional<uint64_t> parse_budget(std::string_view text, uint64_t device_bytes);

// A byte size as above, or a percentage in [0, 100] of `whole` (what policies are
// given through the host's parse_size: one grammar for every size pump reads).
std::optional<uint64_t> parse_size_or_percent(std::string_view text, uint64_t whole);

// 8589934592 -> "8.00 GiB"
std::string format_bytes(uint64_t bytes);

}  // namespace pump
