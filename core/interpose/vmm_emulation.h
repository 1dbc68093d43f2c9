// The CUDA virtual memory management API (cuMemAddressReserve, cuMemCreate, cuMemMap...,
// PyTorch's expandable segments) emulated on managed memory. A reservation is one managed
// allocation of its size: its pages cost nothing until touched. A handle is pump's own
// value standing for (size, properties); mapping it is bookkeeping, and the mapped piece
// becomes a block of its device's engine; unmapping it gives its pages back. This class
// keeps the books and checks the arguments as the driver would; what it needs done to
// memory it asks of a VmmMemory (the hooks: the driver and the engines; tests: a fake).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/interpose/cuda_headers.h"

namespace pump::interpose {

class VmmMemory {
 public:
  virtual ~VmmMemory() = default;
  // A managed range of `bytes` at *address, nothing of it touched; or the driver's error.
  virtual CUresult allocate(uint64_t bytes, uint64_t* address) = 0;
  virtual void free(uint64_t address) = 0;
  // A mapped piece becomes an allocation of `device`'s engine, of `group` (its
  // reservation: pieces that touch are one memory to the program); false: refused
  // (PUMP_MANAGED_LIMIT).
  virtual bool track(int device, uint64_t address, uint64_t bytes, uint64_t group) = 0;
  // An unmapped piece: the engine forgets it and its pages go back to the driver.
  virtual void untrack(int device, uint64_t address, uint64_t bytes) = 0;
  // A piece just mapped (tracked): on the device before the map returns, where it can be.
  // Called outside the emulation's lock.
  virtual void bring_in(int /*device*/, uint64_t /*address*/) {}
};

class VmmEmulation {
 public:
  explicit VmmEmulation(VmmMemory& memory) : memory_(memory) {}

  // Whether allocations of `prop` can be managed memory; if not, *why says what stands in
  // the way (memory not on a device, Windows handle types, usage flags). Exportable POSIX
  // and fabric handle types are emulated: PyTorch asks for them by default, and only an
  // export itself (IPC) is then refused.
  static bool can_emulate(const CUmemAllocationProp& prop, std::string* why);
  // Whether `handle` is one of the emulation's (pump's values never collide with the driver's).
  static bool is_emulated_handle(CUmemGenericAllocationHandle handle);
  bool in_reservation(uint64_t address) const;

  // The calls, with the driver's arguments and the driver's error for bad ones.
  CUresult reserve(uint64_t bytes, uint64_t alignment, uint64_t* address);
  CUresult free_reservation(uint64_t address, uint64_t bytes);
  CUresult create(uint64_t bytes, const CUmemAllocationProp& prop, CUmemGenericAllocationHandle* handle);
  CUresult release(CUmemGenericAllocationHandle handle);
  CUresult map(uint64_t address, uint64_t bytes, uint64_t offset, CUmemGenericAllocationHandle handle);
  CUresult unmap(uint64_t address, uint64_t bytes);
  CUresult set_access(uint64_t address, uint64_t bytes, const CUmemAccessDesc* desc, size_t count);
  CUresult properties(CUmemGenericAllocationHandle handle, CUmemAllocationProp* out) const;
  CUresult retain(uint64_t address, CUmemGenericAllocationHandle* handle);
  CUresult address_range(uint64_t address, uint64_t* base, uint64_t* bytes) const;

  // Bytes mapped now, over every reservation; handles alive (created or retained, or mapped).
  uint64_t mapped_bytes() const;
  size_t live_handles() const;

 private:
  // map's bookkeeping under the lock; *device: the piece's.
  CUresult map_locked(uint64_t address, uint64_t bytes, uint64_t offset, CUmemGenericAllocationHandle handle,
                      int* device);
  struct Reservation {
    uint64_t managed_base;  // what allocate returned (the start may be aligned up from it)
    uint64_t bytes;
  };
  struct Handle {
    uint64_t bytes;
    CUmemAllocationProp prop;
    int references = 1;  // cuMemCreate's, plus each cuMemRetainAllocationHandle
    int mappings = 0;
  };
  struct Mapping {
    uint64_t bytes;
    CUmemGenericAllocationHandle handle;
  };

  // The reservation holding [address, address + bytes), or end().
  std::map<uint64_t, Reservation>::const_iterator reservation_of(uint64_t address, uint64_t bytes) const;
  // The mapping holding `address`, or end().
  std::map<uint64_t, Mapping>::const_iterator mapping_at(uint64_t address) const;
  // Whether [address, address + bytes) is exactly a run of whole, adjacent mappings.
  bool covered_by_mappings(uint64_t address, uint64_t bytes) const;
  void drop_reference_if_unused(CUmemGenericAllocationHandle handle);
  // A piece unmapped in the books, for VmmMemory::untrack once the lock is let go: the engine
  // and the discard may wait for the device, which must never happen under the lock (every
  // hook of the emulation takes it, and a kernel the wait depends on may not be launched yet).
  struct Unmapped {
    int device;
    uint64_t address;
    uint64_t bytes;
  };
  // Unmaps every piece starting in [address, address + bytes) in the books (handles dropped),
  // each appended to *unmapped.
  void unmap_all_in(uint64_t address, uint64_t bytes, std::vector<Unmapped>* unmapped);

  VmmMemory& memory_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Reservation> reservations_;  // by start address
  std::map<uint64_t, Mapping> mappings_;          // by start address
  std::map<CUmemGenericAllocationHandle, Handle> handles_;
  uint64_t next_handle_ = 1;
  uint64_t mapped_bytes_ = 0;
};

}  // namespace pump::interpose
