#include "interpose/hooks/hook.h"

namespace gmt::interpose {

Hook::Current Hook::current() {
  Current current;
  DriverEntryPoints& driver = rt_.entry_points();
  auto get_current = driver.query_as<PFN_cuCtxGetCurrent_v4000>(DriverQuery::cuCtxGetCurrent);
  auto get_device = driver.query_as<PFN_cuCtxGetDevice_v2000>(DriverQuery::cuCtxGetDevice);
  CUcontext ctx = nullptr;
  if (get_current != nullptr && get_current(&ctx) == CUDA_SUCCESS && ctx != nullptr) {
    current.context = reinterpret_cast<uint64_t>(ctx);
    CUdevice device = -1;
    if (get_device != nullptr && get_device(&device) == CUDA_SUCCESS) current.device = device;
  }
  return current;
}

}  // namespace gmt::interpose
