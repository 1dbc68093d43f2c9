// Extractor for cuDNN: the legacy compute calls (sizes from tensor, filter and RNN
// data descriptors) and cudnnBackendExecute (sizes from the plan's operation graph).
#include <cudnn.h>

#include <cstdint>
#include <cstring>
#include <new>

#include "extractors/common/extent_reporter.h"
#include "extractors/common/extractor_entry.h"
#include "extractors/cudnn/cudnn_backend_shadow.h"
#include "extractors/cudnn/cudnn_tensor_extent.h"
#include "pump/pump_sdk.h"

namespace pump::extractors {
namespace {

// How an operand's size is found.
enum Kind : uint8_t {
  kTensor,      // desc: a cudnnTensorDescriptor_t argument
  kFilter,      // desc: a cudnnFilterDescriptor_t argument
  kSized,       // desc: a size_t argument giving the bytes
  kRnnData,     // desc: a cudnnRNNDataDescriptor_t argument
  kSeqLengths,  // desc: the RNN data descriptor whose batchSize counts the int32 entries
};

constexpr uint8_t R = PUMP_ACCESS_READ;
constexpr uint8_t W = PUMP_ACCESS_WRITE;
constexpr uint8_t RW = PUMP_ACCESS_READ_WRITE;
constexpr uint8_t kAct = PUMP_ROLE_ACTIVATION;
constexpr uint8_t kWeight = PUMP_ROLE_WEIGHT;
constexpr uint8_t kWork = PUMP_ROLE_WORKSPACE;

struct Operand {
  int8_t ptr;      // argument index of the device pointer
  int8_t desc;     // argument index of its descriptor or size
  uint8_t kind;    // Kind
  uint8_t access;  // pump_access_v1_t; ignored when beta >= 0
  uint8_t role;    // pump_role_v1_t
  int8_t beta;     // argument index of a host blend factor: 0 -> WRITE, else READ_WRITE; -1 if none
};

struct ApiSpec {
  const char* name;
  uint32_t num_args;
  const Operand* operands;
  uint32_t num_operands;
};

// Reserve spaces outlive the call (backward reads what forward wrote): ACTIVATION.
constexpr Operand kConvForward[] = {{3, 2, kTensor, R, kAct, -1},
                                    {5, 4, kFilter, R, kWeight, -1},
                                    {8, 9, kSized, RW, kWork, -1},
                                    {12, 11, kTensor, W, kAct, 10}};
constexpr Operand kConvBackwardData[] = {{3, 2, kFilter, R, kWeight, -1},
                                         {5, 4, kTensor, R, kAct, -1},
                                         {8, 9, kSized, RW, kWork, -1},
                                         {12, 11, kTensor, W, kAct, 10}};
constexpr Operand kConvBackwardFilter[] = {{3, 2, kTensor, R, kAct, -1},
                                           {5, 4, kTensor, R, kAct, -1},
                                           {8, 9, kSized, RW, kWork, -1},
                                           {12, 11, kFilter, W, kWeight, 10}};
constexpr Operand kConvBackwardBias[] = {{3, 2, kTensor, R, kAct, -1}, {6, 5, kTensor, W, kWeight, 4}};
// z may alias y (the documented in-place form): then y is read too.
constexpr Operand kConvBiasActivation[] = {{3, 2, kTensor, R, kAct, -1},      {5, 4, kFilter, R, kWeight, -1},
                                           {8, 9, kSized, RW, kWork, -1},     {12, 11, kTensor, R, kAct, -1},
                                           {14, 13, kTensor, R, kWeight, -1}, {17, 16, kTensor, W, kAct, -1}};
constexpr Operand kBnForwardTraining[] = {{5, 4, kTensor, R, kAct, -1},      {7, 6, kTensor, W, kAct, 3},
                                          {9, 8, kTensor, R, kWeight, -1},   {10, 8, kTensor, R, kWeight, -1},
                                          {12, 8, kTensor, RW, kWeight, -1}, {13, 8, kTensor, RW, kWeight, -1},
                                          {15, 8, kTensor, W, kAct, -1},     {16, 8, kTensor, W, kAct, -1}};
constexpr Operand kBnForwardInference[] = {{5, 4, kTensor, R, kAct, -1},     {7, 6, kTensor, W, kAct, 3},
                                           {9, 8, kTensor, R, kWeight, -1},  {10, 8, kTensor, R, kWeight, -1},
                                           {11, 8, kTensor, R, kWeight, -1}, {12, 8, kTensor, R, kWeight, -1}};
constexpr Operand kBnBackward[] = {{7, 6, kTensor, R, kAct, -1},     {9, 8, kTensor, R, kAct, -1},
                                   {11, 10, kTensor, W, kAct, 3},    {13, 12, kTensor, R, kWeight, -1},
                                   {14, 12, kTensor, W, kWeight, 5}, {15, 12, kTensor, W, kWeight, 5},
                                   {17, 12, kTensor, R, kAct, -1},   {18, 12, kTensor, R, kAct, -1}};
constexpr Operand kBnForwardTrainingEx[] = {
    {6, 5, kTensor, R, kAct, -1},       {8, 7, kTensor, R, kAct, -1},      {10, 9, kTensor, W, kAct, 4},
    {12, 11, kTensor, R, kWeight, -1},  {13, 11, kTensor, R, kWeight, -1}, {15, 11, kTensor, RW, kWeight, -1},
    {16, 11, kTensor, RW, kWeight, -1}, {18, 11, kTensor, W, kAct, -1},    {19, 11, kTensor, W, kAct, -1},
    {21, 22, kSized, RW, kWork, -1},    {23, 24, kSized, W, kAct, -1}};
constexpr Operand kBnBackwardEx[] = {
    {8, 7, kTensor, R, kAct, -1},      {10, 9, kTensor, R, kAct, -1},    {12, 11, kTensor, R, kAct, -1},
    {14, 13, kTensor, W, kAct, -1},    {16, 15, kTensor, W, kAct, 4},    {18, 17, kTensor, R, kWeight, -1},
    {19, 17, kTensor, R, kWeight, -1}, {20, 17, kTensor, W, kWeight, 6}, {21, 17, kTensor, W, kWeight, 6},
    {23, 17, kTensor, R, kAct, -1},    {24, 17, kTensor, R, kAct, -1},   {26, 27, kSized, RW, kWork, -1},
    {28, 29, kSized, R, kAct, -1}};
constexpr Operand kUnaryForward[] = {{4, 3, kTensor, R, kAct, -1}, {7, 6, kTensor, W, kAct, 5}};
constexpr Operand kUnaryBackward[] = {{4, 3, kTensor, R, kAct, -1},
                                      {6, 5, kTensor, R, kAct, -1},
                                      {8, 7, kTensor, R, kAct, -1},
                                      {11, 10, kTensor, W, kAct, 9}};
constexpr Operand kSoftmaxForward[] = {{5, 4, kTensor, R, kAct, -1}, {8, 7, kTensor, W, kAct, 6}};
constexpr Operand kSoftmaxBackward[] = {
    {5, 4, kTensor, R, kAct, -1}, {7, 6, kTensor, R, kAct, -1}, {10, 9, kTensor, W, kAct, 8}};
constexpr Operand kDropoutForward[] = {
    {3, 2, kTensor, R, kAct, -1}, {5, 4, kTensor, W, kAct, -1}, {6, 7, kSized, W, kAct, -1}};
constexpr Operand kDropoutBackward[] = {
    {3, 2, kTensor, R, kAct, -1}, {5, 4, kTensor, W, kAct, -1}, {6, 7, kSized, R, kAct, -1}};
constexpr Operand kAddTensor[] = {{3, 2, kTensor, R, kAct, -1}, {6, 5, kTensor, W, kAct, 4}};
constexpr Operand kRnnForward[] = {{3, 4, kSeqLengths, R, kAct, -1}, {5, 4, kRnnData, R, kAct, -1},
                                   {7, 6, kRnnData, W, kAct, -1},    {9, 8, kTensor, R, kAct, -1},
                                   {10, 8, kTensor, W, kAct, -1},    {12, 11, kTensor, R, kAct, -1},
                                   {13, 11, kTensor, W, kAct, -1},   {15, 14, kSized, R, kWeight, -1},
                                   {17, 16, kSized, RW, kWork, -1},  {19, 18, kSized, RW, kAct, -1}};
constexpr Operand kRnnBackwardData[] = {
    {2, 3, kSeqLengths, R, kAct, -1}, {4, 3, kRnnData, R, kAct, -1},    {5, 3, kRnnData, R, kAct, -1},
    {7, 6, kRnnData, W, kAct, -1},    {9, 8, kTensor, R, kAct, -1},     {10, 8, kTensor, R, kAct, -1},
    {11, 8, kTensor, W, kAct, -1},    {13, 12, kTensor, R, kAct, -1},   {14, 12, kTensor, R, kAct, -1},
    {15, 12, kTensor, W, kAct, -1},   {17, 16, kSized, R, kWeight, -1}, {19, 18, kSized, RW, kWork, -1},
    {21, 20, kSized, RW, kAct, -1}};
// addGrad (CUDNN_WGRAD_MODE_ADD) accumulates into dweightSpace: read and written.
constexpr Operand kRnnBackwardWeights[] = {{3, 4, kSeqLengths, R, kAct, -1},  {5, 4, kRnnData, R, kAct, -1},
                                           {7, 6, kTensor, R, kAct, -1},      {9, 8, kRnnData, R, kAct, -1},
                                           {11, 10, kSized, RW, kWeight, -1}, {13, 12, kSized, RW, kWork, -1},
                                           {15, 14, kSized, R, kAct, -1}};
// CTC: probs and gradients here; labels, lengths and costs in ctc_loss().
constexpr Operand kCtcLossV8[] = {
    {4, 3, kTensor, R, kAct, -1}, {10, 9, kTensor, W, kAct, -1}, {12, 11, kSized, RW, kWork, -1}};
constexpr Operand kCtcLoss[] = {
    {2, 1, kTensor, R, kAct, -1}, {8, 7, kTensor, W, kAct, -1}, {11, 12, kSized, RW, kWork, -1}};

#define PUMP_API(name, args, table) \
  { name, args, table, sizeof(table) / sizeof(table[0]) }

enum Api : uint32_t {
  kApiConvolutionForward,
  kApiConvolutionBackwardData,
  kApiConvolutionBackwardFilter,
  kApiConvolutionBackwardBias,
  kApiConvolutionBiasActivationForward,
  kApiBatchNormalizationForwardTraining,
  kApiBatchNormalizationForwardInference,
  kApiBatchNormalizationBackward,
  kApiBatchNormalizationForwardTrainingEx,
  kApiBatchNormalizationBackwardEx,
  kApiPoolingForward,
  kApiPoolingBackward,
  kApiActivationForward,
  kApiActivationBackward,
  kApiSoftmaxForward,
  kApiSoftmaxBackward,
  kApiDropoutForward,
  kApiDropoutBackward,
  kApiAddTensor,
  kApiRNNForward,
  kApiRNNBackwardData_v8,
  kApiRNNBackwardWeights_v8,
  kApiCTCLoss_v8,
  kApiCTCLoss,
  kApiBackendExecute,
  kApiBackendSetAttribute,
  kApiBackendGetAttribute,
  kApiBackendFinalize,
  kApiBackendDestroyDescriptor,
  kApiCount
};

constexpr ApiSpec kSpecs[kApiCount] = {
    PUMP_API("cudnnConvolutionForward", 13, kConvForward),
    PUMP_API("cudnnConvolutionBackwardData", 13, kConvBackwardData),
    PUMP_API("cudnnConvolutionBackwardFilter", 13, kConvBackwardFilter),
    PUMP_API("cudnnConvolutionBackwardBias", 7, kConvBackwardBias),
    PUMP_API("cudnnConvolutionBiasActivationForward", 18, kConvBiasActivation),
    PUMP_API("cudnnBatchNormalizationForwardTraining", 17, kBnForwardTraining),
    PUMP_API("cudnnBatchNormalizationForwardInference", 14, kBnForwardInference),
    PUMP_API("cudnnBatchNormalizationBackward", 19, kBnBackward),
    PUMP_API("cudnnBatchNormalizationForwardTrainingEx", 25, kBnForwardTrainingEx),
    PUMP_API("cudnnBatchNormalizationBackwardEx", 30, kBnBackwardEx),
    PUMP_API("cudnnPoolingForward", 8, kUnaryForward),
    PUMP_API("cudnnPoolingBackward", 12, kUnaryBackward),
    PUMP_API("cudnnActivationForward", 8, kUnaryForward),
    PUMP_API("cudnnActivationBackward", 12, kUnaryBackward),
    PUMP_API("cudnnSoftmaxForward", 9, kSoftmaxForward),
    PUMP_API("cudnnSoftmaxBackward", 11, kSoftmaxBackward),
    PUMP_API("cudnnDropoutForward", 8, kDropoutForward),
    PUMP_API("cudnnDropoutBackward", 8, kDropoutBackward),
    PUMP_API("cudnnAddTensor", 7, kAddTensor),
    PUMP_API("cudnnRNNForward", 20, kRnnForward),
    PUMP_API("cudnnRNNBackwardData_v8", 22, kRnnBackwardData),
    PUMP_API("cudnnRNNBackwardWeights_v8", 16, kRnnBackwardWeights),
    PUMP_API("cudnnCTCLoss_v8", 13, kCtcLossV8),
    PUMP_API("cudnnCTCLoss", 13, kCtcLoss),
    {"cudnnBackendExecute", 3, nullptr, 0},
    // Touch no device memory: they feed the descriptor shadow (see cudnn_backend_shadow.h).
    {"cudnnBackendSetAttribute", 5, nullptr, 0},
    {"cudnnBackendGetAttribute", 6, nullptr, 0},
    {"cudnnBackendFinalize", 1, nullptr, 0},
    {"cudnnBackendDestroyDescriptor", 1, nullptr, 0},
};

#undef PUMP_API

constexpr auto make_api_names() {
  struct Names {
    const char* names[kApiCount + 1];
  } n{};
  for (uint32_t i = 0; i < kApiCount; ++i) n.names[i] = kSpecs[i].name;
  n.names[kApiCount] = nullptr;
  return n;
}
constexpr auto kApiNames = make_api_names();

struct CudnnState {
  explicit CudnnState(const pump_extractor_host_v1_t* h) : host(h), sizes(h), backend(h) {}
  const pump_extractor_host_v1_t* host;
  CudnnDescriptorSizes sizes;
  BackendShadow backend;
};

// cuDNN blend factors are host scalars: double for double tensors, float otherwise.
bool host_scalar_is_zero(const void* p, int data_type) {
  if (p == nullptr) return true;
  if (data_type == CUDNN_DATA_DOUBLE) {
    double v;
    std::memcpy(&v, p, sizeof v);
    return v == 0.0;
  }
  float v;
  std::memcpy(&v, p, sizeof v);
  return v == 0.0f;
}

void report_operand(CudnnState& s, const pump_call_v1_t* call, const Operand& op, ExtentReporter& out) {
  const void* ptr = arg<const void*>(call, op.ptr);
  if (ptr == nullptr) return;
  uint64_t bytes = 0;
  int data_type = CUDNN_DATA_FLOAT;
  switch (op.kind) {
    case kTensor: {
      auto desc = arg<cudnnTensorDescriptor_t>(call, op.desc);
      bytes = s.sizes.tensor_bytes(desc);
      if (op.beta >= 0) data_type = s.sizes.tensor_data_type(desc);
      break;
    }
    case kFilter: {
      auto desc = arg<cudnnFilterDescriptor_t>(call, op.desc);
      bytes = s.sizes.filter_bytes(desc);
      if (op.beta >= 0) data_type = s.sizes.filter_data_type(desc);
      break;
    }
    case kSized:
      bytes = arg<size_t>(call, op.desc);
      if (bytes == 0) return;  // a zero-sized workspace is not touched
      break;
    case kRnnData:
    case kSeqLengths: {
      CudnnDescriptorSizes::RnnData data;
      if (s.sizes.rnn_data(arg<cudnnRNNDataDescriptor_t>(call, op.desc), &data)) {
        bytes = op.kind == kRnnData ? data.bytes : static_cast<uint64_t>(data.batch) * sizeof(int32_t);
      }
      break;
    }
  }
  auto access = static_cast<pump_access_v1_t>(op.access);
  if (op.beta >= 0) {
    access =
        host_scalar_is_zero(arg<const void*>(call, op.beta), data_type) ? PUMP_ACCESS_WRITE : PUMP_ACCESS_READ_WRITE;
  }
  const auto role = static_cast<pump_role_v1_t>(op.role);
  if (bytes != 0) {
    out.exact(ptr, bytes, access, role);
  } else {
    out.whole_block(ptr, access, role);
  }
}

// labels (device ints, total length only known on the device: whole block),
// labelLengths and inputLengths (N ints), costs (N values of probs' type).
void ctc_loss_v8_extras(CudnnState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  auto probs_desc = arg<cudnnTensorDescriptor_t>(call, 3);
  const int64_t batch = s.sizes.tensor_dim(probs_desc, 1);
  const uint32_t bits = cudnn_data_type_bits(s.sizes.tensor_data_type(probs_desc));
  out.whole_block(arg<const void*>(call, 5), PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION);
  if (batch > 0) {
    out.exact(arg<const void*>(call, 6), static_cast<uint64_t>(batch) * sizeof(int), PUMP_ACCESS_READ,
              PUMP_ROLE_ACTIVATION);
    out.exact(arg<const void*>(call, 7), static_cast<uint64_t>(batch) * sizeof(int), PUMP_ACCESS_READ,
              PUMP_ROLE_ACTIVATION);
  }
  if (batch > 0 && bits != 0) {
    out.exact(arg<const void*>(call, 8), static_cast<uint64_t>(batch) * bits / 8, PUMP_ACCESS_WRITE,
              PUMP_ROLE_ACTIVATION);
  } else {
    out.whole_block(arg<const void*>(call, 8), PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION);
  }
}

void ctc_loss_extras(CudnnState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  auto probs_desc = arg<cudnnTensorDescriptor_t>(call, 1);
  const int64_t batch = s.sizes.tensor_dim(probs_desc, 1);
  const uint32_t bits = cudnn_data_type_bits(s.sizes.tensor_data_type(probs_desc));
  if (batch > 0 && bits != 0) {
    out.exact(arg<const void*>(call, 6), static_cast<uint64_t>(batch) * bits / 8, PUMP_ACCESS_WRITE,
              PUMP_ROLE_ACTIVATION);
  } else {
    out.whole_block(arg<const void*>(call, 6), PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION);
  }
}

pump_status_v1_t dispatch(CudnnState& s, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  ExtentReporter out(s.host, sink);
  switch (call->api) {
    case kApiBackendExecute:
      return s.backend.on_execute(arg<cudnnBackendDescriptor_t>(call, 1), arg<cudnnBackendDescriptor_t>(call, 2), out);
    case kApiBackendSetAttribute:
      s.backend.on_set_attribute(arg<cudnnBackendDescriptor_t>(call, 0), arg<cudnnBackendAttributeName_t>(call, 1),
                                 arg<cudnnBackendAttributeType_t>(call, 2), arg<int64_t>(call, 3),
                                 arg<const void*>(call, 4));
      return PUMP_OK;
    case kApiBackendGetAttribute:
      s.backend.on_get_attribute(arg<cudnnBackendDescriptor_t>(call, 0), arg<cudnnBackendAttributeName_t>(call, 1),
                                 arg<cudnnBackendAttributeType_t>(call, 2), arg<int64_t>(call, 3),
                                 arg<const void*>(call, 5));
      return PUMP_OK;
    case kApiBackendFinalize: s.backend.on_finalize(arg<cudnnBackendDescriptor_t>(call, 0)); return PUMP_OK;
    case kApiBackendDestroyDescriptor: s.backend.on_destroy(arg<cudnnBackendDescriptor_t>(call, 0)); return PUMP_OK;
    default: break;
  }
  if (!s.sizes.available()) return PUMP_ERR_UNSUPPORTED;
  const ApiSpec& spec = kSpecs[call->api];
  for (uint32_t i = 0; i < spec.num_operands; ++i) report_operand(s, call, spec.operands[i], out);
  if (call->api == kApiCTCLoss_v8) ctc_loss_v8_extras(s, call, out);
  if (call->api == kApiCTCLoss) ctc_loss_extras(s, call, out);
  return PUMP_OK;
}

uint32_t min_args(uint32_t api) { return kSpecs[api].num_args; }

}  // namespace
}  // namespace pump::extractors

PUMP_DECLARE_EXTRACTOR = pump::extractors::builtin_extractor<pump::extractors::CudnnState, pump::extractors::dispatch,
                                                             pump::extractors::min_args, pump::extractors::kApiCount>(
    "cudnn", pump::extractors::kApiNames.names);
