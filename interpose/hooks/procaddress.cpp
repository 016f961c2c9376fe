// cuGetProcAddress, both ABIs. Every cudart (shared and static), NCCL, cuBLAS, cuDNN and XLA
// fetch the driver through it, starting by asking it for "cuGetProcAddress" itself (at 11030
// for the 4-argument ABI, at 12000 for the 5-argument one): each answer is passed through
// DriverEntryPoints::wrap, so the request for itself comes back as our wrapper too.
#include "interpose/export.h"
#include "interpose/hooks/lookup_log.h"
#include "interpose/hooks/wrappers.h"
#include "interpose/runtime.h"

namespace {

using gmt::interpose::EntryPoint;
using gmt::interpose::Runtime;

void wrap_answer(const char* via, const char* symbol, int cuda_version, cuuint64_t flags,
                 CUresult result, void** pfn) {
  if (result == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    void* driver_function = *pfn;
    *pfn = Runtime::get().entry_points().wrap(driver_function);
    gmt::interpose::log_driver_lookup(via, symbol, cuda_version, flags, driver_function, *pfn);
  }
}

}  // namespace

extern "C" {

CUresult gmt_cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  auto real = Runtime::get().entry_points().real_as<PFN_cuGetProcAddress_v11030>(
      EntryPoint::kCuGetProcAddress);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult result = real(symbol, pfn, cuda_version, flags);
  wrap_answer("cuGetProcAddress", symbol, cuda_version, flags, result, pfn);
  return result;
}

CUresult gmt_cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult* status) {
  auto real = Runtime::get().entry_points().real_as<PFN_cuGetProcAddress_v12000>(
      EntryPoint::kCuGetProcAddress_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult result = real(symbol, pfn, cuda_version, flags, status);
  wrap_answer("cuGetProcAddress_v2", symbol, cuda_version, flags, result, pfn);
  return result;
}

// For programs linked with -lcuda: the preload comes first, so these names bind to us.
GMT_EXPORT CUresult cuGetProcAddress(const char*, void**, int, cuuint64_t)
    __attribute__((alias("gmt_cuGetProcAddress")));
GMT_EXPORT CUresult cuGetProcAddress_v2(const char*, void**, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult*)
    __attribute__((alias("gmt_cuGetProcAddress_v2")));
}
