// PhysicalChunks: device allocations on physical memory of pump's own (PUMP_DATAPATH=vmm).
//
// Why. On the copy data path a block leaves as a copy to its pinned shadow and then a
// discard of its managed pages, and comes back as a populate and a copy. The discards and
// populates are the driver's page work: serial (1 GiB in 3.7-4.3 ms whatever the threads)
// and, while it runs, other threads' kernel launches nearly stop (4.6 per ms against 249).
// Unmapping and mapping physical chunks of the virtual memory API costs per call, not per
// byte (about 20 us to unmap, 30 to map, measured by tests/gpu/remap_cost_probe.cu: 1 GiB
// in 32 MiB chunks 0.64 + 0.94 ms against 4.3 + 6.2) and never holds up launches.
//
// What. Each allocation is an address range (placed top down in one span reserved at the
// first allocation, top_down_addresses.h; else reserved on its own) backed by chunks of at
// most chunk_bytes (multiples of the driver's granularity), all mapped when allocated. The
// backend drops what the engine drops (saved or dead bytes): a chunk all of whose bytes are
// dropped is unmapped, once the work queued before the drop on the out stream completed
// (an event; the unmap is synchronous, so a thread of this class waits for it). Backing a
// dropped range maps its chunks again (garbage: the engine restores or overwrites what it
// needs) and cancels a release still waiting. A chunk with a byte still wanted stays mapped,
// so a dropped piece costs memory until its neighbours leave too.
//
// Physical memory. An unmapped chunk's memory goes to a pool (up to pool_bytes) that the
// next chunk of its size is mapped from: on the H200 a cuMemCreate + cuMemRelease pair cost
// about 200 us a chunk in the decode, five times the map and unmap. What the pool holds is
// the device's as far as the driver knows; when a chunk cannot be had, the pool is given
// back and the queued releases are waited for before the one retry.
//
// Access is granted to this device and to every device that can access it as a peer (as
// cudaMalloc's memory is reachable by peers once peer access is enabled).
//
// The cost, stated where PUMP_DATAPATH is documented: a kernel reaching an unmapped chunk
// faults (an illegal address, fatal to the context) where unified memory would have read
// zeros. The engine's rule already is that every dropped piece comes back before any
// access it cannot size (PUMP_VERIFY=poison tests it). Memory the engine evicts by
// unified-memory migration (no shadow room) cannot leave this way: it stays on the device,
// counted as kept.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/icl/interval_set.hpp>

#include "core/common/range.h"
#include "core/cuda/driver_api.h"
#include "core/cuda/top_down_addresses.h"

namespace pump::cuda {

// Every counter, once: the stats struct, its atomic twin, the copy between them and the cuda
// backend's copy into its own stats (physical_<name>) all come from this list.
// clang-format off
#define PUMP_PHYSICAL_CHUNK_COUNTERS(X) \
  X(allocations)        /* made on physical chunks */ \
  X(maps)               /* chunks mapped (at allocation and when backed again) */ \
  X(map_bytes) \
  X(map_ns)             /* time inside cuMemCreate + cuMemMap + cuMemSetAccess */ \
  X(unmaps)             /* chunks unmapped after a drop */ \
  X(unmap_bytes) \
  X(unmap_ns)           /* the releaser's time inside cuMemUnmap (+ cuMemRelease past the pool) */ \
  X(release_wait_ns)    /* the releaser's time waiting for the work before a drop */ \
  X(cancelled_releases) /* chunks backed again before their release came */ \
  X(mapped_bytes)       /* physical memory held now, mapped ... */ \
  X(mapped_high_water) \
  X(pooled_bytes)       /* ... and unmapped, kept for the next chunk of its size */ \
  X(creates)            /* cuMemCreate calls (the rest came from the pool) */ \
  X(access_calls)       /* cuMemSetAccess calls (one per run of chunks mapped, joined across mapped ones) */ \
  X(slow_access_calls)  /* ... of those, calls over 200 us (waiting for device-to-host copies) */ \
  X(limit_waits)        /* maps that waited for the queued releases to stay within the limit */ \
  X(over_limit_bytes)   /* memory created past the limit after that wait (chunks still partly wanted) */ \
  X(host_maps)          /* chunks backed by host memory: the device had none left (back()) */ \
  X(host_bytes)         /* ... of those, held now (kernels reach them over the link until evicted) */
// clang-format on

struct PhysicalChunksStats {
#define PUMP_PHYSICAL_FIELD(name) uint64_t name = 0;
  PUMP_PHYSICAL_CHUNK_COUNTERS(PUMP_PHYSICAL_FIELD)
#undef PUMP_PHYSICAL_FIELD
};

class PhysicalChunks {
 public:
  // `device` is the ordinal; `context` (its primary context) is made current on the releaser's
  // thread; chunk_bytes is rounded up to the driver's granularity.
  PhysicalChunks(const DriverApi& api, CUcontext context, int device, uint64_t chunk_bytes, uint64_t pool_bytes);
  // Stops the releaser (its queued releases are done first). Leaves allocations mapped:
  // the program may still use them until its own exit.
  ~PhysicalChunks();
  PhysicalChunks(const PhysicalChunks&) = delete;
  PhysicalChunks& operator=(const PhysicalChunks&) = delete;

