// FakeDriver: the test side of fake_driver.cc. Opens the same library the cuda backend
// loads (PUMP_FAKE_CUDA_DRIVER) and calls its control functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "tests/core/cuda/fake_driver.h"

namespace pump::testing {

class FakeDriver {
 public:
  // Opens the library; ok() says whether every control function was found.
  FakeDriver();
  ~FakeDriver();
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  bool ok() const { return ok_; }
  void* handle() const { return handle_; }  // for control functions not wrapped here
  const char* path() const { return PUMP_FAKE_CUDA_DRIVER; }

  void reset(const FakeDriverConfig& config = {}) const { reset_(&config); }
  // A backend on this driver (nullptr when the backend refuses to start).
  std::unique_ptr<CudaBackend> backend(CudaBackendOptions options = {}) const;

  std::vector<FakeCall> calls() const;
  std::vector<FakeCall> calls_named(const char* name) const;
  // Calls named `name` from the call numbered `first` on (calls().size() taken earlier),
  // on `address` where one is given.
  size_t count_since(size_t first, const char* name) const;
  size_t count_since(size_t first, const char* name, uint64_t address) const;
  void gate(bool closed) const { gate_(closed ? 1 : 0); }
  void set_capturing(uint64_t stream, bool capturing) const { capture_(stream, capturing ? 1 : 0); }
  void fail(const char* call, int successes, CUresult result, int times) const {
    fail_(call, successes, static_cast<int>(result), times);
  }
  uint64_t failures() const { return failures_(); }
  uint64_t count(const char* call) const { return count_(call); }
  // Every entry point the fake offers, by name.
  std::vector<std::string> entries() const;
  void hold(uint64_t stream, bool held) const { hold_(stream, held ? 1 : 0); }
  bool unmapped(uint64_t address, uint64_t bytes) const { return unmapped_(address, bytes) != 0; }

 private:
  void* handle_ = nullptr;
  bool ok_ = false;
  FakeResetFn reset_ = nullptr;
  FakeCallsFn calls_ = nullptr;
  FakeGateFn gate_ = nullptr;
  FakeCaptureFn capture_ = nullptr;
  FakeFailFn fail_ = nullptr;
  FakeFailuresFn failures_ = nullptr;
  FakeCountFn count_ = nullptr;
  FakeEntryFn entry_ = nullptr;
  FakeHoldFn hold_ = nullptr;
  FakeUnmappedFn unmapped_ = nullptr;
};

}  // namespace pump::testing
