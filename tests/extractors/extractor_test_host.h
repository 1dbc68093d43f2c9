// Test harness for extractor plugins: loads a built plugin with dlopen, gives it a
// fake host (scripted blocks, scripted or dlsym-resolved real symbols) and builds
// argument packs the way the interposer does: args[i] points at argument i.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pump/pump_sdk.h"

namespace pump::testing {

class FakeExtractorHost {
 public:
  FakeExtractorHost() {
    wrapper_.owner = this;
    auto& table_ = wrapper_.table;
    table_.struct_size = sizeof(pump_extractor_host_v1_t);
    table_.abi_version = PUMP_EXTRACTOR_ABI_V1;
    table_.log = [](const pump_extractor_host_v1_t* t, pump_log_level_v1_t level, const char* message) {
      self(t)->logs_.push_back({level, message ? message : ""});
    };
    table_.get_config = [](const pump_extractor_host_v1_t*, const char*) -> const char* { return nullptr; };
    table_.find_block = &FakeExtractorHost::find_block;
    table_.real_symbol = &FakeExtractorHost::real_symbol;
    table_.tracked_span = &FakeExtractorHost::tracked_span;
    table_.flags = PUMP_HOST_RESOLVES_POINTERS;
  }
  FakeExtractorHost(const FakeExtractorHost&) = delete;
  FakeExtractorHost& operator=(const FakeExtractorHost&) = delete;

  const pump_extractor_host_v1_t* table() const { return &wrapper_.table; }

  void add_block(uint64_t address, uint64_t bytes) {
    pump_block_v1_t b{};
    b.id = blocks_.size() + 1;
    b.address = address;
    b.bytes = bytes;
    blocks_.push_back(b);
  }
  // Names resolve to `fn`; a nullptr fn makes the name unresolvable (library not loaded).
  void script_symbol(const std::string& name, void* fn) { scripted_[name] = fn; }
  // Unscripted names resolve with dlsym(RTLD_DEFAULT) into what the test links.
  void resolve_with_dlsym(bool on) { use_dlsym_ = on; }
  int find_block_calls() const { return find_block_calls_; }
  int tracked_span_calls() const { return tracked_span_calls_; }
  // A host built against SDK 1.1: its table ends before tracked_span.
  void offer_tracked_span(bool on) {
    wrapper_.table.struct_size =
        on ? sizeof(pump_extractor_host_v1_t) : offsetof(pump_extractor_host_v1_t, tracked_span);
  }
  // A host built against SDK 1.2: no flags, so no PUMP_WHOLE_BLOCK extents.
  void offer_pointer_resolution(bool on) {
    wrapper_.table.struct_size = on ? sizeof(pump_extractor_host_v1_t) : offsetof(pump_extractor_host_v1_t, flags);
  }
  // What the real host does with a call's extents: each PUMP_WHOLE_BLOCK extent becomes the
  // block holding its address (dropped if none), and a block named twice so is kept once.
  void resolve(std::vector<pump_extent_v1_t>* extents, size_t first) const {
    std::vector<pump_extent_v1_t> out(extents->begin(), extents->begin() + static_cast<ptrdiff_t>(first));
    for (size_t i = first; i < extents->size(); ++i) {
      pump_extent_v1_t e = (*extents)[i];
      if (e.bytes == PUMP_WHOLE_BLOCK) {
        auto b = std::find_if(blocks_.begin(), blocks_.end(),
                              [&](const pump_block_v1_t& b) { return e.address - b.address < b.bytes; });
        if (b == blocks_.end()) continue;
        e.address = b->address;
        e.bytes = b->bytes;
        ++pointers_resolved_;
        auto same = [&](const pump_extent_v1_t& o) {
          return o.address == e.address && o.bytes == e.bytes && o.access == e.access && o.role == e.role;
        };
        if (std::find_if(out.begin() + static_cast<ptrdiff_t>(first), out.end(), same) != out.end()) continue;
      }
      out.push_back(e);
    }
    *extents = std::move(out);
  }
  int pointers_resolved() const { return pointers_resolved_; }
  // What the plugin logged through the host, in order.
  struct LogLine {
    pump_log_level_v1_t level;
    std::string text;
  };
  const std::vector<LogLine>& logs() const { return logs_; }