  // The driver's granularity and the releaser; "" on success, else why not (one line).
  std::string start();

  // A new allocation of `bytes`, every chunk mapped and accessible to the device. On
  // failure nothing is held and the driver's result is returned.
  CUresult allocate(uint64_t bytes, uint64_t* address);
  // Frees an allocation made here (after the device finished with it, as cudaFree does).
  // False: not one of ours.
  bool free(uint64_t address);
  // Whether any allocation was ever made here (cheap: the backend's fast path).
  bool used() const { return any_.load(std::memory_order_acquire); }
  // Whether `address` lies in an allocation made here.
  bool owns(uint64_t address) const;
  // That allocation's base and the bytes asked for it (false: none made here holds `address`;
  // the reservation's rounding past those bytes counts as the allocation's).
  bool range_of(uint64_t address, uint64_t* base, uint64_t* bytes) const;
  // Moves the ranges (Range or ShadowRange) that lie in allocations made here from *ranges
  // to *ours. A range never crosses from one allocation into another (the engine's rule).
  template <typename Ranged>
  void take_ours(std::vector<Ranged>* ranges, std::vector<Ranged>* ours) const {
    if (!any_.load(std::memory_order_acquire)) return;
    std::vector<Ranged> rest;
    for (Ranged& r : *ranges) (owns(r.address) ? *ours : rest).push_back(r);
    ranges->swap(rest);
  }

