// PolicyAdapter: a loaded C policy plugin (pump_policy_v1_t) as the engine's C++
// Policy. It owns the pump_policy_host_v1_t table the plugin is given, whose services
// forward to the Engine's policy services, and runs the plugin's init and fini.
#pragma once

#include <memory>

#include "core/engine/policy.h"
#include "pump/policy_v1.h"

namespace pump {

class PolicyAdapter final : public Policy {
 public:
  // `api` must outlive the adapter (PluginHost's copies live as long as the process).
  explicit PolicyAdapter(const pump_policy_v1_t* api);
  ~PolicyAdapter() override;                     // the plugin's fini, if its init succeeded
  PolicyAdapter(const PolicyAdapter&) = delete;  // the plugin holds the table's address
  PolicyAdapter& operator=(const PolicyAdapter&) = delete;

  const char* name() const override { return api_->name; }
  // Runs the plugin's init; on failure logs one error: the engine runs without a policy.
  bool attach(Engine& engine) override;
  void on_kernel(const pump_kernel_v1_t& kernel) override {
    if (initialized_) api_->on_kernel(ctx_, &kernel);
  }
  void on_pressure(const pump_kernel_v1_t& kernel, uint64_t bytes_over) override {
    if (initialized_ && api_->on_pressure) api_->on_pressure(ctx_, &kernel, bytes_over);
  }
  void on_alloc(const pump_block_v1_t& block) override {
    if (initialized_ && api_->on_alloc) api_->on_alloc(ctx_, &block);
  }
  void on_free(const pump_block_v1_t& block) override {
    if (initialized_ && api_->on_free) api_->on_free(ctx_, &block);
  }
  // The plugin's fini, once; the callbacks after it reach nothing.
  void retire() override;

  // The table handed to the plugin's init (for tests: the services as a plugin calls them).
  const pump_policy_host_v1_t* host_table() const { return &host_.table; }

 private:
  // What the table's services recover from the `self` pointer a plugin passes back.
  struct Host {
    pump_policy_host_v1_t table;  // first member: the plugin holds a pointer to it
    Engine* engine = nullptr;
    const char* name = nullptr;
  };
  static const Host& from(const pump_policy_host_v1_t* table);

  const pump_policy_v1_t* api_;
  void* ctx_ = nullptr;
  bool initialized_ = false;
  Host host_;
};

// An adapter for `api`, or null for a null `api` (no policy): what an Engine takes.
std::unique_ptr<Policy> make_policy_adapter(const pump_policy_v1_t* api);

}  // namespace pump
