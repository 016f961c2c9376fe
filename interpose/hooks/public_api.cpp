// SPDX-License-Identifier: Apache-2.0
// The functions behind include/gpumemtrace.h, which finds them with dlsym: phases without NVTX,
// the framework's own view of a device, and its caching allocator's block events.
#include <cstdint>

#include "format/hot_path.h"
#include "interpose/common/depth_guard.h"
#include "interpose/export.h"
#include "interpose/runtime.h"

using gmt::interpose::DepthGuard;
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

// A caching allocator's block event (gpumemtrace.h). An event that starts something (a block, a
// segment, an OOM) may create the trace, as an allocation does; one that ends something is
// recorded only once the trace exists (what it ends was made before, and is not in the trace).
// Called from inside one of our hooks (an allocator driven by a driver call), it passes through.
GMT_EXPORT GMT_HOT_PATH void gpumemtrace_framework_block(uint32_t allocator, uint32_t action,
                                                         int32_t device, uint64_t address,
                                                         uint64_t size, uint64_t stream) {
  DepthGuard guard;
  if (!guard.outermost()) return;
  Runtime& rt = Runtime::get();
  const bool starts = action == 0 || action == 3 || action == 5 || action == 7;
  if (!starts && !rt.writer().started()) return;
  rt.torch_tracker().before_block();
  rt.events().block(allocator, action, device, address, size, stream);
}
}
