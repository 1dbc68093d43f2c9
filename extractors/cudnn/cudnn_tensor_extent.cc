#include "extractors/cudnn/cudnn_tensor_extent.h"

namespace pump::extractors {

uint32_t cudnn_data_type_bits(int data_type) {
  switch (data_type) {
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_UINT32: return 32;
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
    case CUDNN_DATA_COMPLEX_FP32: return 64;
    case CUDNN_DATA_COMPLEX_FP64: return 128;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 16;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
    case CUDNN_DATA_FP8_E8M0: return 8;
    case CUDNN_DATA_FP4_E2M1:
    case CUDNN_DATA_INT4:
    case CUDNN_DATA_UINT4: return 4;
    default: return 0;  // vectorized INT8x4/UINT8x4/INT8x32, FAST_FLOAT_FOR_FP8
  }
}

uint64_t strided_tensor_bytes(int rank, const int64_t* dims, const int64_t* strides, uint32_t elem_bits) {
  if (rank <= 0 || elem_bits == 0) return 0;
  uint64_t last = 0;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] <= 0 || strides[i] < 0) return 0;
    last += static_cast<uint64_t>(dims[i] - 1) * static_cast<uint64_t>(strides[i]);
  }
  return ((last + 1) * elem_bits + 7) / 8;
}

uint64_t CudnnDescriptorSizes::tensor_bytes(cudnnTensorDescriptor_t desc) {
  auto get = get_tensor_.get(host_);
  if (get == nullptr || desc == nullptr) return 0;
  cudnnDataType_t type{};
  int rank = 0, dims[CUDNN_DIM_MAX] = {}, strides[CUDNN_DIM_MAX] = {};
  if (get(desc, CUDNN_DIM_MAX, &type, &rank, dims, strides) != CUDNN_STATUS_SUCCESS) return 0;
  if (rank <= 0 || rank > CUDNN_DIM_MAX) return 0;
  const uint32_t bits = cudnn_data_type_bits(type);
  if (bits == 0) {
    // Vectorized layouts: cuDNN knows how they pack.
    auto size = tensor_size_.get(host_);
    size_t bytes = 0;
    return size != nullptr && size(desc, &bytes) == CUDNN_STATUS_SUCCESS ? bytes : 0;
  }
  int64_t d[CUDNN_DIM_MAX], s[CUDNN_DIM_MAX];
  for (int i = 0; i < rank; ++i) {
    d[i] = dims[i];
    s[i] = strides[i];
  }
  return strided_tensor_bytes(rank, d, s, bits);
}

int CudnnDescriptorSizes::tensor_data_type(cudnnTensorDescriptor_t desc) {
  auto get = get_tensor_.get(host_);
  if (get == nullptr || desc == nullptr) return -1;
  cudnnDataType_t type{};
  int rank = 0, dims[CUDNN_DIM_MAX] = {}, strides[CUDNN_DIM_MAX] = {};
  if (get(desc, CUDNN_DIM_MAX, &type, &rank, dims, strides) != CUDNN_STATUS_SUCCESS) return -1;
  return type;
}

int64_t CudnnDescriptorSizes::tensor_dim(cudnnTensorDescriptor_t desc, int index) {
  auto get = get_tensor_.get(host_);
  if (get == nullptr || desc == nullptr) return -1;
  cudnnDataType_t type{};
  int rank = 0, dims[CUDNN_DIM_MAX] = {}, strides[CUDNN_DIM_MAX] = {};
  if (get(desc, CUDNN_DIM_MAX, &type, &rank, dims, strides) != CUDNN_STATUS_SUCCESS) return -1;
  return index >= 0 && index < rank ? dims[index] : -1;
}

int CudnnDescriptorSizes::filter_data_type(cudnnFilterDescriptor_t desc) {
  auto get = get_filter_.get(host_);
  if (get == nullptr || desc == nullptr) return -1;
  cudnnDataType_t type{};
  cudnnTensorFormat_t format{};
  int rank = 0, dims[CUDNN_DIM_MAX] = {};
  if (get(desc, CUDNN_DIM_MAX, &type, &format, &rank, dims) != CUDNN_STATUS_SUCCESS) return -1;
  return type;
}

uint64_t CudnnDescriptorSizes::filter_bytes(cudnnFilterDescriptor_t desc) {
  auto get = get_filter_.get(host_);
  if (get == nullptr || desc == nullptr) return 0;
  cudnnDataType_t type{};
  cudnnTensorFormat_t format{};
  int rank = 0, dims[CUDNN_DIM_MAX] = {};
  if (get(desc, CUDNN_DIM_MAX, &type, &format, &rank, dims) != CUDNN_STATUS_SUCCESS) return 0;
  if (rank <= 0 || rank > CUDNN_DIM_MAX) return 0;
  const uint32_t bits = cudnn_data_type_bits(type);
  if (bits == 0 || format == CUDNN_TENSOR_NCHW_VECT_C) {
    auto size = filter_size_.get(host_);
    size_t bytes = 0;
    return size != nullptr && size(desc, &bytes) == CUDNN_STATUS_SUCCESS ? bytes : 0;
  }
  // Filters are always fully packed (NCHW or NHWC): the span is the element count.
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] <= 0) return 0;
    count *= static_cast<uint64_t>(dims[i]);
  }
  return (count * bits + 7) / 8;
}

bool CudnnDescriptorSizes::rnn_data(cudnnRNNDataDescriptor_t desc, RnnData* out) {
  auto get = get_rnn_data_.get(host_);
  if (get == nullptr || desc == nullptr) return false;
  cudnnDataType_t type{};
  cudnnRNNDataLayout_t layout{};
  int max_seq = 0, batch = 0, vector = 0;
  alignas(8) unsigned char padding_fill[16];  // a float or double, by data type
  if (get(desc, &type, &layout, &max_seq, &batch, &vector, 0, nullptr, padding_fill) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  const uint32_t bits = cudnn_data_type_bits(type);
  if (bits == 0 || max_seq <= 0 || batch <= 0 || vector <= 0) return false;
  out->batch = batch;
  out->data_type = type;
  uint64_t rows = static_cast<uint64_t>(max_seq) * static_cast<uint64_t>(batch);
  if (layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED) {
    // Packed: only the real time steps are stored, sum(seqLengthArray) rows.
    constexpr int kMaxBatch = 1024;
    int lengths[kMaxBatch];
    if (batch <= kMaxBatch &&
        get(desc, &type, &layout, &max_seq, &batch, &vector, batch, lengths, padding_fill) == CUDNN_STATUS_SUCCESS) {
      rows = 0;
      for (int i = 0; i < batch; ++i) rows += lengths[i] > 0 ? static_cast<uint64_t>(lengths[i]) : 0;
    }
  }
  out->bytes = (rows * static_cast<uint64_t>(vector) * bits + 7) / 8;
  return true;
}

}  // namespace pump::extractors
