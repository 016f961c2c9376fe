// SPDX-License-Identifier: Apache-2.0
#include "interpose/hooks/entry_points.h"

#include <dlfcn.h>

#include "format/hot_path.h"
#include "interpose/common/real_dlsym.h"
#include "interpose/hooks/wrappers.h"

namespace gmt::interpose {
namespace {

struct EntryPointInfo {
  const char* symbol;
  void* wrapper;
};

#define GMT_ENTRY_POINT_INFO(name) {#name, reinterpret_cast<void*>(&gmt_##name)},
const EntryPointInfo kWrapped[] = {GMT_DRIVER_ENTRY_POINTS(GMT_ENTRY_POINT_INFO)};
#undef GMT_ENTRY_POINT_INFO

#define GMT_QUERY_NAME(name) #name,
const char* const kQueryNames[] = {GMT_DRIVER_QUERIES(GMT_QUERY_NAME)};
#undef GMT_QUERY_NAME

}  // namespace

// libcuda is loaded RTLD_LOCAL by its users, so RTLD_NEXT cannot see it; a NOLOAD open finds
// the copy already in the process (by soname) without ever loading one ourselves. A lookup
// through its handle searches libcuda and its dependencies only, never the preload, so it
// yields the driver's functions, not our wrappers.
void DriverEntryPoints::resolve() {
  if (resolved_.load(std::memory_order_acquire)) return;
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  DlsymFn lookup = real_dlsym();
  if (libcuda == nullptr || lookup == nullptr) return;  // not loaded yet: try again later
  for (std::size_t i = 0; i < kEntryPoints; ++i) {
    real_[i].store(lookup(libcuda, kWrapped[i].symbol), std::memory_order_relaxed);
  }
  for (std::size_t i = 0; i < kQueries; ++i) {
    queries_[i].store(lookup(libcuda, kQueryNames[i]), std::memory_order_relaxed);
  }
  resolved_.store(true, std::memory_order_release);
  // The handle stays open: the driver is never unloaded while its functions are in use.
}

GMT_HOT_PATH void* DriverEntryPoints::real(EntryPoint ep) {
  const auto index = static_cast<std::size_t>(ep);
  if (void* fn = real_[index].load(std::memory_order_acquire)) return fn;
  resolve();
  return real_[index].load(std::memory_order_acquire);
}

GMT_HOT_PATH void* DriverEntryPoints::query(DriverQuery q) {
  const auto index = static_cast<std::size_t>(q);
  if (void* fn = queries_[index].load(std::memory_order_acquire)) return fn;
  resolve();
  return queries_[index].load(std::memory_order_acquire);
}

void* DriverEntryPoints::wrap(void* driver_function) {
  resolve();
  for (std::size_t i = 0; i < kEntryPoints; ++i) {
    if (driver_function == real_[i].load(std::memory_order_acquire)) return kWrapped[i].wrapper;
  }
  return driver_function;
}

}  // namespace gmt::interpose
