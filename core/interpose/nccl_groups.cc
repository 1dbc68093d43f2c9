#include "core/interpose/nccl_groups.h"

#include <sched.h>

#include <vector>

#include "core/common/log.h"
#include "core/interpose/real_symbols.h"

namespace pump::interpose {
namespace {

struct Deferred {
  CallScope scope;
  ncclComm_t comm;
};

thread_local int t_depth = 0;
thread_local std::vector<Deferred> t_deferred;

// Until `comm` has enqueued everything it was given (nonblocking communicators).
void wait_while_in_progress(ncclComm_t comm) {
  auto get_error = real<k_ncclCommGetAsyncError>();
  if (!get_error || !comm) return;
  PUMP_LOG_ONCE(LogLevel::kInfo,
                "a nonblocking NCCL communicator answered ncclInProgress: pump waits until it has enqueued the "
                "call before letting the call's buffers leave the device");
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (get_error(comm, &state) != ncclSuccess || static_cast<int>(state) != nccl::kInProgress) return;
    sched_yield();
  }
}

}  // namespace

void settle_collective(CallScope&& scope, ncclComm_t comm, ncclResult_t result) {
  if (scope.empty()) return;
  if (t_depth > 0) {
    t_deferred.push_back({std::move(scope), comm});
    return;
  }
  const int r = static_cast<int>(result);
  if (r == nccl::kInProgress) wait_while_in_progress(comm);
  end_extracted_call(scope, r == nccl::kSuccess || r == nccl::kInProgress);
}

namespace nccl_groups {

void started() { ++t_depth; }

bool open() { return t_depth > 0; }

void ended(ncclResult_t result) {
  // NCCL closes a level on every ncclGroupEnd inside a group, failed or not.
  if (t_depth == 0 || --t_depth > 0) return;
  std::vector<Deferred> deferred;
  deferred.swap(t_deferred);
  if (static_cast<int>(result) == nccl::kInProgress)
    for (const Deferred& d : deferred) wait_while_in_progress(d.comm);
  // Even a failed end may have queued some of the group's kernels: every call is settled
  // as launched (a fence after whatever reached its stream is always safe).
  for (Deferred& d : deferred) end_extracted_call(d.scope, true);
}

}  // namespace nccl_groups
}  // namespace pump::interpose
