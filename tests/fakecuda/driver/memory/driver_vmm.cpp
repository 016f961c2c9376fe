// SPDX-License-Identifier: Apache-2.0
// Virtual memory management: physical handles (cuMemCreate/cuMemRelease) that count on their
// device, address reservations (cuMemAddressReserve/Free) and mappings (cuMemMap/Unmap) that
// do not. A handle's memory is freed once it is released and no longer mapped anywhere, as in
// the real driver; one handle may be mapped several times.
#include <iterator>
#include <map>

#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

struct PhysicalHandle {
  int device = 0;
  uint64_t size = 0;
  int references = 1;  // cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease
  int mappings = 0;
  CUmemAllocationProp prop{};
};

struct Mapping {
  uint64_t size = 0;
  uint64_t offset = 0;
  CUmemGenericAllocationHandle handle = 0;
};

struct Reservation {
  uint64_t size = 0;
  std::map<uint64_t, Mapping> mappings;  // by address
};

// Guarded by the driver lock like everything else.
struct VmmState {
  std::map<CUmemGenericAllocationHandle, PhysicalHandle> handles;
  std::map<uint64_t, Reservation> reservations;  // by base address
  CUmemGenericAllocationHandle next_handle = 0x100001;
};

VmmState& vmm() {
  static auto* instance = new VmmState;
  return *instance;
}

CUresult validate_prop(const State& s, const CUmemAllocationProp* prop) {
  if (prop == nullptr || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
  if (CUresult r = require_device(s, prop->location.id); r != CUDA_SUCCESS) {
    return r == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_VALUE : r;
  }
  return CUDA_SUCCESS;
}

void free_if_unused(State& s, std::map<CUmemGenericAllocationHandle, PhysicalHandle>::iterator it) {
  if (it->second.references > 0 || it->second.mappings > 0) return;
  s.devices[static_cast<size_t>(it->second.device)].resident -= it->second.size;
  vmm().handles.erase(it);
}

void drop_mapping(State& s, const Mapping& mapping) {
  auto handle = vmm().handles.find(mapping.handle);
  if (handle == vmm().handles.end()) return;
  handle->second.mappings -= 1;
  free_if_unused(s, handle);
}

// The reservation holding all of [address, address + size).
Reservation* find_reservation(uint64_t address, uint64_t size, uint64_t* base) {
  auto& reservations = vmm().reservations;
  auto it = reservations.upper_bound(address);
  if (it == reservations.begin()) return nullptr;
  --it;
  uint64_t offset = address - it->first;
  if (offset >= it->second.size || size > it->second.size - offset) return nullptr;
  *base = it->first;
  return &it->second;
}

bool aligned(uint64_t value) {
  return value % kVmmGranularity == 0;
}

}  // namespace

namespace fakecuda {

bool find_vmm_mapping(State& s, uint64_t address, int* device, uint64_t* base, uint64_t* size) {
  (void)s;
  uint64_t reservation_base = 0;
  Reservation* reservation = find_reservation(address, 1, &reservation_base);
  if (reservation == nullptr) return false;
  auto it = reservation->mappings.upper_bound(address);
  if (it == reservation->mappings.begin()) return false;
  --it;
  if (address - it->first >= it->second.size) return false;
  *device = vmm().handles.at(it->second.handle).device;
  *base = it->first;
  *size = it->second.size;
  return true;
}

}  // namespace fakecuda

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = validate_prop(s, prop); r != CUDA_SUCCESS) return r;
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || flags != 0 || size == 0 || !aligned(size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = validate_prop(s, prop); r != CUDA_SUCCESS) return r;
  DeviceState& d = s.devices[static_cast<size_t>(prop->location.id)];
  if (!fits(s, d, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  PhysicalHandle physical;
  physical.device = prop->location.id;
  physical.size = size;
  physical.prop = *prop;
  CUmemGenericAllocationHandle created = vmm().next_handle++;
  vmm().handles.emplace(created, physical);
  d.resident += size;
  *handle = created;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto it = vmm().handles.find(handle);
  if (it == vmm().handles.end() || it->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  it->second.references -= 1;
  free_if_unused(s, it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  uint64_t reservation_base = 0;
  uint64_t address = reinterpret_cast<uint64_t>(addr);
  Reservation* reservation = find_reservation(address, 1, &reservation_base);
  if (reservation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = reservation->mappings.upper_bound(address);
  if (it == reservation->mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (address - it->first >= it->second.size) return CUDA_ERROR_INVALID_VALUE;
  vmm().handles.at(it->second.handle).references += 1;
  *handle = it->second.handle;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto it = vmm().handles.find(handle);
  if (it == vmm().handles.end()) return CUDA_ERROR_INVALID_VALUE;
  *prop = it->second.prop;
  return CUDA_SUCCESS;
}

// `addr` is a hint, honoured when that range is free.
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  (void)flags;
  if (ptr == nullptr || size == 0 || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t effective_alignment = alignment < kVmmGranularity ? kVmmGranularity : alignment;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  uint64_t base = 0;
  if (addr != 0 && addr % effective_alignment == 0 && s.vmm_space.allocate_at(addr, size)) {
    base = addr;
  } else {
    std::optional<uint64_t> found = s.vmm_space.allocate(size, effective_alignment);
    if (!found) return CUDA_ERROR_OUT_OF_MEMORY;
    base = *found;
  }
  vmm().reservations[base].size = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

// Mappings still inside the range are dropped with it.
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto it = vmm().reservations.find(ptr);
  if (it == vmm().reservations.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
  Reservation reservation = std::move(it->second);
  vmm().reservations.erase(it);
  for (const auto& [address, mapping] : reservation.mappings) drop_mapping(s, mapping);
  s.vmm_space.release(ptr, size);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (flags != 0 || size == 0 || !aligned(ptr) || !aligned(size) || !aligned(offset)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto physical = vmm().handles.find(handle);
  if (physical == vmm().handles.end() || physical->second.references == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (offset > physical->second.size || size > physical->second.size - offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t reservation_base = 0;
  Reservation* reservation = find_reservation(ptr, size, &reservation_base);
  if (reservation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto next = reservation->mappings.lower_bound(ptr);
  if (next != reservation->mappings.end() && next->first < ptr + size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (next != reservation->mappings.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
  }
  reservation->mappings.emplace(ptr, Mapping{size, offset, handle});
  physical->second.mappings += 1;
  return CUDA_SUCCESS;
}

// Unmaps every mapping inside [ptr, ptr + size); a mapping cut in two is an error.
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  uint64_t reservation_base = 0;
  Reservation* reservation = find_reservation(ptr, size, &reservation_base);
  if (reservation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto first = reservation->mappings.lower_bound(ptr);
  if (first != reservation->mappings.begin()) {
    auto previous = std::prev(first);
    if (previous->first + previous->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
  }
  auto last = first;
  while (last != reservation->mappings.end() && last->first < ptr + size) {
    if (last->first + last->second.size > ptr + size) return CUDA_ERROR_INVALID_VALUE;
    ++last;
  }
  if (first == last) return CUDA_ERROR_INVALID_VALUE;
  for (auto it = first; it != last; ++it) drop_mapping(s, it->second);
  reservation->mappings.erase(first, last);
  return CUDA_SUCCESS;
}

// Access control has no effect in the fake; only the range is checked.
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
  if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  uint64_t reservation_base = 0;
  return find_reservation(ptr, size, &reservation_base) != nullptr ? CUDA_SUCCESS
                                                                   : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
