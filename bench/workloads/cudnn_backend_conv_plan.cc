#include "bench/workloads/cudnn_backend_conv_plan.h"

#include <cstdio>
#include <utility>

#include "bench/workloads/gpu_program.h"

namespace pump::bench {

namespace {

// Tensor uids of every graph: the activation side the operation reads or
// writes first (x / dx), the filter (w / dw), the other activation (y / dy).
constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';
// cudaMalloc returns 256-byte aligned pointers; 16 is what engines ask for.
constexpr int64_t kByteAlignment = 16;

#define PUMP_SET_ATTRIBUTE(desc, name, type, count, values)                                              \
  ::pump::bench::check_cudnn_status(cudnnBackendSetAttribute((desc), (name), (type), (count), (values)), \
                                    "cudnnBackendSetAttribute(" #name ")", __LINE__)

void finalize(const BackendDescriptor& desc, const char* what, int line) {
  const std::string call = std::string("cudnnBackendFinalize(") + what + ")";
  check_cudnn_status(cudnnBackendFinalize(desc.get()), call.c_str(), line);
}

BackendDescriptor make_tensor(int64_t uid, const int64_t (&dims)[4], const char* what) {
  // Packed NCHW: the layout PyTorch's contiguous fp32 tensors have.
  const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  PUMP_SET_ATTRIBUTE(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  PUMP_SET_ATTRIBUTE(t.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  PUMP_SET_ATTRIBUTE(t.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  PUMP_SET_ATTRIBUTE(t.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  PUMP_SET_ATTRIBUTE(t.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kByteAlignment);
  finalize(t, what, __LINE__);
  return t;
}

BackendDescriptor make_convolution(int64_t pad) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;  // what frameworks call convolution
  const int64_t spatial_dims = 2;
  const int64_t ones[2] = {1, 1}, padding[2] = {pad, pad};
  BackendDescriptor c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  PUMP_SET_ATTRIBUTE(c.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  PUMP_SET_ATTRIBUTE(c.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  PUMP_SET_ATTRIBUTE(c.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims);
  PUMP_SET_ATTRIBUTE(c.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones);
  PUMP_SET_ATTRIBUTE(c.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones);
  PUMP_SET_ATTRIBUTE(c.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
  PUMP_SET_ATTRIBUTE(c.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
  finalize(c, "convolution", __LINE__);
  return c;
}

BackendDescriptor make_operation(ConvDirection direction, const BackendDescriptor& x, const BackendDescriptor& w,
                                 const BackendDescriptor& y, const BackendDescriptor& conv) {
  const float alpha = 1.0f, beta = 0.0f;  // fp32 compute takes float scalars
  cudnnBackendDescriptor_t xd = x.get(), wd = w.get(), yd = y.get(), cd = conv.get();
  constexpr cudnnBackendAttributeType_t kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  switch (direction) {
    case ConvDirection::kForward: {
      BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, kDesc, 1, &xd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, kDesc, 1, &wd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, kDesc, 1, &yd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, kDesc, 1, &cd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      finalize(op, "forward convolution operation", __LINE__);
      return op;
    }
    case ConvDirection::kBackwardData: {
      BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, kDesc, 1, &xd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, kDesc, 1, &wd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, kDesc, 1, &yd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, kDesc, 1, &cd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      finalize(op, "backward data convolution operation", __LINE__);
      return op;
    }
    case ConvDirection::kBackwardFilter: {
      BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, kDesc, 1, &xd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, kDesc, 1, &wd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, kDesc, 1, &yd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, kDesc, 1, &cd);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      PUMP_SET_ATTRIBUTE(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      finalize(op, "backward filter convolution operation", __LINE__);
      return op;
    }
  }
  die("make_operation", "unknown convolution direction", __LINE__);
}

// Why an engine config must not be used ("" when it may), and its engine's
// global index. Notes that cannot be read count as a refusal: determinism
// could not be shown.
std::string engine_refusal(cudnnBackendDescriptor_t config, int64_t* global_index) {
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t engine_desc = engine.get();
  int64_t count = 0;
  cudnnStatus_t st = cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                              &count, &engine_desc);
  if (st != CUDNN_STATUS_SUCCESS || count != 1) return std::string("engine unreadable: ") + cudnnGetErrorString(st);
  st = cudnnBackendGetAttribute(engine_desc, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, global_index);
  if (st != CUDNN_STATUS_SUCCESS) return std::string("engine index unreadable: ") + cudnnGetErrorString(st);

  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  count = 0;
  st = cudnnBackendGetAttribute(engine_desc, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes);
  if (st != CUDNN_STATUS_SUCCESS) return std::string("numerical notes unreadable: ") + cudnnGetErrorString(st);
  std::string refusal;
  for (int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i) {
    const char* why = nullptr;
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: why = "nondeterministic"; break;
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: why = "tensor cores (TF32 on fp32 data)"; break;
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: why = "down-converts inputs"; break;
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: why = "reduced-precision reduction"; break;
      default: break;  // FFT, Winograd, strict NaN propagation: deterministic fp32
    }
    if (why != nullptr) refusal += (refusal.empty() ? "" : ", ") + std::string(why);
  }
  return refusal;
}

}  // namespace

void check_cudnn_status(cudnnStatus_t status, const char* what, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof last);
  std::string detail = std::string(cudnnGetErrorString(status)) + " (status " + std::to_string(status) + ")";
  if (last[0] != '\0') detail += "; cuDNN says: " + std::string(last);
  die(what, detail.c_str(), line);
}

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  PUMP_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &desc_));
}

BackendDescriptor::~BackendDescriptor() {
  if (desc_ != nullptr) PUMP_CUDNN_CHECK(cudnnBackendDestroyDescriptor(desc_));
}

BackendDescriptor::BackendDescriptor(BackendDescriptor&& other) noexcept : desc_(std::exchange(other.desc_, nullptr)) {}

BackendDescriptor& BackendDescriptor::operator=(BackendDescriptor&& other) noexcept {
  if (this != &other) {
    if (desc_ != nullptr) PUMP_CUDNN_CHECK(cudnnBackendDestroyDescriptor(desc_));
    desc_ = std::exchange(other.desc_, nullptr);
  }
  return *this;
}

const char* conv_direction_name(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::kForward: return "forward";
    case ConvDirection::kBackwardData: return "backward data";
    case ConvDirection::kBackwardFilter: return "backward filter";
  }
  return "?";
}

ConvBackendPlan::ConvBackendPlan(cudnnHandle_t handle, ConvDirection direction, const ConvShape& shape,
                                 uint64_t max_workspace_bytes)
    : handle_(handle), direction_(direction) {
  const int64_t activation_dims[4] = {shape.batch, shape.channels, shape.height, shape.width};
  const int64_t filter_dims[4] = {shape.channels, shape.channels, shape.kernel, shape.kernel};
  BackendDescriptor x = make_tensor(kUidX, activation_dims, "tensor x");
  BackendDescriptor w = make_tensor(kUidW, filter_dims, "tensor w");
  BackendDescriptor y = make_tensor(kUidY, activation_dims, "tensor y");
  BackendDescriptor conv = make_convolution(shape.kernel / 2);
  BackendDescriptor op = make_operation(direction, x, w, y, conv);

  BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cudnnBackendDescriptor_t op_desc = op.get();
  PUMP_SET_ATTRIBUTE(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op_desc);
  // Deprecated in 9.x but still honoured, and what cudnn-frontend (so PyTorch) sets.
  PUMP_SET_ATTRIBUTE(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
  finalize(graph, "operation graph", __LINE__);
  const cudnnBackendDescriptor_t graph_desc = graph.get();
  graph_parts_.push_back(std::move(x));
  graph_parts_.push_back(std::move(w));
  graph_parts_.push_back(std::move(y));
  graph_parts_.push_back(std::move(conv));
  graph_parts_.push_back(std::move(op));
  graph_parts_.push_back(std::move(graph));

  std::string refusals;
  const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {{CUDNN_HEUR_MODE_A, "A"},
                                                                  {CUDNN_HEUR_MODE_FALLBACK, "fallback"}};
  for (const auto& [mode, mode_name] : modes) {
    BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    PUMP_SET_ATTRIBUTE(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                       &graph_desc);
    PUMP_SET_ATTRIBUTE(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    finalize(heuristics, "engine heuristics", __LINE__);

    int64_t available = 0;
    PUMP_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr));
    if (available <= 0) {
      refusals += std::string("  mode ") + mode_name + ": no engine config\n";
      continue;
    }
    // cuDNN fills configs the caller created.
    std::vector<BackendDescriptor> configs;
    std::vector<cudnnBackendDescriptor_t> config_descs;
    for (int64_t i = 0; i < available; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      config_descs.push_back(configs.back().get());
    }
    int64_t returned = 0;
    PUMP_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned,
                                              config_descs.data()));
    // The count query promises configs before checking them on this device;
    // the fetch returns only the supported ones.
    if (returned <= 0)
      refusals += std::string("  mode ") + mode_name + ": none of its " + std::to_string(available) +
                  " engine configs supports this device\n";

