#include "extractors/cudnn/cudnn_backend_plan.h"

#include <algorithm>
#include <new>

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

// Operation descriptor types, most frequent first (PyTorch: convolutions, then
// pointwise fusions, then matmul and normalization).
constexpr cudnnBackendDescriptorType_t kOperationTypes[] = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR,
};

constexpr int kMaxOps = 64;
constexpr int kMaxPackEntries = 256;

// Backend descriptors this code creates to receive attribute values: cuDNN fills
// a pre-created descriptor of the right type for CUDNN_TYPE_BACKEND_DESCRIPTOR.
class OwnedDescriptors {
 public:
  OwnedDescriptors(decltype(&cudnnBackendCreateDescriptor) create, decltype(&cudnnBackendDestroyDescriptor) destroy)
      : create_(create), destroy_(destroy) {}
  ~OwnedDescriptors() {
    for (auto d : owned_) destroy_(d);
  }
  OwnedDescriptors(const OwnedDescriptors&) = delete;
  OwnedDescriptors& operator=(const OwnedDescriptors&) = delete;

  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    if (create_(type, &d) != CUDNN_STATUS_SUCCESS || d == nullptr) return nullptr;
    owned_.push_back(d);
    return d;
  }
  void drop_last() {
    destroy_(owned_.back());
    owned_.pop_back();
  }

 private:
  decltype(&cudnnBackendCreateDescriptor) create_;
  decltype(&cudnnBackendDestroyDescriptor) destroy_;
  std::vector<cudnnBackendDescriptor_t> owned_;
};

// The descriptor-valued attribute `name` of `from`, read into a new descriptor of `type`.
cudnnBackendDescriptor_t read_child(decltype(&cudnnBackendGetAttribute) get, OwnedDescriptors& owned,
                                    cudnnBackendDescriptor_t from, cudnnBackendAttributeName_t name,
                                    cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t child = owned.make(type);
  if (child == nullptr) return nullptr;
  int64_t n = 0;
  if (get(from, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &child) != CUDNN_STATUS_SUCCESS || n != 1) {
    owned.drop_last();
    return nullptr;
  }
  return child;
}

void add_tensor(decltype(&cudnnBackendGetAttribute) get, cudnnBackendDescriptor_t tensor, const TensorAttribute& attr,
                std::vector<PlanTensor>& tensors) {
  int64_t n = 0, uid = 0, rank = 0;
  bool is_virtual = false;
  cudnnDataType_t type{};
  int64_t dims[CUDNN_DIM_MAX + 4] = {}, strides[CUDNN_DIM_MAX + 4] = {};
  constexpr int64_t kMaxRank = CUDNN_DIM_MAX + 4;
  if (get(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &uid) != CUDNN_STATUS_SUCCESS) return;
  if (get(tensor, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &n, &is_virtual) == CUDNN_STATUS_SUCCESS &&
      is_virtual) {
    return;  // never in a variant pack: cuDNN keeps it on chip or in the workspace
  }
  uint64_t bytes = 0;
  if (get(tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &n, &type) == CUDNN_STATUS_SUCCESS &&
      get(tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, kMaxRank, &rank, dims) == CUDNN_STATUS_SUCCESS &&
      get(tensor, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, kMaxRank, &n, strides) == CUDNN_STATUS_SUCCESS &&
      n == rank && rank <= kMaxRank) {
    bytes = strided_tensor_bytes(static_cast<int>(rank), dims, strides, cudnn_data_type_bits(type));
  }
  for (auto& t : tensors) {
    if (t.uid == uid) {  // shared between operations: union of accesses
      t.access |= attr.access;
      t.bytes = std::max(t.bytes, bytes);
      if (attr.role == kWeight) t.role = kWeight;
      return;
    }
  }
  tensors.push_back(PlanTensor{uid, bytes, attr.access, attr.role});
}

}  // namespace

const PlanTensor* PlanLayout::find(int64_t uid) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), uid,
                             [](const PlanTensor& t, int64_t u) { return t.uid < u; });
  return it != tensors.end() && it->uid == uid ? &*it : nullptr;
}

