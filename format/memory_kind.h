// SPDX-License-Identifier: Apache-2.0
// What kind of memory an allocation is. Kinds are kept apart because they count differently:
// only device-resident physical bytes make up a device's usage; reservations, mappings, host
// memory and imports from other processes are reported but never added to it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gmt::format {

// Values are part of the file format: append only, never renumber.
enum class MemoryKind : uint8_t {
  kDevice = 0,          // cuMemAlloc
  kPitched = 1,         // cuMemAllocPitch
  kManaged = 2,         // cuMemAllocManaged
  kHostPinned = 3,      // cuMemAllocHost, cuMemHostAlloc
  kHostRegistered = 4,  // cuMemHostRegister
  kStreamOrdered = 5,   // cuMemAllocAsync, cuMemAllocFromPoolAsync
  kVmmPhysical = 6,     // cuMemCreate
  kVmmReservation = 7,  // cuMemAddressReserve
  kVmmMapping = 8,      // cuMemMap
  kArray = 9,           // cuArrayCreate, cuMipmappedArrayCreate
  kGraphMemory = 10,    // cuGraphAddMemAllocNode
  kIpcImport = 11,      // cuIpcOpenMemHandle, external memory
  kHostVmm = 12,        // cuMemCreate of host memory (a host location, as NCCL does)
};

inline constexpr uint8_t kMemoryKindCount = 13;

std::string_view memory_kind_name(MemoryKind kind);
// Inline: the reader calls it for every allocation record.
inline std::optional<MemoryKind> memory_kind_from_raw(uint64_t raw) {
  if (raw >= kMemoryKindCount) return std::nullopt;
  return static_cast<MemoryKind>(raw);
}

// True for kinds whose bytes occupy the device's physical memory on behalf of this process:
// device, pitched, stream-ordered, VMM physical, arrays and graph memory. Managed memory
// migrates and is reported as its own kind. Inline, like host_memory(): the replay asks for
// every allocation and free.
inline bool counts_toward_device_usage(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice:
    case MemoryKind::kPitched:
    case MemoryKind::kStreamOrdered:
    case MemoryKind::kVmmPhysical:
    case MemoryKind::kArray:
    case MemoryKind::kGraphMemory:
      return true;
    case MemoryKind::kManaged:  // migrates between host and device: reported on its own
    case MemoryKind::kHostPinned:
    case MemoryKind::kHostRegistered:
    case MemoryKind::kVmmReservation:
    case MemoryKind::kVmmMapping:
    case MemoryKind::kIpcImport:
    case MemoryKind::kHostVmm:
      return false;
  }
  return false;
}

// Pinned or registered host memory: reported per process, not per device.
inline bool host_memory(MemoryKind kind) {
  return kind == MemoryKind::kHostPinned || kind == MemoryKind::kHostRegistered ||
         kind == MemoryKind::kHostVmm;
}

// Kinds that a context owns and that go when it is destroyed.
bool owned_by_context(MemoryKind kind);

}  // namespace gmt::format
