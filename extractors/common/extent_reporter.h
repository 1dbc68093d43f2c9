// Shared by the built-in extractors: reporting extents into the host's sink,
// fetching real library functions through the host, and a bounded cache.
// Header-only and internal: each plugin compiles its own copy (hidden visibility).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "pump/extent_math.h"
#include "pump/pump_sdk.h"

namespace pump::extractors {

// The value of C argument `i` of an intercepted call (args[i] points at it). The
// caller has checked num_args; memcpy because the host's copy may be unaligned.
template <typename T>
T arg(const pump_call_v1_t* call, unsigned i) {
  T value;
  // NOLINTNEXTLINE(bugprone-sizeof-expression): T is often a pointer; its own bytes are the argument.
  std::memcpy(&value, call->args[i], sizeof value);
  return value;
}

// One library function fetched through host->real_symbol. A NULL answer is not
// remembered: the library may be loaded later (PyTorch dlopens cuDNN lazily).
template <typename Fn>
class RealSymbol {
 public:
  explicit RealSymbol(const char* name) : name_(name) {}

  Fn get(const pump_extractor_host_v1_t* host) {
    void* p = cached_.load(std::memory_order_acquire);
    if (p == nullptr && host != nullptr && host->real_symbol != nullptr) {
      p = host->real_symbol(host, name_);
      if (p != nullptr) cached_.store(p, std::memory_order_release);
    }
    return reinterpret_cast<Fn>(p);
  }

 private:
  const char* name_;
  std::atomic<void*> cached_{nullptr};
};

// Reports extents for one call. Null pointers and empty extents are dropped, since
// a library never touches them; a pointer without a computable size falls back to
// its whole containing block, counted as inexact.
class ExtentReporter {
 public:
  ExtentReporter(const pump_extractor_host_v1_t* host, pump_extent_sink_v1_t* sink) : host_(host), sink_(sink) {}

  void exact(const void* ptr, uint64_t bytes, pump_access_v1_t access, pump_role_v1_t role) {
    if (ptr == nullptr || bytes == 0) return;
    emit(reinterpret_cast<uintptr_t>(ptr), bytes, access, role);
  }

  // The whole block containing `ptr` (interior pointers too); nothing if no known block
  // does. A host that resolves pointers (SDK 1.3) does it under its one lock per call;
  // an older one is asked here.
  void whole_block(const void* ptr, pump_access_v1_t access, pump_role_v1_t role) {
    if (ptr == nullptr) return;
    ++inexact_;
    const auto address = reinterpret_cast<uintptr_t>(ptr);
    if (PUMP_HAS_FIELD(host_, pump_extractor_host_v1_t, flags) && (host_->flags & PUMP_HOST_RESOLVES_POINTERS) != 0) {
      emit(address, PUMP_WHOLE_BLOCK, access, role);
      return;
    }
    pump_block_v1_t block{};
    if (host_->find_block == nullptr || host_->find_block(host_, address, &block) != PUMP_OK) return;
    emit(block.address, block.bytes, access, role);
  }

  unsigned reported() const { return reported_; }
  unsigned inexact() const { return inexact_; }

 private:
  void emit(uint64_t address, uint64_t bytes, pump_access_v1_t access, pump_role_v1_t role) {
    pump_extent_v1_t e{address, bytes, static_cast<uint32_t>(access), static_cast<uint32_t>(role)};
    sink_->add(sink_->opaque, &e);
    ++reported_;
  }

  const pump_extractor_host_v1_t* host_;
  pump_extent_sink_v1_t* sink_;
  unsigned reported_ = 0;
  unsigned inexact_ = 0;
};

// Bytes spanned by a column-major matrix (the SDK's arithmetic, shared with the sim).
inline uint64_t column_major_bytes(int64_t rows, int64_t cols, int64_t ld, uint64_t elem) {
  return pump_column_major_bytes(rows, cols, ld, elem);
}

// `count` matrices `stride` elements apart, each `one_bytes` long.
inline uint64_t strided_batch_bytes(uint64_t one_bytes, int64_t stride, int64_t count, uint64_t elem) {
  if (one_bytes == 0 || count <= 0) return 0;
  if (stride < 0) stride = 0;
  return static_cast<uint64_t>(count - 1) * static_cast<uint64_t>(stride) * elem + one_bytes;
}

// Size in bytes of one element of a cudaDataType_t (library_types.h), 0 if unknown.
// Sub-byte types (4-bit, 6-bit) are rounded up to one byte: a slight over-report.
inline uint64_t cuda_data_type_bytes(int type) {
  switch (type) {
    case 0: return 4;   // CUDA_R_32F
    case 1: return 8;   // CUDA_R_64F
    case 2: return 2;   // CUDA_R_16F
    case 3: return 1;   // CUDA_R_8I
    case 4: return 8;   // CUDA_C_32F
    case 5: return 16;  // CUDA_C_64F
    case 6: return 4;   // CUDA_C_16F
    case 7: return 2;   // CUDA_C_8I
    case 8: return 1;   // CUDA_R_8U
    case 9: return 2;   // CUDA_C_8U
    case 10: return 4;  // CUDA_R_32I
    case 11: return 8;  // CUDA_C_32I
    case 12: return 4;  // CUDA_R_32U
    case 13: return 8;  // CUDA_C_32U
    case 14: return 2;  // CUDA_R_16BF
    case 15: return 4;  // CUDA_C_16BF
    case 16:
    case 18: return 1;  // CUDA_R_4I, CUDA_R_4U
    case 17:
    case 19: return 1;  // CUDA_C_4I, CUDA_C_4U
    case 20:
    case 22: return 2;  // CUDA_R_16I, CUDA_R_16U
    case 21:
    case 23: return 4;  // CUDA_C_16I, CUDA_C_16U
    case 24:
    case 26: return 8;  // CUDA_R_64I, CUDA_R_64U
    case 25:
    case 27: return 16;  // CUDA_C_64I, CUDA_C_64U
    case 28:
    case 29:
    case 30:
    case 31:
    case 32:
    case 33: return 1;  // fp8, fp6, fp4
    default: return 0;
  }
}

// A map from a pointer-sized key to a value, shared between application threads.
// Bounded: when full it is cleared, which costs one re-derivation per key. Keys
// are addresses of library objects that may be freed and reused, so callers keep
// something in the value that lets them validate an entry.
template <typename Value>
class BoundedCache {
 public:
  static constexpr size_t kDefaultCapacity = 1024;
  BoundedCache() : BoundedCache(kDefaultCapacity) {}
  explicit BoundedCache(size_t capacity) : capacity_(capacity) {}

  // Copies the value out: entries may be evicted by another thread right after.
  bool find(uintptr_t key, Value* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    *out = it->second;
    return true;
  }

  void put(uintptr_t key, Value value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= capacity_ && map_.find(key) == map_.end()) map_.clear();
    map_.insert_or_assign(key, std::move(value));
  }

  void erase(uintptr_t key) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.erase(key);
  }

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, Value> map_;
};

}  // namespace pump::extractors
