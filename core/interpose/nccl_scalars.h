// The device-resident scalars of NCCL PreMulSum operators. An operator created with
// ncclScalarDevice reads its scalar from device memory in every collective that uses
// it, and no argument of the collective names that memory: libpump remembers the scalar
// per (communicator, operator) from ncclRedOpCreatePreMulSum until ncclRedOpDestroy, and
// every collective of the communicator reports the communicator's scalars as read (a
// few bytes each; over-reporting a read costs at most a restore, never a wrong value).
#pragma once

#include <cstdint>
#include <vector>

#include "core/interpose/nccl_api.h"
#include "pump/extractor_v1.h"

namespace pump::interpose::nccl_scalars {

void remember(ncclComm_t comm, ncclRedOp_t op, uint64_t address, uint64_t bytes);
void forget(ncclComm_t comm, ncclRedOp_t op);
// Appends a READ extent for each scalar of `comm`'s live operators. No lock taken while
// there are none (the steady state of a program that never creates one).
void append_extents(ncclComm_t comm, std::vector<pump_extent_v1_t>* out);

}  // namespace pump::interpose::nccl_scalars
