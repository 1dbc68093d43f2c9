// A setting given once for every device or per device (PUMP_GPU_BUDGET,
// PUMP_MANAGED_LIMIT): comma-separated items, each a value or DEVICE:VALUE.
//   "8GiB"            every device
//   "0:8GiB,1:6GiB"   device 0 and device 1; other devices get the setting's default
//   "6GiB,1:4GiB"     device 1 gets 4GiB, every other device 6GiB
// Devices are the process's CUDA ordinals (as numbered after CUDA_VISIBLE_DEVICES). At
// most one bare value, and a device named once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pump {

struct PerDeviceItem {
  std::optional<int> device;  // none: the bare value, for every device not named
  std::string value;          // trimmed, non-empty
};

// The items of `text`, or nullopt with *error set to a phrase saying what is wrong ("names
// device 1 twice"). An empty text has no items.
std::optional<std::vector<PerDeviceItem>> split_per_device(std::string_view text, std::string* error);

template <typename T>
class PerDevice {
 public:
  // The value for `device`: its own, else the bare one; nullptr when neither was given.
  const T* of(int device) const {
    auto it = by_device_.find(device);
    if (it != by_device_.end()) return &it->second;
    return every_ ? &*every_ : nullptr;
  }
  bool empty() const { return !every_ && by_device_.empty(); }
  void set_every(T value) { every_ = std::move(value); }
  void set(int device, T value) { by_device_[device] = std::move(value); }

 private:
  std::optional<T> every_;
  std::map<int, T> by_device_;
};

// Parses `text` with `value_of` (nullopt: that value is bad). nullopt with *error set
// (one phrase, naming the bad item) when the text or any value is bad.
template <typename T, typename ValueOf>
std::optional<PerDevice<T>> parse_per_device(std::string_view text, ValueOf value_of, std::string* error) {
  auto items = split_per_device(text, error);
  if (!items) return std::nullopt;
  PerDevice<T> out;
  for (const PerDeviceItem& item : *items) {
    std::optional<T> value = value_of(item.value);
    if (!value) {
      std::string why(1, '\'');  // appended and swapped: GCC 12's -Wrestrict misfires otherwise
      why.append(item.value).append("' is not a valid value");
      error->swap(why);
      return std::nullopt;
    }
    if (item.device) out.set(*item.device, std::move(*value));
    else out.set_every(std::move(*value));
  }
  return out;
}

}  // namespace pump
