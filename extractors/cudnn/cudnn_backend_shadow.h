// Extents of cudnnBackendExecute(handle, plan, variantPack), from a shadow of the
// backend descriptors built while the application builds them.
//
// Why a shadow: cuDNN 9.19 answers CUDNN_STATUS_NOT_SUPPORTED to
// cudnnBackendGetAttribute for variant-pack uids and pointers, operation tensors
// and operation-graph ops (measured here), so nothing can be read back at execute
// time. Instead the host forwards cudnnBackendSetAttribute, cudnnBackendFinalize,
// cudnnBackendGetAttribute and cudnnBackendDestroyDescriptor to this extractor
// (they report no extents) and the shadow records:
//   tensors:  uid, dims, strides, data type, virtual flag;
//   links:    every descriptor-valued attribute (op -> tensors, graph -> ops,
//             engine -> graph, config -> engine, plan -> config), and heuristic
//             results (config -> the heuristic's graph) seen on GetAttribute;
//   packs:    uids, data pointers, workspace.
// At Finalize each descriptor snapshots the tensors reachable from it, so a plan
// keeps its layout after the application destroys the graph it was built from.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extractors/common/extent_reporter.h"

namespace pump::extractors {

struct PlanTensor {
  int64_t uid;
  uint64_t bytes;  // 0 when dims/strides/type were incomplete
  uint8_t access;  // pump_access_v1_t, OR-ed over the operations using it
  uint8_t role;    // pump_role_v1_t
};
using TensorSummary = std::vector<PlanTensor>;  // sorted by uid

class BackendShadow {
 public:
  explicit BackendShadow(const pump_extractor_host_v1_t* host) : host_(host) {}

  void on_set_attribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                        cudnnBackendAttributeType_t type, int64_t count, const void* elements);
  // Before the real call: `elements` holds the caller's pre-created descriptors.
  void on_get_attribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                        cudnnBackendAttributeType_t type, int64_t requested, const void* elements);
  void on_finalize(cudnnBackendDescriptor_t desc);
  void on_destroy(cudnnBackendDescriptor_t desc);

  // Reports the pack's pointers with their plan's sizes; a uid the plan does not
  // describe falls back to its containing block (inexact).
  pump_status_v1_t on_execute(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack, ExtentReporter& out);

  size_t tracked_descriptors() const;

 private:
  static constexpr int kMaxRank = 12;
  static constexpr size_t kMaxNodes = size_t{1} << 16;
  static constexpr int kMaxPackEntries = 64;

  struct Node {
    bool has_uid = false, is_virtual = false;
    int64_t uid = 0;
    int data_type = -1;
    int rank = 0, stride_rank = 0;
    int64_t dims[kMaxRank] = {}, strides[kMaxRank] = {};
    std::vector<std::pair<int, uintptr_t>> children;  // (attribute name, descriptor)
    std::shared_ptr<const TensorSummary> summary;     // set at Finalize (or by heuristics)
    std::vector<int64_t> pack_uids;
    std::vector<uintptr_t> pack_pointers;
    uintptr_t workspace = 0;
  };

  Node& node(uintptr_t key);                                            // mu_ held
  std::shared_ptr<const TensorSummary> summarize(const Node& n) const;  // mu_ held

  const pump_extractor_host_v1_t* host_;
  RealSymbol<decltype(&cudnnBackendGetAttribute)> get_attribute_{"cudnnBackendGetAttribute"};
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, Node> nodes_;
};

}  // namespace pump::extractors
