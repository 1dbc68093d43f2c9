#include "core/interpose/extractor_registry.h"

#include "core/common/log.h"
#include "core/interpose/real_symbols.h"

namespace pump::interpose {
namespace {
// Blocks the find_block service answered during the extraction running on this thread
// (address, bytes): an extent equal to one of them was derived from the answer.
thread_local bool t_recording = false;
thread_local std::vector<std::pair<uint64_t, uint64_t>> t_found_blocks;
thread_local uint32_t t_lookups = 0;  // find_block calls during the current extraction
}  // namespace

const char* ExtractorRegistry::config(const char* key) { return config_->get_c_str(key); }

bool ExtractorRegistry::find_block(uint64_t address, pump_block_v1_t* out) {
  ++t_lookups;
  if (!find_block_ || !find_block_(address, out)) return false;
  if (t_recording) t_found_blocks.emplace_back(out->address, out->bytes);
  return true;
}

void* ExtractorRegistry::real_symbol(const char* name) { return real_symbol_by_name(name); }

void ExtractorRegistry::tracked_span(uint64_t* lowest, uint64_t* end) {
  if (tracked_span_) return tracked_span_(lowest, end);
  *lowest = 0;
  *end = UINT64_MAX;
}

ExtractorRegistry::ExtractorRegistry(const Config* config, FindBlockFn find_block, TrackedSpanFn tracked_span)
    : config_(config), find_block_(find_block), tracked_span_(tracked_span) {}

// Extractors are never finalized: hooks may run on other threads until the process ends.
ExtractorRegistry::~ExtractorRegistry() = default;

std::vector<std::string> ExtractorRegistry::unhooked_names(const char* const* apis) {
  std::vector<std::string> out;
  for (size_t i = 0; apis && apis[i]; ++i)
    if (!find_hook(apis[i])) out.emplace_back(apis[i]);
  return out;
}

bool ExtractorRegistry::add(const pump_extractor_v1_t* api) {
  if (!api || !api->extract || !api->init) {
    log(LogLevel::kError, "extractor %s lacks init or extract: not used", api && api->name ? api->name : "?");
    return false;
  }
  ExtractorServices& services = *this;  // (a private base: converted here, where it is accessible)
  auto host = std::make_unique<ExtractorHost>(api, services);
  void* ctx = nullptr;
  if (!host->init(&ctx)) return false;
  std::string unhooked;
  for (uint32_t i = 0; api->apis && api->apis[i]; ++i) {
    auto id = find_hook(api->apis[i]);
    if (!id || (kSymbols[*id].kind != HookKind::kExtract && kSymbols[*id].kind != HookKind::kUnsized &&
                kSymbols[*id].kind != HookKind::kCollective)) {
      unhooked += unhooked.empty() ? "" : ", ";
      unhooked += api->apis[i];
      continue;
    }
    Route& r = routes_[*id];
    if (r.api) {
      log(LogLevel::kWarn, "extractor %s also handles %s: keeping extractor %s for it", host->name().c_str(),
          api->apis[i], r.api->name ? r.api->name : "?");
      continue;
    }
    r = Route{api, ctx, i};
  }
  if (!unhooked.empty())
    log(LogLevel::kWarn, "extractor %s lists functions libpump does not intercept (ignored): %s", host->name().c_str(),
        unhooked.c_str());
  hosts_.push_back(std::move(host));
  return true;
}

namespace {
void sink_add(void* opaque, const pump_extent_v1_t* extent) {
  if (extent) static_cast<std::vector<pump_extent_v1_t>*>(opaque)->push_back(*extent);
}
}  // namespace

bool ExtractorRegistry::extract(const Route& route, const void* const* args, uint32_t num_args,
                                std::vector<pump_extent_v1_t>* out, std::vector<uint8_t>* inexact, uint32_t* lookups) {
  if (!route.api) return false;
  pump_call_v1_t call{route.index, num_args, args};
  pump_extent_sink_v1_t sink{out, &sink_add};
  const size_t first = out->size();
  t_found_blocks.clear();
  t_lookups = 0;
  t_recording = inexact != nullptr;
  const bool ok = route.api->extract(route.ctx, &call, &sink) == PUMP_OK;
  t_recording = false;
  if (lookups) *lookups = t_lookups;
  if (inexact) {
    inexact->resize(out->size(), 0);
    for (size_t i = first; i < out->size(); ++i) {
      const pump_extent_v1_t& e = (*out)[i];
      uint8_t flag = e.bytes == PUMP_WHOLE_BLOCK;
      for (const auto& [address, bytes] : t_found_blocks)
        if (e.address == address && e.bytes == bytes) flag = 1;
      (*inexact)[i] = flag;
    }
  }
  return ok;
}

}  // namespace pump::interpose