std::shared_ptr<PlanLayout> BackendPlanExtractor::walk_plan(GetAttributeFn get, cudnnBackendDescriptor_t plan) {
  auto create = create_.get(host_);
  auto destroy = destroy_.get(host_);
  auto layout = std::make_shared<PlanLayout>();
  if (create == nullptr || destroy == nullptr) return layout;
  OwnedDescriptors owned(create, destroy);
  auto config = read_child(get, owned, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  auto engine = config ? read_child(get, owned, config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR)
                       : nullptr;
  auto graph = engine ? read_child(get, owned, engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                   CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)
                      : nullptr;
  if (graph == nullptr) return layout;
  int64_t op_count = 0;
  if (get(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &op_count, nullptr) !=
          CUDNN_STATUS_SUCCESS ||
      op_count <= 0 || op_count > kMaxOps) {
    return layout;
  }
  // The ops array must be read into descriptors of the right operation types,
  // which the graph does not tell: find each element's type by reading a growing
  // prefix of the array, trying one type at a time for the newest element.
  cudnnBackendDescriptor_t ops[kMaxOps] = {};
  int64_t known = 0;
  for (; known < op_count; ++known) {
    bool found = false;
    for (auto type : kOperationTypes) {
      ops[known] = owned.make(type);
      if (ops[known] == nullptr) break;
      int64_t n = 0;
      if (get(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, known + 1, &n, ops) ==
          CUDNN_STATUS_SUCCESS) {
        found = true;
        break;
      }
      owned.drop_last();
    }
    if (!found) break;  // an operation type we do not know: use what we have
  }
  for (int64_t i = 0; i < known; ++i) {
    for (const auto& attr : kTensorAttributes) {
      auto tensor = read_child(get, owned, ops[i], attr.name, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
      if (tensor == nullptr) continue;
      add_tensor(get, tensor, attr, layout->tensors);
    }
  }
  std::sort(layout->tensors.begin(), layout->tensors.end(),
            [](const PlanTensor& a, const PlanTensor& b) { return a.uid < b.uid; });
  return layout;
}

std::shared_ptr<const PlanLayout> BackendPlanExtractor::layout_for(GetAttributeFn get, cudnnBackendDescriptor_t plan,
                                                                   int64_t workspace_bytes, const int64_t* uids,
                                                                   int64_t count) {
  int64_t sorted[kMaxPackEntries];
  std::copy(uids, uids + count, sorted);
  std::sort(sorted, sorted + count);
  const auto key = reinterpret_cast<uintptr_t>(plan);
  std::shared_ptr<const PlanLayout> layout;
  // A reused plan address shows up as a different workspace size or uid set; a
  // plan whose walk failed stays cached too, so it is not walked on every call.
  if (cache_.find(key, &layout) && layout->workspace_bytes == workspace_bytes &&
      std::equal(sorted, sorted + count, layout->pack_uids.begin(), layout->pack_uids.end())) {
    return layout;
  }
  auto fresh = walk_plan(get, plan);
  fresh->workspace_bytes = workspace_bytes;
  fresh->pack_uids.assign(sorted, sorted + count);
  layout = std::move(fresh);
  cache_.put(key, layout);
  return layout;
}

pump_status_v1_t BackendPlanExtractor::extract(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                                               ExtentReporter& out) {
  GetAttributeFn get = get_attribute_.get(host_);
  if (get == nullptr || plan == nullptr || pack == nullptr) return PUMP_ERR_UNSUPPORTED;
  int64_t uids[kMaxPackEntries];
  void* pointers[kMaxPackEntries];
  int64_t uid_count = 0, pointer_count = 0, n = 0;
  if (get(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, kMaxPackEntries, &uid_count, uids) !=
          CUDNN_STATUS_SUCCESS ||
      get(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, kMaxPackEntries, &pointer_count,
          pointers) != CUDNN_STATUS_SUCCESS) {
    return PUMP_ERR_UNSUPPORTED;
  }
  const int64_t count = std::min({uid_count, pointer_count, static_cast<int64_t>(kMaxPackEntries)});
  void* workspace = nullptr;
  if (get(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &n, &workspace) != CUDNN_STATUS_SUCCESS) {
    workspace = nullptr;
  }
  int64_t workspace_bytes = -1;
  if (get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &workspace_bytes) !=
      CUDNN_STATUS_SUCCESS) {
    workspace_bytes = -1;
  }
  auto layout = layout_for(get, plan, workspace_bytes, uids, count);
  for (int64_t i = 0; i < count; ++i) {
    const PlanTensor* t = layout->find(uids[i]);
    if (t != nullptr && t->bytes != 0) {
      out.exact(pointers[i], t->bytes, static_cast<pump_access_v1_t>(t->access), static_cast<pump_role_v1_t>(t->role));
    } else {
      out.whole_block(pointers[i], PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
    }
  }
  if (workspace != nullptr) {
    if (workspace_bytes > 0) {
      out.exact(workspace, static_cast<uint64_t>(workspace_bytes), PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
    } else if (workspace_bytes < 0) {
      out.whole_block(workspace, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
    }
  }
  return PUMP_OK;
}

}  // namespace pump::extractors
