// SPDX-License-Identifier: Apache-2.0
// NVTX's payload extension (nvToolsExtPayload.h): ranges pushed, popped, started or ended with
// payloads. NCCL closes its own API ranges with nvtxRangePopPayload once it has attached a
// payload; without these handlers those pops would be lost and NCCL's ranges would stay open.
// NVTX finds InitializeInjectionNvtxExtension in the library NVTX_INJECTION64_PATH names.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <cstdint>

#include "interpose/export.h"
#include "interpose/runtime.h"

namespace {

using gmt::interpose::PhaseRecorder;
using gmt::interpose::Runtime;

// The extension module ABI (nvtxDetail/nvtxExtTypes.h), and the payload module's ids and slots
// (nvToolsExtPayload.h); restated so that the extension's inline implementation stays out.
struct ModuleSegment {
  size_t segment_id;
  size_t slot_count;
  intptr_t* function_slots;
};
struct ModuleInfo {
  uint16_t nvtx_version;
  uint16_t struct_size;
  uint16_t module_id;
  uint16_t compat_id;
  size_t segments_count;
  ModuleSegment* segments;
  void* get_export_function;
  const void* ext_info;
};
constexpr uint16_t kPayloadModule = 2;
constexpr size_t kMarkPayload = 2;
constexpr size_t kRangePushPayload = 3;
constexpr size_t kRangePopPayload = 4;
constexpr size_t kRangeStartPayload = 5;
constexpr size_t kRangeEndPayload = 6;

struct PayloadData;  // opaque: payloads are not interpreted

PhaseRecorder& phases() {
  return Runtime::get().phases();
}
uint32_t id_of(const void* handle) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle));
}
// A payload-only event carries its name, if any, in a schema we do not decode.
uint32_t unnamed() {
  return phases().name_id("(payload range)");
}

void mark(nvtxDomainHandle_t d, const PayloadData*, size_t) {
  phases().mark(id_of(d), phases().name_id("(payload mark)"));
}
int push(nvtxDomainHandle_t d, const PayloadData*, size_t) {
  return phases().push(id_of(d), unnamed());
}
int pop(nvtxDomainHandle_t d, const PayloadData*, size_t) {
  return phases().pop(id_of(d));
}
nvtxRangeId_t start(nvtxDomainHandle_t d, const PayloadData*, size_t) {
  return phases().start(id_of(d), unnamed());
}
void end(nvtxDomainHandle_t, nvtxRangeId_t id, const PayloadData*, size_t) {
  phases().end(id);
}

template <class Fn>
void install(ModuleSegment& segment, size_t slot, Fn fn) {
  if (slot < segment.slot_count) segment.function_slots[slot] = reinterpret_cast<intptr_t>(fn);
}

}  // namespace

// Returns 1 for the payload module it handles; other extensions are declined (0) and stay
// no-ops for the program.
extern "C" GMT_EXPORT int InitializeInjectionNvtxExtension(ModuleInfo* info) {
  if (info == nullptr || info->module_id != kPayloadModule || info->segments_count == 0 ||
      info->segments == nullptr || info->segments[0].function_slots == nullptr) {
    return 0;
  }
  ModuleSegment& segment = info->segments[0];
  install(segment, kMarkPayload, &mark);
  install(segment, kRangePushPayload, &push);
  install(segment, kRangePopPayload, &pop);
  install(segment, kRangeStartPayload, &start);
  install(segment, kRangeEndPayload, &end);
  return 1;
}
