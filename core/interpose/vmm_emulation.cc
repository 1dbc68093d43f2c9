#include "core/interpose/vmm_emulation.h"

namespace pump::interpose {
namespace {

// pump's handles carry this tag in their top bits: the driver's handles are pointers
// into its own objects, never this high.
constexpr uint64_t kHandleTag = 0x7075ull << 48;  // "pu"
constexpr uint64_t kHandleTagMask = 0xffffull << 48;

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

}  // namespace

bool VmmEmulation::can_emulate(const CUmemAllocationProp& prop, std::string* why) {
  if (prop.type != CU_MEM_ALLOCATION_TYPE_PINNED) {
    *why = "an allocation type other than CU_MEM_ALLOCATION_TYPE_PINNED";
  } else if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    *why = "memory located off the device";
  } else if (prop.requestedHandleTypes & ~(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC)) {
    *why = "a Windows handle type";
  } else if (prop.allocFlags.usage != 0) {
    *why = "a usage flag (tile pool, hardware decompression)";
  } else {
    return true;
  }
  return false;
}

bool VmmEmulation::is_emulated_handle(CUmemGenericAllocationHandle handle) {
  return (handle & kHandleTagMask) == kHandleTag;
}

bool VmmEmulation::in_reservation(uint64_t address) const {
  std::lock_guard lock(mutex_);
  return reservation_of(address, 1) != reservations_.end();
}

std::map<uint64_t, VmmEmulation::Reservation>::const_iterator VmmEmulation::reservation_of(uint64_t address,
                                                                                           uint64_t bytes) const {
  auto it = reservations_.upper_bound(address);
  if (it == reservations_.begin()) return reservations_.end();
  --it;
  const uint64_t end = it->first + it->second.bytes;
  if (address >= end || bytes > end - address) return reservations_.end();
  return it;
}

std::map<uint64_t, VmmEmulation::Mapping>::const_iterator VmmEmulation::mapping_at(uint64_t address) const {
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin()) return mappings_.end();
  --it;
  return address - it->first < it->second.bytes ? it : mappings_.end();
}

bool VmmEmulation::covered_by_mappings(uint64_t address, uint64_t bytes) const {
  const uint64_t end = address + bytes;
  auto it = mappings_.find(address);
  uint64_t at = address;
  while (it != mappings_.end() && it->first == at && at < end) {
    at += it->second.bytes;
    ++it;
  }
  return at == end;
}

CUresult VmmEmulation::reserve(uint64_t bytes, uint64_t alignment, uint64_t* address) {
  if (!address || bytes == 0 || (alignment && !power_of_two(alignment))) return CUDA_ERROR_INVALID_VALUE;
  // Over-reserved by the alignment, so that an aligned start always fits: untouched
  // managed pages cost nothing.
  uint64_t base = 0;
  if (CUresult r = memory_.allocate(bytes + alignment, &base)) return r;
  const uint64_t start = alignment ? (base + alignment - 1) / alignment * alignment : base;
  std::lock_guard lock(mutex_);
  reservations_[start] = {base, bytes};
  *address = start;
  return CUDA_SUCCESS;
}

CUresult VmmEmulation::free_reservation(uint64_t address, uint64_t bytes) {
  std::vector<Unmapped> unmapped;
  uint64_t base = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = reservations_.find(address);
    if (it == reservations_.end() || it->second.bytes != bytes) return CUDA_ERROR_INVALID_VALUE;
    base = it->second.managed_base;
    reservations_.erase(it);
    // Pieces still mapped go with it: the engine must not keep blocks of freed memory.
    unmap_all_in(address, bytes, &unmapped);
  }
  for (const Unmapped& u : unmapped) memory_.untrack(u.device, u.address, u.bytes);
  memory_.free(base);  // after the untracks, outside the lock: the driver's free synchronizes
  return CUDA_SUCCESS;
}

