// libpump declares the NCCL API it hooks itself (core/interpose/nccl_api.h) so that it
// builds without NCCL. Where NCCL's own header is installed, this file includes both:
// a declaration of libpump's that differs from nccl.h's is a compile error here, and the
// values libpump acts on are checked against NCCL's.
#include <gtest/gtest.h>
#include <nccl.h>

#include "core/interpose/nccl_api.h"

namespace pump::interpose {
namespace {

static_assert(nccl::kSuccess == static_cast<int>(ncclSuccess));
static_assert(nccl::kInProgress == static_cast<int>(ncclInProgress));
static_assert(nccl::kScalarDevice == static_cast<int>(ncclScalarDevice));
static_assert(sizeof(ncclUniqueId) == 128, "passed by value to ncclCommInitRank");
static_assert(nccl::type_bytes(ncclInt8) == 1 && nccl::type_bytes(ncclUint8) == 1 && nccl::type_bytes(ncclInt32) == 4 &&
              nccl::type_bytes(ncclUint32) == 4 && nccl::type_bytes(ncclInt64) == 8 &&
              nccl::type_bytes(ncclUint64) == 8 && nccl::type_bytes(ncclFloat16) == 2 &&
              nccl::type_bytes(ncclFloat32) == 4 && nccl::type_bytes(ncclFloat64) == 8 &&
              nccl::type_bytes(ncclBfloat16) == 2 && nccl::type_bytes(ncclNumTypes) == 0);

TEST(NcclApi, LibpumpsDeclarationsCompileBesideNcclH) {
  // The checks above ran at compile time; this records which NCCL they were made against.
  RecordProperty("nccl_version_code", NCCL_VERSION_CODE);
  EXPECT_GE(NCCL_MAJOR, 2);
}

}  // namespace
}  // namespace pump::interpose
