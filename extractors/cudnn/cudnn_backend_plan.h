// Extents of cudnnBackendExecute(handle, plan, variantPack): the variant pack gives
// (uid, pointer) pairs and the workspace; the plan's operation graph gives each
// uid's dims, strides and type. The graph walk is expensive, so its result is
// cached per plan pointer and validated on every hit (plans are destroyed and
// their addresses reused, and nothing tells us when).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "extractors/common/extent_reporter.h"

namespace pump::extractors {

struct PlanTensor {
  int64_t uid;
  uint64_t bytes;
  uint8_t access;  // pump_access_v1_t, OR-ed over the operations using it
  uint8_t role;    // pump_role_v1_t
};

// What a plan's operation graph says about its non-virtual tensors, by uid.
struct PlanLayout {
  int64_t workspace_bytes = 0;
  std::vector<PlanTensor> tensors;  // sorted by uid
  std::vector<int64_t> pack_uids;   // sorted uids of the variant pack it was built for
  const PlanTensor* find(int64_t uid) const;
};

class BackendPlanExtractor {
 public:
  explicit BackendPlanExtractor(const pump_extractor_host_v1_t* host) : host_(host) {}

  // PUMP_ERR_UNSUPPORTED when cuDNN's backend functions cannot be fetched or the
  // variant pack cannot be read.
  pump_status_v1_t extract(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack, ExtentReporter& out);

 private:
  using GetAttributeFn = decltype(&cudnnBackendGetAttribute);
  std::shared_ptr<const PlanLayout> layout_for(GetAttributeFn get, cudnnBackendDescriptor_t plan,
                                               int64_t workspace_bytes, const int64_t* uids, int64_t count);
  std::shared_ptr<PlanLayout> walk_plan(GetAttributeFn get, cudnnBackendDescriptor_t plan);

  const pump_extractor_host_v1_t* host_;
  RealSymbol<GetAttributeFn> get_attribute_{"cudnnBackendGetAttribute"};
  RealSymbol<decltype(&cudnnBackendCreateDescriptor)> create_{"cudnnBackendCreateDescriptor"};
  RealSymbol<decltype(&cudnnBackendDestroyDescriptor)> destroy_{"cudnnBackendDestroyDescriptor"};
  BoundedCache<std::shared_ptr<const PlanLayout>> cache_{1024};
};

}  // namespace pump::extractors
