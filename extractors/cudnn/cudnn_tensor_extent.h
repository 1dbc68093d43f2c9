// Byte extents of cuDNN tensors, filters and RNN data from their descriptors,
// read through the real cuDNN getters (fetched via the host, never linked).
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "extractors/common/extent_reporter.h"

namespace pump::extractors {

// Bits of one element of a cudnnDataType_t; 0 for types that are not storage
// types or are vectorized (INT8x4, INT8x32: sized by cuDNN itself instead).
uint32_t cudnn_data_type_bits(int data_type);

// Bytes spanned from the first element by a tensor with these dims and strides
// (in elements, all non-negative in cuDNN): (sum (dim-1)*stride + 1) * element.
// 0 when a dimension is empty or a value is negative.
uint64_t strided_tensor_bytes(int rank, const int64_t* dims, const int64_t* strides, uint32_t elem_bits);

class CudnnDescriptorSizes {
 public:
  explicit CudnnDescriptorSizes(const pump_extractor_host_v1_t* host) : host_(host) {}

  // False when cuDNN is not loaded (the getters cannot be fetched).
  bool available() { return get_tensor_.get(host_) != nullptr; }

  // 0 when the descriptor cannot be read.
  uint64_t tensor_bytes(cudnnTensorDescriptor_t desc);
  uint64_t filter_bytes(cudnnFilterDescriptor_t desc);
  // Data type of a tensor descriptor, or -1.
  int tensor_data_type(cudnnTensorDescriptor_t desc);
  int filter_data_type(cudnnFilterDescriptor_t desc);
  // Size `index` of a tensor descriptor's dims, or -1.
  int64_t tensor_dim(cudnnTensorDescriptor_t desc, int index);

  struct RnnData {
    uint64_t bytes = 0;  // the padded or packed x/y buffer
    int batch = 0;       // batchSize: devSeqLengths holds this many int32
    int data_type = -1;
  };
  // False when the descriptor cannot be read.
  bool rnn_data(cudnnRNNDataDescriptor_t desc, RnnData* out);

 private:
  const pump_extractor_host_v1_t* host_;
  RealSymbol<decltype(&cudnnGetTensorNdDescriptor)> get_tensor_{"cudnnGetTensorNdDescriptor"};
  RealSymbol<decltype(&cudnnGetTensorSizeInBytes)> tensor_size_{"cudnnGetTensorSizeInBytes"};
  RealSymbol<decltype(&cudnnGetFilterNdDescriptor)> get_filter_{"cudnnGetFilterNdDescriptor"};
  RealSymbol<decltype(&cudnnGetFilterSizeInBytes)> filter_size_{"cudnnGetFilterSizeInBytes"};
  RealSymbol<decltype(&cudnnGetRNNDataDescriptor)> get_rnn_data_{"cudnnGetRNNDataDescriptor"};
};

}  // namespace pump::extractors
