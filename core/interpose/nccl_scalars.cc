#include "core/interpose/nccl_scalars.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace pump::interpose::nccl_scalars {
namespace {

struct Scalar {
  ncclComm_t comm;
  ncclRedOp_t op;
  uint64_t address;
  uint64_t bytes;
};

std::mutex g_mutex;
std::vector<Scalar>& scalars() {
  static auto* list = new std::vector<Scalar>();  // leaked: hooks may run during exit
  return *list;
}
std::atomic<size_t> g_count{0};

}  // namespace

void remember(ncclComm_t comm, ncclRedOp_t op, uint64_t address, uint64_t bytes) {
  std::lock_guard lock(g_mutex);
  std::vector<Scalar>& list = scalars();
  // Operator values are per communicator and may be reused once destroyed.
  std::erase_if(list, [&](const Scalar& s) { return s.comm == comm && s.op == op; });
  list.push_back({comm, op, address, bytes});
  g_count.store(list.size(), std::memory_order_release);
}

void forget(ncclComm_t comm, ncclRedOp_t op) {
  std::lock_guard lock(g_mutex);
  std::vector<Scalar>& list = scalars();
  std::erase_if(list, [&](const Scalar& s) { return s.comm == comm && s.op == op; });
  g_count.store(list.size(), std::memory_order_release);
}

void append_extents(ncclComm_t comm, std::vector<pump_extent_v1_t>* out) {
  if (g_count.load(std::memory_order_acquire) == 0) return;
  std::lock_guard lock(g_mutex);
  for (const Scalar& s : scalars())
    if (s.comm == comm) out->push_back({s.address, s.bytes, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN});
}

}  // namespace pump::interpose::nccl_scalars
