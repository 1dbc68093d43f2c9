// ExtractorHost: the pump_extractor_host_v1_t table handed to one extractor plugin.
// Its services answer from an ExtractorServices the caller supplies (the interposer's
// extractor registry), so the plugin host knows nothing of what is above it.
#pragma once

#include <cstdint>
#include <string>

#include "pump/extractor_v1.h"

namespace pump {

// What an extractor's host table forwards to. Called on any thread running a hook.
class ExtractorServices {
 public:
  virtual const char* config(const char* key) = 0;                      // key is not null
  virtual bool find_block(uint64_t address, pump_block_v1_t* out) = 0;  // out is not null
  virtual void* real_symbol(const char* name) = 0;
  virtual void tracked_span(uint64_t* lowest, uint64_t* end) = 0;  // neither is null
  // Whether extents of PUMP_WHOLE_BLOCK bytes reaching the caller's sink are resolved
  // there (the table then offers PUMP_HOST_RESOLVES_POINTERS).
  virtual bool resolves_pointers() const = 0;

 protected:
  ~ExtractorServices() = default;
};

class ExtractorHost {
 public:
  // `api` and `services` must outlive the host (the plugin may keep the table).
  ExtractorHost(const pump_extractor_v1_t* api, ExtractorServices& services);
  ExtractorHost(const ExtractorHost&) = delete;  // the plugin holds the table's address
  ExtractorHost& operator=(const ExtractorHost&) = delete;

  // Runs the extractor's init with this table. false (one error logged): it is not to be used.
  bool init(void** ctx);
  const std::string& name() const { return name_; }
  const pump_extractor_host_v1_t* table() const { return &table_; }

 private:
  static const ExtractorHost& from(const pump_extractor_host_v1_t* table);

  // First member of a standard-layout class: the services recover the host from the
  // table pointer a plugin passes back.
  pump_extractor_host_v1_t table_;
  const pump_extractor_v1_t* api_;
  ExtractorServices* services_;
  std::string name_;
};

}  // namespace pump
