// The CUDA, cuDNN and cuBLAS headers every hook is compiled against, and NCCL's API as
// libpump declares it (nccl_api.h: NCCL's headers are not needed to build). Headers
// only: libpump.so links none of these libraries; it finds the real functions at run time.
#pragma once

// Declares every exported name as the libraries define it: the unversioned legacy
// names, the _v2 names and the _ptsz per-thread-stream variants, instead of the
// macros that map one to the other for applications.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "core/interpose/nccl_api.h"

// nvcc 13 lowers kernel<<<...>>> to these; CUDA declares them only for nvcc
// (crt/device_functions.h under __CUDACC__). Same signature as there.
extern "C" {
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                         size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                              size_t sharedMem, cudaStream_t stream);
}
