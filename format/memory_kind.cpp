// SPDX-License-Identifier: Apache-2.0
#include "format/memory_kind.h"

namespace gmt::format {

std::string_view memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice:
      return "device";
    case MemoryKind::kPitched:
      return "pitched";
    case MemoryKind::kManaged:
      return "managed";
    case MemoryKind::kHostPinned:
      return "host_pinned";
    case MemoryKind::kHostRegistered:
      return "host_registered";
    case MemoryKind::kStreamOrdered:
      return "stream_ordered";
    case MemoryKind::kVmmPhysical:
      return "vmm_physical";
    case MemoryKind::kVmmReservation:
      return "vmm_reservation";
    case MemoryKind::kVmmMapping:
      return "vmm_mapping";
    case MemoryKind::kArray:
      return "array";
    case MemoryKind::kGraphMemory:
      return "graph_memory";
    case MemoryKind::kIpcImport:
      return "ipc_import";
    case MemoryKind::kHostVmm:
      return "host_vmm";
  }
  return "unknown";
}

bool owned_by_context(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice:
    case MemoryKind::kPitched:
    case MemoryKind::kManaged:
    case MemoryKind::kHostPinned:
    case MemoryKind::kHostRegistered:
    case MemoryKind::kArray:
    case MemoryKind::kIpcImport:
      return true;
    // Pools, physical VMM handles, reservations, their mappings and graph memory belong to the
    // device and outlive any context.
    case MemoryKind::kStreamOrdered:
    case MemoryKind::kVmmPhysical:
    case MemoryKind::kVmmReservation:
    case MemoryKind::kVmmMapping:
    case MemoryKind::kGraphMemory:
    case MemoryKind::kHostVmm:
      return false;
  }
  return false;
}

}  // namespace gmt::format
