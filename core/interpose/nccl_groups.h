// NCCL's group semantics, as the engines must see them. Between ncclGroupStart and the
// outermost ncclGroupEnd (per thread, like NCCL's own group depth) a collective only
// records work: its kernels reach the stream at ncclGroupEnd. Its blocks are prepared
// before the call like any other's (restored, prefetched, the stream made to wait), but
// settled (engine.after_kernel: the fence that lets them leave) only after the group's
// end, so nothing of theirs is evicted before the kernels that use them are queued.
//
// A nonblocking communicator (config.blocking = 0) may answer ncclInProgress: its work is
// still being enqueued. The call is then settled only once ncclCommGetAsyncError no
// longer says ncclInProgress (libpump waits for that, as NCCL's documentation asks the
// program to).
#pragma once

#include "core/interpose/hook_dispatch.h"
#include "core/interpose/nccl_api.h"

namespace pump::interpose::nccl_groups {

// After ncclGroupStart succeeded on this thread.
void started();
// After ncclGroupEnd returned `result` on this thread: when it ended the outermost group,
// every call deferred in it is settled (as queued: a fence after the group's kernels).
void ended(ncclResult_t result);
// Whether a group is open on this thread.
bool open();

}  // namespace pump::interpose::nccl_groups
