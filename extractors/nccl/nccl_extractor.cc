// Extractor for NCCL collectives and point-to-point calls: exact byte extents of every
// buffer from the element count, the data type's size and, where the call spans the
// communicator, its rank count. Send buffers are read, receive buffers written; a
// buffer that is both (in place) is one read-write extent.
//
// NCCL's kernels get their buffers through device-side work structures, so the launch
// extractor never sees them: these extents are the only way the engine learns what a
// collective touches. Group semantics (ncclGroupStart/End) are the core's business
// (core/interpose/nccl_groups.h): an extractor only says what a call touches.
//
// Built without NCCL: the few values used are NCCL's stable ABI (nccl.h, 2.x), and the
// communicator queries are fetched through host->real_symbol from the libnccl the
// program loaded. Sizes that need the rank count (a reduce-scatter's input, an
// all-gather's output) fall back to the buffer's whole block when it cannot be asked.
#include <atomic>
#include <cstdint>
#include <cstdio>

#include "extractors/common/extent_reporter.h"
#include "extractors/common/extractor_entry.h"
#include "pump/pump_sdk.h"

namespace pump::extractors {
namespace {

enum Api : uint32_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kBcast,
  kReduce,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kApiCount
};

const char* const kApis[] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather", "ncclBroadcast",
                             "ncclBcast",     "ncclReduce",        "ncclAlltoAll",  "ncclGather",
                             "ncclScatter",   "ncclSend",          "ncclRecv",      nullptr};
static_assert(sizeof(kApis) / sizeof(kApis[0]) == kApiCount + 1, "kApis and Api disagree");

// C argument counts, from nccl.h.
constexpr uint32_t kArgCount[kApiCount] = {7, 7, 6, 7, 6, 8, 6, 7, 7, 6, 6};

// ncclResult_t ncclCommCount(const ncclComm_t, int*) and ncclCommUserRank(const ncclComm_t, int*).
using CommQueryFn = int (*)(const void* comm, int* out);
constexpr int kNcclSuccess = 0;

// Bytes of one element of ncclDataType_t `type` (ncclInt8 = 0 ... ncclFloat8e5m2 = 11).
uint64_t nccl_type_bytes(int type) {
  constexpr uint64_t kBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return type >= 0 && type < static_cast<int>(sizeof kBytes / sizeof kBytes[0]) ? kBytes[type] : 0;
}

struct NcclState {
  explicit NcclState(const pump_extractor_host_v1_t* h) : host(h) {}
  const pump_extractor_host_v1_t* host;
  RealSymbol<CommQueryFn> comm_count{"ncclCommCount"};
  RealSymbol<CommQueryFn> comm_rank{"ncclCommUserRank"};
  std::atomic<bool> unknown_type_reported{false};
};

// The answer of a communicator query, -1 when it cannot be had. Asked per call: a
// communicator's address may be reused by a new one once destroyed.
int ask(RealSymbol<CommQueryFn>& query, const pump_extractor_host_v1_t* host, const void* comm) {
  CommQueryFn fn = query.get(host);
  int value = -1;
  if (fn == nullptr || comm == nullptr || fn(comm, &value) != kNcclSuccess || value < 0) return -1;
  return value;
}

// How one call's arguments map onto buffers; -1: the call has no such argument.
struct Shape {
  int send = -1, recv = -1;  // argument indices of the buffers
  int count = 2;             // ... of the element count
  int type = 3;              // ... of the data type
  int root = -1;             // ... of the root rank
  int comm = -1;
};

Shape shape_of(uint32_t api) {
  switch (api) {
    case kAllReduce:
    case kReduceScatter: return {0, 1, 2, 3, -1, 5};
    case kAllGather:
    case kAlltoAll: return {0, 1, 2, 3, -1, 4};
    case kBroadcast:
    case kGather:
    case kScatter: return {0, 1, 2, 3, 4, 5};
    case kReduce: return {0, 1, 2, 3, 5, 6};
    case kBcast: return {0, 0, 1, 2, 3, 4};  // one buffer: the root's is sent, the others' received
    case kSend: return {0, -1, 1, 2, -1, 4};
    case kRecv: return {-1, 0, 1, 2, -1, 4};
    default: return {};
  }
}

