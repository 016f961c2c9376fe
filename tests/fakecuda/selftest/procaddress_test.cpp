// SPDX-License-Identifier: Apache-2.0
// cuGetProcAddress ABI selection: by version, by stream flags, for unknown names, in both ABIs.
// cuGetProcAddress needs no cuInit, so these run in the test process itself.
#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

struct Lookup {
  CUresult result;
  void* function;
  CUdriverProcAddressQueryResult status;
};

Lookup lookup(const char* name, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  Lookup answer{CUDA_ERROR_UNKNOWN, reinterpret_cast<void*>(1),
                static_cast<CUdriverProcAddressQueryResult>(-1)};
  answer.result = cuGetProcAddress_v2(name, &answer.function, version, flags, &answer.status);
  return answer;
}

void expect_found(const char* name, int version, cuuint64_t flags, const char* exported) {
  Lookup answer = lookup(name, version, flags);
  ASSERT_NE(driver_symbol(exported), nullptr) << exported;
  EXPECT_EQ(answer.result, CUDA_SUCCESS) << name << "@" << version;
  EXPECT_EQ(answer.status, CU_GET_PROC_ADDRESS_SUCCESS) << name << "@" << version;
  EXPECT_EQ(answer.function, driver_symbol(exported))
      << name << "@" << version << " flags " << flags << " should be " << exported;
}

TEST(ProcAddress, NewestAbiAtOrBeforeTheRequestedVersion) {
  expect_found("cuMemAlloc", 2000, 0, "cuMemAlloc");
  expect_found("cuMemAlloc", 3010, 0, "cuMemAlloc");
  expect_found("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
  expect_found("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
  expect_found("cuMemFree", 2000, 0, "cuMemFree");
  expect_found("cuMemFree", 12000, 0, "cuMemFree_v2");
  expect_found("cuMemHostRegister", 6040, 0, "cuMemHostRegister");
  expect_found("cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2");
  expect_found("cuDevicePrimaryCtxReset", 10020, 0, "cuDevicePrimaryCtxReset");
  expect_found("cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2");
  expect_found("cuIpcOpenMemHandle", 4010, 0, "cuIpcOpenMemHandle");
  expect_found("cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2");
  expect_found("cuCtxCreate", 3020, 0, "cuCtxCreate_v2");
  expect_found("cuCtxCreate", 11040, 0, "cuCtxCreate_v3");
  expect_found("cuCtxCreate", 12050, 0, "cuCtxCreate_v4");
  expect_found("cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2");
  expect_found("cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags");
  expect_found("cuCtxSynchronize", 12090, 0, "cuCtxSynchronize");
  expect_found("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
}

TEST(ProcAddress, CuGetProcAddressItselfHasTwoAbis) {
  expect_found("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
  expect_found("cuGetProcAddress", 11080, 0, "cuGetProcAddress");
  expect_found("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
  expect_found("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2");
  Lookup too_old = lookup("cuGetProcAddress", 11020);
  EXPECT_EQ(too_old.result, CUDA_SUCCESS);
  EXPECT_EQ(too_old.function, nullptr);
  EXPECT_EQ(too_old.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST(ProcAddress, PerThreadFlagSelectsThePtszVariantWhereOneExists) {
  expect_found("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemAllocAsync");
  expect_found("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemAllocAsync");
  expect_found("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
               "cuMemAllocAsync_ptsz");
  expect_found("cuMemFreeAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
               "cuMemFreeAsync_ptsz");
  expect_found("cuMemAllocFromPoolAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
               "cuMemAllocFromPoolAsync_ptsz");
  expect_found("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
               "cuMemcpyHtoD_v2_ptds");
  expect_found("cuMemcpyHtoD", 2000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD");
  expect_found("cuGraphLaunch", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
               "cuGraphLaunch_ptsz");
  // No per-thread variant: the normal one.
  expect_found("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAlloc_v2");
}

TEST(ProcAddress, UnknownNameIsSuccessWithNullAndSymbolNotFound) {
  for (const char* name : {"cuDoesNotExist", "cuMemAlloc_v2", "", "cudaMalloc"}) {
    Lookup answer = lookup(name, 13000);
    EXPECT_EQ(answer.result, CUDA_SUCCESS) << name;
    EXPECT_EQ(answer.function, nullptr) << name;
    EXPECT_EQ(answer.status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) << name;
  }
}

TEST(ProcAddress, KnownNameOlderThanItsFirstAbiIsVersionNotSufficient) {
  Lookup answer = lookup("cuMemAllocAsync", 11010);
  EXPECT_EQ(answer.result, CUDA_SUCCESS);
  EXPECT_EQ(answer.function, nullptr);
  EXPECT_EQ(answer.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST(ProcAddress, InvalidArguments) {
  void* function = nullptr;
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", &function, 13000, 3, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", &function, 13010, 0, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2(nullptr, &function, 13000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", nullptr, 13000, 0, nullptr),
            CUDA_ERROR_INVALID_VALUE);
}

TEST(ProcAddress, LegacyFourArgumentAbi) {
  auto legacy = reinterpret_cast<PFN_cuGetProcAddress_v11030>(driver_symbol("cuGetProcAddress"));
  ASSERT_NE(legacy, nullptr);
  void* function = nullptr;
  ASSERT_EQ(legacy("cuMemAlloc", &function, 3020, 0), CUDA_SUCCESS);
  EXPECT_EQ(function, driver_symbol("cuMemAlloc_v2"));
  ASSERT_EQ(legacy("cuMemAlloc", &function, 2000, 0), CUDA_SUCCESS);
  EXPECT_EQ(function, driver_symbol("cuMemAlloc"));
  ASSERT_EQ(legacy("cuMemGetInfo", &function, 11030, 0), CUDA_SUCCESS);
  EXPECT_EQ(function, driver_symbol("cuMemGetInfo_v2"));
  ASSERT_EQ(legacy("cuGetProcAddress", &function, 12000, 0), CUDA_SUCCESS);
  EXPECT_EQ(function, driver_symbol("cuGetProcAddress_v2"));
  function = reinterpret_cast<void*>(1);
  ASSERT_EQ(legacy("cuDoesNotExist", &function, 13000, 0), CUDA_SUCCESS);
  EXPECT_EQ(function, nullptr);
}

}  // namespace
}  // namespace fakecuda_test
