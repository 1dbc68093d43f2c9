/* A stand-in libnccl for the CPU tests of libpump's NCCL hooks: the same C names and
 * shapes as nccl.h (enums as int, handles as pointers), found by the hooks through
 * RTLD_NEXT like the real library. Each call is written to a journal the test reads;
 * results and communicator answers are scripted. Linked into the test. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { kSuccess = 0, kInvalidArgument = 4, kInProgress = 7 };

/* Scripted by the test. */
EXPORT int fake_nccl_result = kSuccess; /* what every collective and group call returns */
EXPORT int fake_nccl_ranks = 2;         /* ncclCommCount */
EXPORT int fake_nccl_rank = 0;          /* ncclCommUserRank */
EXPORT int fake_nccl_device = 0;        /* ncclCommCuDevice */
EXPORT int fake_nccl_in_progress = 0;   /* ncclCommGetAsyncError answers ncclInProgress this often first */
EXPORT int fake_nccl_async_queries = 0;
/* Called from inside the communicator and memory calls (what NCCL would do there). */
EXPORT void (*fake_nccl_inside)(void) = NULL;
/* Called with a line per call: "ncclAllReduce stream=0x.." and so on. */
EXPORT void (*fake_nccl_journal)(const char* line) = NULL;

static void note(const char* name, const void* stream) {
  char line[96];
  snprintf(line, sizeof line, "%s stream=%p", name, stream);
  if (fake_nccl_journal) fake_nccl_journal(line);
}
static int inside(const char* name) {
  note(name, NULL);
  if (fake_nccl_inside) fake_nccl_inside();
  return fake_nccl_result;
}

EXPORT int ncclAllReduce(const void* s, void* r, size_t n, int t, int op, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)op, (void)comm;
  note("ncclAllReduce", stream);
  return fake_nccl_result;
}
EXPORT int ncclReduceScatter(const void* s, void* r, size_t n, int t, int op, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)op, (void)comm;
  note("ncclReduceScatter", stream);
  return fake_nccl_result;
}
EXPORT int ncclAllGather(const void* s, void* r, size_t n, int t, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)comm;
  note("ncclAllGather", stream);
  return fake_nccl_result;
}
EXPORT int ncclBroadcast(const void* s, void* r, size_t n, int t, int root, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)root, (void)comm;
  note("ncclBroadcast", stream);
  return fake_nccl_result;
}
EXPORT int ncclBcast(void* b, size_t n, int t, int root, void* comm, void* stream) {
  (void)b, (void)n, (void)t, (void)root, (void)comm;
  note("ncclBcast", stream);
  return fake_nccl_result;
}
EXPORT int ncclReduce(const void* s, void* r, size_t n, int t, int op, int root, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)op, (void)root, (void)comm;
  note("ncclReduce", stream);
  return fake_nccl_result;
}
EXPORT int ncclAlltoAll(const void* s, void* r, size_t n, int t, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)comm;
  note("ncclAlltoAll", stream);
  return fake_nccl_result;
}
EXPORT int ncclGather(const void* s, void* r, size_t n, int t, int root, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)root, (void)comm;
  note("ncclGather", stream);
  return fake_nccl_result;
}
EXPORT int ncclScatter(const void* s, void* r, size_t n, int t, int root, void* comm, void* stream) {
  (void)s, (void)r, (void)n, (void)t, (void)root, (void)comm;
  note("ncclScatter", stream);
  return fake_nccl_result;
}
EXPORT int ncclSend(const void* s, size_t n, int t, int peer, void* comm, void* stream) {
  (void)s, (void)n, (void)t, (void)peer, (void)comm;
  note("ncclSend", stream);
  return fake_nccl_result;
}
EXPORT int ncclRecv(void* r, size_t n, int t, int peer, void* comm, void* stream) {
  (void)r, (void)n, (void)t, (void)peer, (void)comm;
  note("ncclRecv", stream);
  return fake_nccl_result;
}
EXPORT int ncclGroupStart(void) {
  note("ncclGroupStart", NULL);
  return kSuccess;
}
EXPORT int ncclGroupEnd(void) {
  note("ncclGroupEnd", NULL);
  return fake_nccl_result;
}

EXPORT int ncclCommCount(const void* comm, int* count) {
  if (!comm || !count) return kInvalidArgument;
  *count = fake_nccl_ranks;
  return kSuccess;
}
EXPORT int ncclCommUserRank(const void* comm, int* rank) {
  if (!comm || !rank) return kInvalidArgument;
  *rank = fake_nccl_rank;
  return kSuccess;
}
EXPORT int ncclCommCuDevice(const void* comm, int* device) {
  if (!comm || !device) return kInvalidArgument;
  *device = fake_nccl_device;
  return kSuccess;
}
EXPORT int ncclCommGetAsyncError(void* comm, int* state) {
  if (!comm || !state) return kInvalidArgument;
  ++fake_nccl_async_queries;
  *state = fake_nccl_in_progress > 0 ? kInProgress : kSuccess;
  if (fake_nccl_in_progress > 0) --fake_nccl_in_progress;
  note("ncclCommGetAsyncError", NULL);
  return kSuccess;
}

EXPORT int ncclRedOpCreatePreMulSum(int* op, void* scalar, int t, int residence, void* comm) {
  (void)scalar, (void)t, (void)residence, (void)comm;
  static int next = 5; /* ncclNumOps: the first dynamic operator */
  *op = next++;
  return inside("ncclRedOpCreatePreMulSum");
}
EXPORT int ncclRedOpDestroy(int op, void* comm) {
  (void)op, (void)comm;
  return inside("ncclRedOpDestroy");
}

typedef struct {
  char internal[128];
} FakeUniqueId;
EXPORT int ncclCommInitRank(void** comm, int nranks, FakeUniqueId id, int rank) {
  (void)nranks, (void)rank;
  if (id.internal[0] != 'u') return kInvalidArgument; /* the id arrived whole, by value */
  *comm = (void*)0xc0;
  return inside("ncclCommInitRank");
}
EXPORT int ncclCommDestroy(void* comm) {
  (void)comm;
  return inside("ncclCommDestroy");
}
EXPORT int ncclMemAlloc(void** ptr, size_t size) {
  static char arena[4096];
  *ptr = size <= sizeof arena ? arena : NULL;
  return inside("ncclMemAlloc");
}