  // The device bytes of `ranges` are no longer wanted (saved to a shadow, or dead). Chunks
  // left with no wanted byte are unmapped once everything queued on `after` so far completed.
  // Called from the thread that calls back() only: back() grants access across chunks it
  // finds mapped, which only a drop can change meanwhile.
  void drop(const std::vector<Range>& ranges, CUstream after);
  // The chunks of `ranges` mapped again where they were unmapped (their bytes are garbage
  // until restored); a release still waiting is cancelled. A failed map (the device full) is
  // retried once the queued releases are done and the pool is given back (unless `retry` is
  // false); if the device still has no memory, the chunks it refuses are backed by host
  // memory where the driver allows it (kernels then reach them over the link, until the
  // engine evicts them: unmapped, they come back to the device), so that no kernel faults on a
  // chunk left unmapped. Returns the driver's result when even that fails.
  CUresult back(const std::vector<Range>& ranges, bool retry = true);
  // The device memory held here (mapped and pooled) that back() keeps to: past it, a map
  // takes memory from the pool once the queued releases are done (waiting 200 ms at most),
  // and only then creates more (counted); without `retry` it returns CUDA_ERROR_NOT_READY
  // instead. New allocations are the program's and are not held to it. 0: no limit.
  void set_limit(uint64_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  // Waits until every release queued so far is done.
  void drain();
  // The same for at most `most`.
  void drain_for(std::chrono::milliseconds most);

  PhysicalChunksStats stats() const;

 private:
  enum class State { kMapped, kReleasing, kUnmapped };
  struct Chunk {
    uint64_t offset = 0;
    uint64_t bytes = 0;
    CUmemGenericAllocationHandle handle = 0;
    State state = State::kMapped;
    bool on_host = false;  // backed by host memory (the device had none): released, never pooled
    // A queued release acts only on the generation it was queued for. Generations are drawn
    // from one counter (generations_): an allocation made later at the same address never
    // matches a release queued for the one freed there.
    uint64_t generation = 0;
  };
  struct Allocation {
    uint64_t bytes = 0;     // as asked
    uint64_t reserved = 0;  // the address range (a multiple of the granularity)
    bool in_span = false;   // taken from span_ (else reserved on its own)
    std::vector<Chunk> chunks;
    boost::icl::interval_set<uint64_t> dropped;  // addresses whose bytes nobody wants
  };
  struct Release {
    uint64_t base;
    size_t chunk;
    uint64_t generation;
  };
  struct Queued {
    CUevent event = nullptr;  // nullptr: the stream was synchronized instead
    std::vector<Release> releases;
  };

  // Maps the unmapped chunks of `a` among `indices` (ascending), access granted once per run
  // of them, a run going on across chunks mapped already; on a failure none of them stays
  // mapped. Takes mutex_ around its bookkeeping only (a grant
  // may wait a millisecond: the releaser and the program's threads go on meanwhile); the
  // caller holds map_call_mutex_ where `a` is in allocations_.
  // How map_chunks treats limit_: kIgnore (a new allocation: the program's own memory), kRefuse
  // (past it: CUDA_ERROR_NOT_READY, nothing mapped), kPast (past it all the same, counted).
  enum class Limit { kIgnore, kRefuse, kPast };
  // What one map_chunks call met: whether the driver said the device was out of memory, and
  // how many chunks it backed by host memory.
  struct MapOutcome {
    bool device_full = false;
    size_t on_host = 0;
  };
  // `host_fallback`: a chunk the driver refuses device memory for (out of memory) is backed by
  // host memory.
  CUresult map_chunks(uint64_t base, Allocation& a, const std::vector<size_t>& indices, Limit limit_mode,
                      bool host_fallback = false, MapOutcome* outcome = nullptr);
  // An address range of `bytes` from span_ (reserved at the first call), else one reserved on
  // its own; under mutex_. And its return.
  CUresult reserve_addresses(uint64_t bytes, uint64_t* base, bool* in_span);
  void free_addresses(uint64_t base, const Allocation& a);
  void give_back_pool();                               // under mutex_
  void unmap_chunk(uint64_t base, Chunk& chunk);       // under mutex_
  Allocation* find(uint64_t address, uint64_t* base);  // under mutex_; *base: the allocation's
  void release_now(const std::vector<Release>& releases);
  void releaser_main();
  CUevent take_event();

  const DriverApi& api_;
  const CUcontext context_;
  const int device_;
  uint64_t chunk_bytes_;
  const uint64_t pool_limit_;
  uint64_t granularity_ = 0;
  uint64_t span_bytes_ = 0;  // the span reserved up front (kSpanPerDeviceMemory x the device's memory)
  bool span_tried_ = false;  // under mutex_
  TopDownAddresses span_;    // under mutex_: allocations placed in it top down, as cudaMalloc's
  CUmemAllocationProp prop_{};
  CUmemAllocationProp host_prop_{};      // host memory, for chunks the device has no room for
  bool host_fallback_ = false;           // whether the driver's host granularity divides every chunk
  std::vector<CUmemAccessDesc> access_;  // this device, then every peer that can reach it

  std::mutex map_call_mutex_;  // held around back()'s maps: free() waits for them
  mutable std::mutex mutex_;
  std::map<uint64_t, Allocation> allocations_;  // by base address
  uint64_t generations_ = 0;
  std::atomic<bool> any_{false};
  std::vector<CUevent> free_events_;
  std::map<uint64_t, std::vector<CUmemGenericAllocationHandle>> pool_;  // by size
  uint64_t pooled_ = 0;
  std::atomic<uint64_t> limit_{0};

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;  // work or stop
  std::condition_variable idle_cv_;   // the queue drained
  std::deque<Queued> queue_;
  bool releasing_ = false;  // the releaser holds an entry it took from the queue
  bool stopping_ = false;
  std::thread releaser_;

  struct Counters;
  std::unique_ptr<Counters> counters_;
};

}  // namespace pump::cuda
