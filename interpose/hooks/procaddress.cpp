// SPDX-License-Identifier: Apache-2.0
// cuGetProcAddress, both ABIs. Every cudart (shared and static), NCCL, cuBLAS, cuDNN and XLA
// fetch the driver through it, starting by asking it for "cuGetProcAddress" itself (at 11030
// for the 4-argument ABI, at 12000 for the 5-argument one): each answer is passed through
// DriverEntryPoints::wrap, so the request for itself comes back as our wrapper too.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/lookup_log.h"
#include "interpose/hooks/wrappers.h"

using gmt::interpose::Hook;

namespace {

void wrap_answer(Hook& hook, const char* via, const char* symbol, int cuda_version,
                 cuuint64_t flags, CUresult result, void** pfn) {
  if (result == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    void* driver_function = *pfn;
    *pfn = hook.runtime().entry_points().wrap(driver_function);
    gmt::interpose::log_driver_lookup(via, symbol, cuda_version, flags, driver_function, *pfn);
  }
}

}  // namespace

extern "C" {

CUresult gmt_cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuGetProcAddress)(symbol, pfn, cuda_version, flags);
  wrap_answer(hook, "cuGetProcAddress", symbol, cuda_version, flags, result, pfn);
  return result;
}

CUresult gmt_cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult* status) {
  Hook hook;
  const CUresult result =
      GMT_REAL(hook, cuGetProcAddress_v2)(symbol, pfn, cuda_version, flags, status);
  wrap_answer(hook, "cuGetProcAddress_v2", symbol, cuda_version, flags, result, pfn);
  return result;
}

GMT_EXPORT_WRAPPER(cuGetProcAddress)
GMT_EXPORT_WRAPPER(cuGetProcAddress_v2)
}
