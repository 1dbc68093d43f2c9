#pragma once
// One stream waiting for another's queued work, through an event (the backend's streams
// hand work to each other this way: populate -> in, in/out -> their staging helpers).
#include <cuda.h>

#include "core/cuda/driver_api.h"

namespace pump::cuda {

// Records `event` on `signaler` and makes `waiter` wait for it: `waiter`'s later work
// follows everything queued on `signaler` so far. On failure *failed_call names the call.
inline CUresult wait_for_stream(const DriverApi& api, CUevent event, CUstream signaler, CUstream waiter,
                                const char** failed_call) {
  *failed_call = "cuEventRecord";
  CUresult r = api.cuEventRecord(event, signaler);
  if (r != CUDA_SUCCESS) return r;
  *failed_call = "cuStreamWaitEvent";
  return api.cuStreamWaitEvent(waiter, event, 0);
}

}  // namespace pump::cuda
