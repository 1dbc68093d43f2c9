// ExtractorRegistry: which loaded extractor understands which hook. Built at init
// from each extractor's `apis` names; on the hot path a hook finds its route by
// index (its SymbolId), with no string compares. Each extractor's C host table is an
// ExtractorHost (core/plugin_host); the registry supplies what its services answer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/config.h"
#include "core/interpose/hook_table.h"
#include "core/plugin_host/extractor_adapter.h"
#include "pump/extractor_v1.h"

namespace pump::interpose {

class ExtractorRegistry final : private ExtractorServices {
 public:
  struct Route {
    const pump_extractor_v1_t* api = nullptr;  // null: no extractor for this hook
    void* ctx = nullptr;
    uint32_t index = 0;  // position of the hook's name in api->apis
  };
  // The block containing `address` on any device; false if none.
  using FindBlockFn = bool (*)(uint64_t address, pump_block_v1_t* out);
  // [*lowest, *end) holds every block find_block can answer (null: the whole address space).
  using TrackedSpanFn = void (*)(uint64_t* lowest, uint64_t* end);

  ExtractorRegistry(const Config* config, FindBlockFn find_block, TrackedSpanFn tracked_span = nullptr);
  ~ExtractorRegistry();
  ExtractorRegistry(const ExtractorRegistry&) = delete;
  ExtractorRegistry& operator=(const ExtractorRegistry&) = delete;

  // Initializes `api` and routes each of its names that libpump hooks. Names without a
  // hook get one warning; a hook already routed keeps its first extractor. False (one
  // error) if the extractor fails to initialize: it is then not used.
  bool add(const pump_extractor_v1_t* api);

  const Route& route(SymbolId id) const { return routes_[id]; }

  // Runs the hook's extractor over the call's arguments; extents are appended to `out`.
  // False when the extractor could not understand this call. When `inexact` is given it
  // is resized to out->size(): 1 for each appended extent that names a whole block
  // because a pointer pointed into it, not a computed size: a PUMP_WHOLE_BLOCK extent (a
  // pointer the engine resolves: Engine::before_kernel), or one equal (address and bytes)
  // to a block the find_block service answered during this extraction on this thread.
  // `lookups`, when given, gets how many find_block calls the extractor made.
  static bool extract(const Route& route, const void* const* args, uint32_t num_args,
                      std::vector<pump_extent_v1_t>* out, std::vector<uint8_t>* inexact = nullptr,
                      uint32_t* lookups = nullptr);

  // Names in a NULL-terminated apis list that no hook serves.
  static std::vector<std::string> unhooked_names(const char* const* apis);

 private:
  // The extractors' host services.
  const char* config(const char* key) override;
  bool find_block(uint64_t address, pump_block_v1_t* out) override;
  void* real_symbol(const char* name) override;
  void tracked_span(uint64_t* lowest, uint64_t* end) override;
  bool resolves_pointers() const override { return true; }

  const Config* config_;
  FindBlockFn find_block_;
  TrackedSpanFn tracked_span_;
  std::vector<std::unique_ptr<ExtractorHost>> hosts_;
  Route routes_[kHookCount];
};

}  // namespace pump::interpose