// One buffer read (send) and one written (recv); the same bytes of one buffer are one
// read-write extent. Where they only overlap (the in-place forms of reduce-scatter,
// all-gather, gather and scatter) both are reported: the engine then counts the overlap
// as read and written, and the rest of the written buffer as overwritten.
void send_recv(ExtentReporter& out, const void* send, uint64_t send_bytes, const void* recv, uint64_t recv_bytes) {
  if (send != nullptr && send == recv && send_bytes == recv_bytes) {
    out.exact(send, send_bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
    return;
  }
  out.exact(send, send_bytes, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
  out.exact(recv, recv_bytes, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN);
}

// The whole blocks of the call's buffers, read and written: what is reported when their
// size cannot be computed. Safe (everything of theirs comes back first and counts as
// written), never exact.
pump_status_v1_t whole_blocks(const pump_call_v1_t* call, const Shape& s, ExtentReporter& out) {
  const void* send = s.send >= 0 ? arg<const void*>(call, static_cast<unsigned>(s.send)) : nullptr;
  const void* recv = s.recv >= 0 ? arg<const void*>(call, static_cast<unsigned>(s.recv)) : nullptr;
  out.whole_block(send, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
  if (recv != send) out.whole_block(recv, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
  return PUMP_OK;
}

pump_status_v1_t dispatch(NcclState& st, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  ExtentReporter out(st.host, sink);
  const Shape s = shape_of(call->api);
  const int type = arg<int>(call, static_cast<unsigned>(s.type));
  const uint64_t elem = nccl_type_bytes(type);
  if (elem == 0) {
    if (!st.unknown_type_reported.exchange(true) && st.host->log != nullptr) {
      char message[200];
      std::snprintf(message, sizeof message,
                    "%s with NCCL data type %d, which this extractor does not know: the buffers of such calls are "
                    "reported as their whole blocks, read and written",
                    kApis[call->api], type);
      st.host->log(st.host, PUMP_LOG_WARN, message);
    }
    return whole_blocks(call, s, out);
  }
  const uint64_t n = arg<size_t>(call, static_cast<unsigned>(s.count)) * elem;
  const void* send = s.send >= 0 ? arg<const void*>(call, static_cast<unsigned>(s.send)) : nullptr;
  const void* recv = s.recv >= 0 ? arg<const void*>(call, static_cast<unsigned>(s.recv)) : nullptr;
  const void* comm = arg<const void*>(call, static_cast<unsigned>(s.comm));
  const int root = s.root >= 0 ? arg<int>(call, static_cast<unsigned>(s.root)) : -1;
  // The rank, only where the root's role differs from the others'; -1: unknown, then
  // both roles' buffers are reported (reading too much is safe, claiming a write is not).
  auto my_rank = [&] { return ask(st.comm_rank, st.host, comm); };

  switch (call->api) {
    case kAllReduce: send_recv(out, send, n, recv, n); return PUMP_OK;
    case kSend: out.exact(send, n, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN); return PUMP_OK;
    case kRecv: out.exact(recv, n, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN); return PUMP_OK;
    case kReduceScatter:
    case kAllGather:
    case kAlltoAll: {
      const int ranks = ask(st.comm_count, st.host, comm);
      if (ranks <= 0) return whole_blocks(call, s, out);
      const uint64_t all = n * static_cast<uint64_t>(ranks);
      if (call->api == kReduceScatter) send_recv(out, send, all, recv, n);
      else if (call->api == kAllGather) send_recv(out, send, n, recv, all);
      else send_recv(out, send, all, recv, all);
      return PUMP_OK;
    }
    case kBroadcast: {
      // The root sends its buffer; every rank (the root too) receives into its own.
      const int rank = my_rank();
      if (rank == root || rank < 0) send_recv(out, send, n, recv, n);
      else out.exact(recv, n, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN);
      return PUMP_OK;
    }
    case kBcast: {
      const int rank = my_rank();
      const pump_access_v1_t access = rank < 0       ? PUMP_ACCESS_READ_WRITE
                                      : rank == root ? PUMP_ACCESS_READ
                                                     : PUMP_ACCESS_WRITE;
      out.exact(send, n, access, PUMP_ROLE_UNKNOWN);
      return PUMP_OK;
    }
    case kReduce: {
      // Every rank sends; only the root receives (elsewhere recvbuff may be anything).
      const int rank = my_rank();
      if (rank == root) send_recv(out, send, n, recv, n);
      else if (rank >= 0) out.exact(send, n, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
      else {
        out.exact(send, n, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
        if (recv != send) out.exact(recv, n, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
      }
      return PUMP_OK;
    }
    case kGather:
    case kScatter: {
      // Gather: every rank sends count elements, the root receives ranks x count.
      // Scatter: the root sends ranks x count elements, every rank receives count.
      // Of an unknown rank, a gather's receive buffer counts as read too: it may not be
      // the root, whose buffer alone is written.
      const int rank = my_rank();
      const bool gather = call->api == kGather;
      if (rank >= 0 && rank != root) {
        if (gather) out.exact(send, n, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
        else out.exact(recv, n, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN);
        return PUMP_OK;
      }
      const int ranks = ask(st.comm_count, st.host, comm);
      if (ranks <= 0) return whole_blocks(call, s, out);
      const uint64_t all = n * static_cast<uint64_t>(ranks);
      if (!gather) send_recv(out, send, all, recv, n);
      else if (rank == root) send_recv(out, send, n, recv, all);
      else {
        out.exact(send, n, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
        out.exact(recv, all, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
      }
      return PUMP_OK;
    }
    default: return PUMP_ERR_INVALID_ARGUMENT;
  }
}

uint32_t min_args(uint32_t api) { return kArgCount[api]; }

}  // namespace
}  // namespace pump::extractors

PUMP_DECLARE_EXTRACTOR = pump::extractors::builtin_extractor<pump::extractors::NcclState, pump::extractors::dispatch,
                                                             pump::extractors::min_args, pump::extractors::kApiCount>(
    "nccl", pump::extractors::kApis);
