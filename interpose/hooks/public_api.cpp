// SPDX-License-Identifier: Apache-2.0
// The functions behind include/gpumemtrace.h, which finds them with dlsym: phases without NVTX,
// the framework's own view of a device, its caching allocator's block events, and what its hooks
// say about scopes and tensors (roles and modules, python/gpumemtrace_roles.py).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

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

// A name's id for the records below (a NameRecord the first time it is used in the trace).
GMT_EXPORT uint32_t gpumemtrace_framework_name(const char* text) {
  return Runtime::get().phases().name_id(text != nullptr ? text : "");
}

// A scope entered or left on this thread (format's ScopeRecord). Only once the trace exists: a
// scope alone must not create a file, and what it would place was not recorded.
GMT_EXPORT void gpumemtrace_framework_scope(uint32_t action, uint32_t kind, uint32_t name) {
  Runtime& rt = Runtime::get();
  if (!rt.writer().started()) return;
  rt.phases().ensure_written(name);
  gmt::format::ScopeRecord rec;
  rec.action = action;
  rec.kind = kind;
  rec.name = name;
  rt.writer().record(rec);
}

// The framework's word on `count` tensors' blocks (format's TagRecord): one role, each tensor's
// address and name id (`names` may be null: unnamed).
GMT_EXPORT void gpumemtrace_framework_tags(uint32_t role, uint32_t count, const uint64_t* addresses,
                                           const uint32_t* names) {
  Runtime& rt = Runtime::get();
  if (!rt.writer().started() || addresses == nullptr) return;
  for (uint32_t i = 0; i < count; ++i) {
    gmt::format::TagRecord rec;
    rec.role = role;
    rec.address = addresses[i];
    rec.name = names != nullptr ? names[i] : 0;
    rt.phases().ensure_written(rec.name);
    rt.writer().record(rec);
  }
}

// What the framework's hooks have to say about the recording (roles on, or why not).
GMT_EXPORT void gpumemtrace_framework_note(const char* text) {
  Runtime& rt = Runtime::get();
  if (!rt.writer().started() || text == nullptr) return;
  gmt::format::NoteRecord note;
  note.text = text;
  if (note.text.size() > 900) note.text.resize(900);  // within the record's bound
  rt.writer().record(note);
}

// The trace this process is writing, for tools inside it that read it as it grows (the pytest
// plugin asks the analyzer about each test from it): its path, NUL-terminated, copied into
// `buffer` when `size` holds it; returns the path's length, 0 before the first record (no file
// yet). A length of `size` or more means the buffer was too small and nothing was copied.
GMT_EXPORT size_t gpumemtrace_trace_path(char* buffer, size_t size) {
  const std::string path = Runtime::get().writer().path();
  if (buffer != nullptr && path.size() < size) std::memcpy(buffer, path.c_str(), path.size() + 1);
  return path.size();
}
}