 private:
  // The table is the first member of a standard-layout wrapper, so the plugin's
  // table pointer converts back to the wrapper, like the real host embeds it.
  struct Wrapper {
    pump_extractor_host_v1_t table;
    FakeExtractorHost* owner;
  };
  static FakeExtractorHost* self(const pump_extractor_host_v1_t* t) {
    return reinterpret_cast<const Wrapper*>(t)->owner;
  }
  static pump_status_v1_t find_block(const pump_extractor_host_v1_t* t, uint64_t address, pump_block_v1_t* out) {
    auto* h = self(t);
    ++h->find_block_calls_;
    for (const auto& b : h->blocks_) {
      if (address >= b.address && address - b.address < b.bytes) {
        *out = b;
        return PUMP_OK;
      }
    }
    return PUMP_ERR_NOT_FOUND;
  }
  // The span of the scripted blocks, as the real host answers it from its engines.
  static void tracked_span(const pump_extractor_host_v1_t* t, uint64_t* lowest, uint64_t* end) {
    auto* h = self(t);
    ++h->tracked_span_calls_;
    *lowest = UINT64_MAX;
    *end = 0;
    for (const auto& b : h->blocks_) {
      *lowest = std::min(*lowest, b.address);
      *end = std::max(*end, b.address + b.bytes);
    }
  }
  static void* real_symbol(const pump_extractor_host_v1_t* t, const char* name) {
    const auto* h = self(t);
    auto it = h->scripted_.find(name);
    if (it != h->scripted_.end()) return it->second;
    return h->use_dlsym_ ? dlsym(RTLD_DEFAULT, name) : nullptr;
  }

  Wrapper wrapper_{};
  std::vector<pump_block_v1_t> blocks_;
  std::map<std::string, void*> scripted_;
  bool use_dlsym_ = true;
  std::atomic<int> find_block_calls_{0};  // atomic: a plugin may be called from several threads
  std::atomic<int> tracked_span_calls_{0};
  mutable int pointers_resolved_ = 0;
  std::vector<LogLine> logs_;
};

// A loaded extractor plugin with one context on a host.
class LoadedExtractor {
 public:
  LoadedExtractor(const char* name, const FakeExtractorHost& host) : host_(&host) {
    std::string path = std::string(PUMP_PLUGIN_DIR) + "/libpump_extractor_" + name + ".so";
    library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      ADD_FAILURE() << "dlopen " << path << ": " << dlerror();
      return;
    }
    api_ = static_cast<const pump_extractor_v1_t*>(dlsym(library_, PUMP_EXTRACTOR_SYMBOL_V1));
    if (api_ == nullptr || api_->init(host.table(), &ctx_) != PUMP_OK) {
      ADD_FAILURE() << "plugin " << name << " did not load or init";
      api_ = nullptr;
    }
  }
  ~LoadedExtractor() {
    if (api_ != nullptr && api_->fini != nullptr) api_->fini(ctx_);
    // Never dlclose: Boost.DLL's advice, and what the real host does too.
  }
  LoadedExtractor(const LoadedExtractor&) = delete;
  LoadedExtractor& operator=(const LoadedExtractor&) = delete;

  bool ok() const { return api_ != nullptr; }
  const pump_extractor_v1_t* api() const { return api_; }
  void* context() const { return ctx_; }

  uint32_t api_index(const char* function) const {
    for (uint32_t i = 0; api_->apis[i] != nullptr; ++i) {
      if (std::strcmp(api_->apis[i], function) == 0) return i;
    }
    ADD_FAILURE() << function << " is not in the plugin's apis";
    return UINT32_MAX;
  }

  // Calls extract for `function` with the C arguments `args...` (their exact types).
  template <typename... Args>
  pump_status_v1_t extract(const char* function, std::vector<pump_extent_v1_t>* extents, Args... args) {
    std::tuple<Args...> values(args...);
    const void* pointers[sizeof...(Args)];
    std::apply(
        [&](auto&... v) {
          size_t i = 0;
          ((pointers[i++] = &v), ...);
        },
        values);
    pump_call_v1_t call{api_index(function), static_cast<uint32_t>(sizeof...(Args)), pointers};
    pump_extent_sink_v1_t sink{extents, [](void* opaque, const pump_extent_v1_t* e) {
                                 static_cast<std::vector<pump_extent_v1_t>*>(opaque)->push_back(*e);
                               }};
    const size_t first = extents->size();
    const pump_status_v1_t status = api_->extract(ctx_, &call, &sink);
    host_->resolve(extents, first);
    return status;
  }

 private:
  const FakeExtractorHost* host_;
  void* library_ = nullptr;
  const pump_extractor_v1_t* api_ = nullptr;
  void* ctx_ = nullptr;
};

inline const pump_extent_v1_t* extent_at(const std::vector<pump_extent_v1_t>& extents, uint64_t address) {
  for (const auto& e : extents) {
    if (e.address == address) return &e;
  }
  return nullptr;
}

// Device-looking addresses for tests: nothing is dereferenced.
inline void* device_address(uint64_t a) { return reinterpret_cast<void*>(static_cast<uintptr_t>(a)); }

}  // namespace pump::testing