    for (int64_t i = 0; i < returned && i < available; ++i) {
      int64_t engine = -1;
      auto refuse = [&](const std::string& why) {
        refusals += std::string("  mode ") + mode_name + " config " + std::to_string(i) + " (engine " +
                    std::to_string(engine) + "): " + why + "\n";
      };
      const std::string refusal = engine_refusal(config_descs[static_cast<size_t>(i)], &engine);
      if (!refusal.empty()) {
        refuse(refusal);
        continue;
      }
      BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      PUMP_SET_ATTRIBUTE(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
      PUMP_SET_ATTRIBUTE(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                         &config_descs[static_cast<size_t>(i)]);
      // An engine the heuristics proposed may still refuse the graph here.
      const cudnnStatus_t st = cudnnBackendFinalize(plan.get());
      if (st != CUDNN_STATUS_SUCCESS) {
        refuse(std::string("plan finalize: ") + cudnnGetErrorString(st));
        continue;
      }
      int64_t workspace = 0, count = 0;
      PUMP_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                1, &count, &workspace));
      if (workspace < 0 || static_cast<uint64_t>(workspace) > max_workspace_bytes) {
        refuse("workspace " + std::to_string(workspace) + " bytes > " + std::to_string(max_workspace_bytes));
        continue;
      }
      plan_ = std::move(plan);
      workspace_bytes_ = static_cast<uint64_t>(workspace);
      engine_index_ = engine;
      heuristic_mode_ = mode_name;
      candidates_ = std::move(configs);
      return;
    }
  }
  std::fprintf(stderr, "pump-workload: no usable cuDNN engine for the %s convolution (N=%d C=%d H=%d W=%d k=%d):\n%s",
               conv_direction_name(direction), shape.batch, shape.channels, shape.height, shape.width, shape.kernel,
               refusals.c_str());
  die("ConvBackendPlan", "no usable engine (each candidate and why it was refused is listed above)", __LINE__);
}

void ConvBackendPlan::execute(void* x, void* filter, void* y, void* workspace) const {
  // A fresh pack per call, as cudnn-frontend builds one per execute.
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* pointers[3] = {x, filter, y};
  PUMP_SET_ATTRIBUTE(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  PUMP_SET_ATTRIBUTE(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  PUMP_SET_ATTRIBUTE(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  finalize(pack, "variant pack", __LINE__);
  PUMP_CUDNN_CHECK(cudnnBackendExecute(handle_, plan_.get(), pack.get()));
}

}  // namespace pump::bench
