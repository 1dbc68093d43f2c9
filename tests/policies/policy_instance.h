// One initialized policy plugin bound to a FakePolicyHost; fini runs on destruction.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_plugin_loader.h"

class PolicyInstance {
 public:
  PolicyInstance(const std::string& name, FakePolicyHost& host) {
    std::string error;
    api_ = load_policy_plugin(name, &error);
    EXPECT_NE(api_, nullptr) << error;
    if (api_) init_status_ = api_->init(host.table(), &ctx_);
    EXPECT_EQ(init_status_, PUMP_OK);
  }
  ~PolicyInstance() {
    if (api_ && api_->fini && ctx_) api_->fini(ctx_);
  }
  PolicyInstance(const PolicyInstance&) = delete;
  PolicyInstance& operator=(const PolicyInstance&) = delete;

  bool ready() const { return api_ && ctx_ && init_status_ == PUMP_OK; }
  const pump_policy_v1_t& api() const { return *api_; }

  void on_kernel(const pump_kernel_v1_t& kernel) { api_->on_kernel(ctx_, &kernel); }
  void on_pressure(const pump_kernel_v1_t& kernel, uint64_t bytes_needed) {
    if (api_->on_pressure) api_->on_pressure(ctx_, &kernel, bytes_needed);
  }
  void on_alloc(const pump_block_v1_t& block) {
    if (api_->on_alloc) api_->on_alloc(ctx_, &block);
  }
  void* ctx() const { return ctx_; }

 private:
  const pump_policy_v1_t* api_ = nullptr;
  void* ctx_ = nullptr;
  pump_status_v1_t init_status_ = PUMP_ERR_INTERNAL;
};
