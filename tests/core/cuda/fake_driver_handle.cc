#include "tests/core/cuda/fake_driver_handle.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

namespace pump::testing {

namespace {
template <typename Fn>
bool find(void* handle, const char* name, Fn* out) {
  *out = handle ? reinterpret_cast<Fn>(dlsym(handle, name)) : nullptr;
  return *out != nullptr;
}
}  // namespace

FakeDriver::FakeDriver() : handle_(dlopen(PUMP_FAKE_CUDA_DRIVER, RTLD_NOW)) {
  ok_ = find(handle_, "fake_cuda_reset", &reset_) & find(handle_, "fake_cuda_calls", &calls_) &
        find(handle_, "fake_cuda_gate", &gate_) & find(handle_, "fake_cuda_set_capturing", &capture_) &
        find(handle_, "fake_cuda_fail", &fail_) & find(handle_, "fake_cuda_failures", &failures_) &
        find(handle_, "fake_cuda_count", &count_) & find(handle_, "fake_cuda_entry", &entry_) &
        find(handle_, "fake_cuda_hold_stream", &hold_) & find(handle_, "fake_cuda_unmapped", &unmapped_);
}

FakeDriver::~FakeDriver() {
  if (gate_) gate_(0);
  if (handle_) dlclose(handle_);
}

std::unique_ptr<CudaBackend> FakeDriver::backend(CudaBackendOptions options) const {
  options.driver_library = PUMP_FAKE_CUDA_DRIVER;
  return CudaBackend::create(0, options);
}

std::vector<FakeCall> FakeDriver::calls() const {
  std::vector<FakeCall> out(calls_(nullptr, 0) + 16);
  out.resize(std::min(out.size(), calls_(out.data(), out.size())));
  return out;
}

std::vector<FakeCall> FakeDriver::calls_named(const char* name) const {
  std::vector<FakeCall> out;
  for (const FakeCall& c : calls())
    if (std::strcmp(c.name, name) == 0) out.push_back(c);
  return out;
}

size_t FakeDriver::count_since(size_t first, const char* name) const {
  const std::vector<FakeCall> all = calls();
  size_t n = 0;
  for (size_t i = first; i < all.size(); ++i) n += std::strcmp(all[i].name, name) == 0;
  return n;
}

size_t FakeDriver::count_since(size_t first, const char* name, uint64_t address) const {
  const std::vector<FakeCall> all = calls();
  size_t n = 0;
  for (size_t i = first; i < all.size(); ++i) n += all[i].address == address && std::strcmp(all[i].name, name) == 0;
  return n;
}

std::vector<std::string> FakeDriver::entries() const {
  std::vector<std::string> out;
  for (size_t i = 0; const char* name = entry_(i); ++i) out.emplace_back(name);
  return out;
}

}  // namespace pump::testing
