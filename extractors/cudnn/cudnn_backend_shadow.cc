#include "extractors/cudnn/cudnn_backend_shadow.h"

#include <algorithm>
#include <cstring>

#include "extractors/cudnn/cudnn_tensor_extent.h"

namespace pump::extractors {
namespace {

constexpr uint8_t R = PUMP_ACCESS_READ;
constexpr uint8_t W = PUMP_ACCESS_WRITE;
constexpr uint8_t kAct = PUMP_ROLE_ACTIVATION;
constexpr uint8_t kWeight = PUMP_ROLE_WEIGHT;

struct TensorAttribute {
  cudnnBackendAttributeName_t name;
  uint8_t access;
  uint8_t role;
};

// Every single-tensor attribute of the operation descriptors we know. Attribute
// numbers are unique across operation types, so an attribute the operation does
// not have simply fails to read. Weights: filters, norm scale/bias and running
// statistics, and their gradients (long-lived, like the parameters themselves).
constexpr TensorAttribute kTensorAttributes[] = {
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, R, kAct},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, R, kWeight},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, W, kAct},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, R, kWeight},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, W, kAct},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, R, kAct},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, W, kWeight},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, R, kAct},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, R, kAct},
    {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_GENSTATS_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_Y_SUM_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_Y_SQ_SUM_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_SCALE_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_BIAS_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_PREV_RUNNING_MEAN_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_PREV_RUNNING_VAR_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_UPDATED_RUNNING_MEAN_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_UPDATED_RUNNING_VAR_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_SAVED_MEAN_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_SAVED_INV_STD_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_EQ_SCALE_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_EQ_BIAS_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_ACCUM_COUNT_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_EPSILON_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_FINALIZE_EXP_AVERATE_FACTOR_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_MATMUL_ADESC, R, kAct},
    {CUDNN_ATTR_OPERATION_MATMUL_BDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_MATMUL_CDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS, W, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_FWD_IDXDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DXDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DYDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_BWD_IDXDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_BWD_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_RESAMPLE_BWD_YDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_CONCAT_OUTPUT_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, W, kAct},
    {CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, R, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_BWD_EPSILON_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, W, kWeight},
    {CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_RESHAPE_XDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_RNG_YDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, W, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_SCALEDESC, R, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC, W, kAct},
    {CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, R, kAct},
};

const TensorAttribute* tensor_attribute(int name) {
  for (const auto& a : kTensorAttributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

void merge(TensorSummary& into, const PlanTensor& t) {
  for (auto& e : into) {
    if (e.uid == t.uid) {  // shared between operations: union of accesses
      e.access |= t.access;
      e.bytes = std::max(e.bytes, t.bytes);
      if (t.role == kWeight) e.role = kWeight;
      return;
    }
  }
  into.push_back(t);
}

}  // namespace

BackendShadow::Node& BackendShadow::node(uintptr_t key) {
  if (nodes_.size() >= kMaxNodes && nodes_.find(key) == nodes_.end()) nodes_.clear();
  return nodes_[key];
}

std::shared_ptr<const TensorSummary> BackendShadow::summarize(const Node& n) const {
  auto summary = std::make_shared<TensorSummary>();
  for (const auto& [name, child_key] : n.children) {
    auto it = nodes_.find(child_key);
    if (it == nodes_.end()) continue;
    const Node& child = it->second;
    const TensorAttribute* attr = tensor_attribute(name);
    if (attr != nullptr && child.has_uid) {
      if (child.is_virtual) continue;  // never in a variant pack
      uint64_t bytes = 0;
      if (child.rank > 0 && child.rank == child.stride_rank) {
        bytes = strided_tensor_bytes(child.rank, child.dims, child.strides, cudnn_data_type_bits(child.data_type));
      }
      merge(*summary, PlanTensor{child.uid, bytes, attr->access, attr->role});
    } else if (child.summary != nullptr) {
      for (const auto& t : *child.summary) merge(*summary, t);
    }
  }
  std::sort(summary->begin(), summary->end(), [](const PlanTensor& a, const PlanTensor& b) { return a.uid < b.uid; });
  return summary;
}

void BackendShadow::on_set_attribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                                     cudnnBackendAttributeType_t type, int64_t count, const void* elements) {
  if (desc == nullptr || elements == nullptr || count <= 0) return;
  const auto* bytes = static_cast<const unsigned char*>(elements);
  std::lock_guard<std::mutex> lock(mu_);
  Node& n = node(reinterpret_cast<uintptr_t>(desc));
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    // Setting an attribute again replaces it.
    std::erase_if(n.children, [&](const auto& c) { return c.first == name; });
    for (int64_t i = 0; i < count && i < 256; ++i) {
      cudnnBackendDescriptor_t child;
      std::memcpy(&child, bytes + i * sizeof child, sizeof child);
      n.children.emplace_back(name, reinterpret_cast<uintptr_t>(child));
    }
    return;
  }
  switch (name) {
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
      std::memcpy(&n.uid, bytes, sizeof n.uid);
      n.has_uid = true;
      break;
    case CUDNN_ATTR_TENSOR_DATA_TYPE: {
      cudnnDataType_t t;
      std::memcpy(&t, bytes, sizeof t);
      n.data_type = t;
      break;
    }
    case CUDNN_ATTR_TENSOR_DIMENSIONS:
      n.rank = static_cast<int>(std::min<int64_t>(count, kMaxRank));
      std::memcpy(n.dims, bytes, n.rank * sizeof(int64_t));
      break;
    case CUDNN_ATTR_TENSOR_STRIDES:
      n.stride_rank = static_cast<int>(std::min<int64_t>(count, kMaxRank));
      std::memcpy(n.strides, bytes, n.stride_rank * sizeof(int64_t));
      break;
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL: {
      bool v;
      std::memcpy(&v, bytes, sizeof v);
      n.is_virtual = v;
      break;
    }
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
      n.pack_uids.assign(reinterpret_cast<const int64_t*>(elements),
                         reinterpret_cast<const int64_t*>(elements) + std::min<int64_t>(count, kMaxPackEntries));
      break;
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
      n.pack_pointers.resize(static_cast<size_t>(std::min<int64_t>(count, kMaxPackEntries)));
      std::memcpy(n.pack_pointers.data(), bytes, n.pack_pointers.size() * sizeof(uintptr_t));
      break;
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE: std::memcpy(&n.workspace, bytes, sizeof n.workspace); break;
    default: break;
  }
}