CUresult VmmEmulation::create(uint64_t bytes, const CUmemAllocationProp& prop, CUmemGenericAllocationHandle* handle) {
  if (!handle || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  Handle h{bytes, prop};
  // Hints the driver may decline, as it does here: managed memory is never compressible,
  // nor reachable by GPUDirect RDMA.
  h.prop.allocFlags.compressionType = 0;
  h.prop.allocFlags.gpuDirectRDMACapable = 0;
  const CUmemGenericAllocationHandle value = kHandleTag | next_handle_++;
  handles_.emplace(value, h);
  *handle = value;
  return CUDA_SUCCESS;
}

void VmmEmulation::drop_reference_if_unused(CUmemGenericAllocationHandle handle) {
  auto it = handles_.find(handle);
  if (it != handles_.end() && it->second.references == 0 && it->second.mappings == 0) handles_.erase(it);
}

CUresult VmmEmulation::release(CUmemGenericAllocationHandle handle) {
  std::lock_guard lock(mutex_);
  auto it = handles_.find(handle);
  if (it == handles_.end() || it->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  // Still mapped: the memory stays until the last unmap (the CUDA rule).
  --it->second.references;
  drop_reference_if_unused(handle);
  return CUDA_SUCCESS;
}

CUresult VmmEmulation::map(uint64_t address, uint64_t bytes, uint64_t offset, CUmemGenericAllocationHandle handle) {
  int device = 0;
  if (CUresult r = map_locked(address, bytes, offset, handle, &device)) return r;
  memory_.bring_in(device, address);  // may wait for the device: outside the lock
  return CUDA_SUCCESS;
}

CUresult VmmEmulation::map_locked(uint64_t address, uint64_t bytes, uint64_t offset,
                                  CUmemGenericAllocationHandle handle, int* device) {
  std::lock_guard lock(mutex_);
  auto h = handles_.find(handle);
  if (h == handles_.end() || h->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  // The driver takes offset 0 only, and the handle's whole size.
  if (bytes == 0 || offset != 0 || bytes != h->second.bytes) return CUDA_ERROR_INVALID_VALUE;
  const auto reservation = reservation_of(address, bytes);
  if (reservation == reservations_.end()) return CUDA_ERROR_INVALID_VALUE;
  auto next = mappings_.lower_bound(address);
  if (next != mappings_.end() && next->first < address + bytes) return CUDA_ERROR_INVALID_VALUE;
  if (mapping_at(address) != mappings_.end()) return CUDA_ERROR_INVALID_VALUE;
  // One handle at two addresses would be one memory seen twice: managed memory cannot alias.
  if (h->second.mappings > 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (!memory_.track(h->second.prop.location.id, address, bytes, reservation->first)) return CUDA_ERROR_OUT_OF_MEMORY;
  *device = h->second.prop.location.id;
  mappings_[address] = {bytes, handle};
  ++h->second.mappings;
  mapped_bytes_ += bytes;
  return CUDA_SUCCESS;
}

CUresult VmmEmulation::unmap(uint64_t address, uint64_t bytes) {
  std::vector<Unmapped> unmapped;
  {
    std::lock_guard lock(mutex_);
    if (bytes == 0 || !covered_by_mappings(address, bytes)) return CUDA_ERROR_INVALID_VALUE;
    unmap_all_in(address, bytes, &unmapped);
  }
  for (const Unmapped& u : unmapped) memory_.untrack(u.device, u.address, u.bytes);
  return CUDA_SUCCESS;
}

void VmmEmulation::unmap_all_in(uint64_t address, uint64_t bytes, std::vector<Unmapped>* unmapped) {
  for (auto m = mappings_.lower_bound(address); m != mappings_.end() && m->first < address + bytes;) {
    Handle& h = handles_.at(m->second.handle);
    unmapped->push_back({h.prop.location.id, m->first, m->second.bytes});
    mapped_bytes_ -= m->second.bytes;
    --h.mappings;
    const CUmemGenericAllocationHandle handle = m->second.handle;
    m = mappings_.erase(m);
    drop_reference_if_unused(handle);
  }
}

CUresult VmmEmulation::set_access(uint64_t address, uint64_t bytes, const CUmemAccessDesc* desc, size_t count) {
  if (!desc || count == 0 || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    const auto flags = desc[i].flags;
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(mutex_);
  // Managed memory is reachable from every device already: only the range is checked.
  return covered_by_mappings(address, bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult VmmEmulation::properties(CUmemGenericAllocationHandle handle, CUmemAllocationProp* out) const {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  auto it = handles_.find(handle);
  if (it == handles_.end()) return CUDA_ERROR_INVALID_VALUE;
  *out = it->second.prop;
  return CUDA_SUCCESS;
}

CUresult VmmEmulation::retain(uint64_t address, CUmemGenericAllocationHandle* handle) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  auto m = mapping_at(address);
  if (m == mappings_.end()) return CUDA_ERROR_INVALID_VALUE;
  ++handles_.at(m->second.handle).references;
  *handle = m->second.handle;
  return CUDA_SUCCESS;
}

CUresult VmmEmulation::address_range(uint64_t address, uint64_t* base, uint64_t* bytes) const {
  std::lock_guard lock(mutex_);
  auto m = mapping_at(address);
  if (m == mappings_.end()) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = m->first;
  if (bytes) *bytes = m->second.bytes;
  return CUDA_SUCCESS;
}

uint64_t VmmEmulation::mapped_bytes() const {
  std::lock_guard lock(mutex_);
  return mapped_bytes_;
}

size_t VmmEmulation::live_handles() const {
  std::lock_guard lock(mutex_);
  return handles_.size();
}

}  // namespace pump::interpose
