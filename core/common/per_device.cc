#include "core/common/per_device.h"

#include <cctype>
#include <set>

#include "core/common/text.h"

namespace pump {
namespace {

// A device ordinal: decimal digits, below 1024 (no machine has more GPUs).
std::optional<int> device_number(std::string_view text) {
  if (text.empty() || text.size() > 4) return std::nullopt;
  int n = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n < 1024 ? std::optional<int>(n) : std::nullopt;
}

}  // namespace

std::optional<std::vector<PerDeviceItem>> split_per_device(std::string_view text, std::string* error) {
  // Built here and swapped out: GCC 12 misreads assignments through `error` as overlapping.
  auto fail = [error](std::string why) {
    error->swap(why);
    return std::nullopt;
  };
  std::vector<PerDeviceItem> items;
  std::set<int> named;
  bool bare = false;
  text = trim_spaces(text);
  if (text.empty()) return items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string_view item =
        trim_spaces(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) return fail("has an empty item");
    PerDeviceItem parsed;
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      if (bare) return fail("has two values for every device");
      bare = true;
      parsed.value = std::string(item);
    } else {
      const std::string_view device = trim_spaces(item.substr(0, colon));
      parsed.value = std::string(trim_spaces(item.substr(colon + 1)));
      parsed.device = device_number(device);
      if (!parsed.device) {
        std::string why(1, '\'');  // appended, not prepended: GCC 12's -Wrestrict misfires on that
        why.append(device).append("' is not a device number");
        return fail(std::move(why));
      }
      if (parsed.value.empty()) return fail("gives device " + std::to_string(*parsed.device) + " no value");
      if (!named.insert(*parsed.device).second)
        return fail("names device " + std::to_string(*parsed.device) + " twice");
    }
    items.push_back(std::move(parsed));
  }
  return items;
}

}  // namespace pump
