// SPDX-License-Identifier: Apache-2.0
// The functions behind include/gpumemtrace.h, which finds them with dlsym: phases without NVTX,
// and the framework's own view of a device.
#include <cstdint>

#include "interpose/export.h"
#include "interpose/runtime.h"

using gmt::interpose::Runtime;

extern "C" {

GMT_EXPORT int gpumemtrace_phase_push(const char* name) {
  auto& phases = Runtime::get().phases();
  return phases.push(0, phases.name_id(name != nullptr ? name : ""));
}

GMT_EXPORT int gpumemtrace_phase_pop() {
  return Runtime::get().phases().pop(0);
}

GMT_EXPORT void gpumemtrace_phase_mark(const char* name) {
  auto& phases = Runtime::get().phases();
  phases.mark(0, phases.name_id(name != nullptr ? name : ""));
}

// Only once the trace exists: a framework view alone must not create a file.
GMT_EXPORT void gpumemtrace_framework_view(int device, uint64_t allocated, uint64_t reserved) {
  Runtime& rt = Runtime::get();
  if (rt.writer().started()) rt.sampler().framework_view(device, allocated, reserved);
}
}
