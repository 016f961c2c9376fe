// SPDX-License-Identifier: Apache-2.0
#include "interpose/hooks/hook.h"

#include "format/hot_path.h"

namespace gmt::interpose {
namespace {

// The device of the last context this thread allocated in: a context's device never changes,
// so while the context generation stands, one driver query per allocation is enough.
struct KnownDevice {
  uint64_t context = 0;
  uint64_t generation = 0;
  int device = -1;
};
thread_local KnownDevice t_known_device __attribute__((tls_model("initial-exec")));

}  // namespace

GMT_HOT_PATH Hook::Current Hook::current() {
  Current current;
  DriverEntryPoints& driver = rt_.entry_points();
  auto get_current = driver.query_as<PFN_cuCtxGetCurrent_v4000>(DriverQuery::cuCtxGetCurrent);
  CUcontext ctx = nullptr;
  if (get_current == nullptr || get_current(&ctx) != CUDA_SUCCESS || ctx == nullptr) {
    return current;
  }
  current.context = reinterpret_cast<uint64_t>(ctx);
  const uint64_t generation = rt_.context_generation();
  if (t_known_device.context == current.context && t_known_device.generation == generation) {
    current.device = t_known_device.device;
    return current;
  }
  auto get_device = driver.query_as<PFN_cuCtxGetDevice_v2000>(DriverQuery::cuCtxGetDevice);
  CUdevice device = -1;
  if (get_device != nullptr && get_device(&device) == CUDA_SUCCESS) {
    current.device = device;
    t_known_device = {current.context, generation, device};
  }
  return current;
}

}  // namespace gmt::interpose
