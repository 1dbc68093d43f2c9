// NCCL's stable C API, as much of it as libpump intercepts, declared here so that
// libpump builds without NCCL: the declarations follow nccl.h (NCCL 2.x; the ABI has
// been stable since 2.0, newer calls only added). libpump links no NCCL either: the real
// functions are found at run time in the libnccl.so.2 the application loaded.
//
// Where NCCL's own header was included first (NCCL_H_), its types are used and these
// declarations must agree with it: tests/core/interpose/nccl_api_matches_nccl_h_test.cc compiles
// exactly that, so a wrong signature here fails the build where nccl.h is installed.
#pragma once

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifndef NCCL_H_
extern "C" {
typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
// Passed by value to ncclCommInitRank: its size is part of the ABI.
typedef struct {
  char internal[128];
} ncclUniqueId;
// Passed by pointer only: its layout is NCCL's business.
typedef struct ncclConfig_v22800 ncclConfig_t;
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8,
  pump_ncclResultAnyValue_ = 0x7fffffff
} ncclResult_t;
// libpump compares none of these values but ncclResult_t's (pump::interpose::nccl below
// has those it needs). Each enum holds any int, as in C: a value newer than this header
// (a data type NCCL adds) must pass through a hook as it came, not be out of range.
typedef enum { ncclNumOps = 5, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;
typedef enum { ncclNumTypes = 12, pump_ncclDataTypeAnyValue_ = 0x7fffffff } ncclDataType_t;
typedef enum {
  ncclScalarDevice = 0,
  ncclScalarHostImmediate = 1,
  pump_ncclScalarResidenceAnyValue_ = 0x7fffffff
} ncclScalarResidence_t;
}  // extern "C"
#endif

extern "C" {
// Communicators and NCCL's own memory (passed through, nothing inside them managed).
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config);  // NCCL 2.23
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags);  // NCCL 2.27
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags);  // NCCL 2.27
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

// Collectives and point-to-point.
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);

// Groups: inside one, calls only record work; it reaches the streams at ncclGroupEnd.
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
}  // extern "C"

namespace pump::interpose::nccl {

// ncclResult_t values libpump acts on.
inline constexpr int kSuccess = 0;
inline constexpr int kInProgress = 7;  // a nonblocking communicator is still enqueuing
inline constexpr int kScalarDevice = 0;

// Bytes of one element of ncclDataType_t `type` (ncclInt8 = 0 ... ncclFloat8e5m2 = 11),
// 0 when unknown (a type newer than this table).
constexpr size_t type_bytes(int type) {
  constexpr size_t kBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return type >= 0 && type < static_cast<int>(sizeof kBytes / sizeof kBytes[0]) ? kBytes[type] : 0;
}

}  // namespace pump::interpose::nccl