void BackendShadow::on_get_attribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                                     cudnnBackendAttributeType_t type, int64_t requested, const void* elements) {
  // Engine configs from heuristics are filled by cuDNN, never set by the
  // application: link each to the heuristic's operation graph.
  if (name != CUDNN_ATTR_ENGINEHEUR_RESULTS || type != CUDNN_TYPE_BACKEND_DESCRIPTOR || elements == nullptr ||
      requested <= 0) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto heur = nodes_.find(reinterpret_cast<uintptr_t>(desc));
  if (heur == nodes_.end()) return;
  std::shared_ptr<const TensorSummary> graph_summary;
  for (const auto& [attr, child] : heur->second.children) {
    auto it = nodes_.find(child);
    if (attr == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH && it != nodes_.end()) graph_summary = it->second.summary;
  }
  if (graph_summary == nullptr) return;
  const auto* bytes = static_cast<const unsigned char*>(elements);
  for (int64_t i = 0; i < requested && i < 1024; ++i) {
    cudnnBackendDescriptor_t config;
    std::memcpy(&config, bytes + i * sizeof config, sizeof config);
    if (config != nullptr) node(reinterpret_cast<uintptr_t>(config)).summary = graph_summary;
  }
}

void BackendShadow::on_finalize(cudnnBackendDescriptor_t desc) {
  if (desc == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(reinterpret_cast<uintptr_t>(desc));
  if (it == nodes_.end() || it->second.children.empty()) return;
  it->second.summary = summarize(it->second);
}

void BackendShadow::on_destroy(cudnnBackendDescriptor_t desc) {
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.erase(reinterpret_cast<uintptr_t>(desc));
}

size_t BackendShadow::tracked_descriptors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

pump_status_v1_t BackendShadow::on_execute(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                                           ExtentReporter& out) {
  int64_t uids[kMaxPackEntries];
  uintptr_t pointers[kMaxPackEntries];
  size_t count = 0;
  uintptr_t workspace = 0;
  std::shared_ptr<const TensorSummary> layout;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto p = nodes_.find(reinterpret_cast<uintptr_t>(pack));
    if (p == nodes_.end()) return PUMP_ERR_UNSUPPORTED;  // a pack built before we were loaded
    count = std::min(p->second.pack_uids.size(), p->second.pack_pointers.size());
    std::copy_n(p->second.pack_uids.begin(), count, uids);
    std::copy_n(p->second.pack_pointers.begin(), count, pointers);
    workspace = p->second.workspace;
    auto l = nodes_.find(reinterpret_cast<uintptr_t>(plan));
    if (l != nodes_.end()) layout = l->second.summary;
  }
  for (size_t i = 0; i < count; ++i) {
    const PlanTensor* t = nullptr;
    if (layout != nullptr) {
      auto it = std::lower_bound(layout->begin(), layout->end(), uids[i],
                                 [](const PlanTensor& e, int64_t u) { return e.uid < u; });
      if (it != layout->end() && it->uid == uids[i]) t = &*it;
    }
    const void* ptr = reinterpret_cast<const void*>(pointers[i]);
    if (t != nullptr && t->bytes != 0) {
      out.exact(ptr, t->bytes, static_cast<pump_access_v1_t>(t->access), static_cast<pump_role_v1_t>(t->role));
    } else {
      out.whole_block(ptr, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
    }
  }
  if (workspace != 0) {
    // The plan's workspace size is readable (cudnn-frontend relies on it).
    int64_t bytes = -1, n = 0;
    auto get = get_attribute_.get(host_);
    if (get == nullptr || plan == nullptr ||
        get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &bytes) != CUDNN_STATUS_SUCCESS) {
      bytes = -1;
    }
    const void* ws = reinterpret_cast<const void*>(workspace);
    if (bytes > 0) {
      out.exact(ws, static_cast<uint64_t>(bytes), PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
    } else if (bytes < 0) {
      out.whole_block(ws, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
    }
  }
  return PUMP_OK;
}

}  // namespace pump::extractors
