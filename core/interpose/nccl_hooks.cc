// The hand-written NCCL hooks: group start and end (nccl_groups.h), and the PreMulSum
// operators whose device-resident scalar every collective using them reads
// (nccl_scalars.h). Each runs the real call with the reentry guard held.
#include "core/interpose/custom_hooks.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/nccl_groups.h"
#include "core/interpose/nccl_scalars.h"

namespace pump::interpose {

ncclResult_t on_ncclGroupStart() {
  auto fn = real<k_ncclGroupStart>();
  if (!fn) return missing_symbol_status<ncclResult_t>();
  if (inside_hook()) return fn();
  ReentryGuard guard;
  count_guarded_call(k_ncclGroupStart);
  const ncclResult_t result = fn();
  if (static_cast<int>(result) == nccl::kSuccess) nccl_groups::started();
  return result;
}

ncclResult_t on_ncclGroupEnd() {
  auto fn = real<k_ncclGroupEnd>();
  if (!fn) return missing_symbol_status<ncclResult_t>();
  if (inside_hook()) return fn();
  ReentryGuard guard;
  count_guarded_call(k_ncclGroupEnd);
  const ncclResult_t result = fn();
  nccl_groups::ended(result);
  return result;
}

ncclResult_t on_ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                         ncclScalarResidence_t residence, ncclComm_t comm) {
  auto fn = real<k_ncclRedOpCreatePreMulSum>();
  if (!fn) return missing_symbol_status<ncclResult_t>();
  if (inside_hook()) return fn(op, scalar, datatype, residence, comm);
  ReentryGuard guard;
  count_guarded_call(k_ncclRedOpCreatePreMulSum);
  const ncclResult_t result = fn(op, scalar, datatype, residence, comm);
  if (static_cast<int>(result) == nccl::kSuccess && op && scalar &&
      static_cast<int>(residence) == nccl::kScalarDevice) {
    // A type newer than libpump's table: 16 bytes covers any scalar NCCL has.
    const size_t bytes = nccl::type_bytes(static_cast<int>(datatype));
    nccl_scalars::remember(comm, *op, reinterpret_cast<uint64_t>(scalar), bytes ? bytes : 16);
  }
  return result;
}

ncclResult_t on_ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  auto fn = real<k_ncclRedOpDestroy>();
  if (!fn) return missing_symbol_status<ncclResult_t>();
  if (inside_hook()) return fn(op, comm);
  ReentryGuard guard;
  count_guarded_call(k_ncclRedOpDestroy);
  nccl_scalars::forget(comm, op);
  return fn(op, comm);
}

}  // namespace pump::interpose
