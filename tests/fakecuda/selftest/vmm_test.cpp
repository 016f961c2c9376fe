// SPDX-License-Identifier: Apache-2.0
// Virtual memory management: physical handles count, reservations and mappings do not; memory
// goes when its handle is released and unmapped everywhere.
#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

CUmemAllocationProp device_prop(int device = 0) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  return prop;
}

TEST(Vmm, HandlesCountUntilReleasedAndUnmapped) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUmemAllocationProp prop = device_prop();
    size_t granularity = 0;
    ASSERT_EQ(
        cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        CUDA_SUCCESS);
    EXPECT_EQ(granularity, 2 * kMiB);
    CUmemGenericAllocationHandle handle = 0;
    ASSERT_EQ(cuMemCreate(&handle, 4 * kMiB, &prop, 0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 4 * kMiB);
    CUdeviceptr va = 0;
    ASSERT_EQ(cuMemAddressReserve(&va, 16 * kMiB, 0, 0, 0), CUDA_SUCCESS);
    EXPECT_EQ(va % (2 * kMiB), 0u);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 4 * kMiB);  // reservations are not usage
    // One handle mapped twice.
    ASSERT_EQ(cuMemMap(va, 4 * kMiB, 0, handle, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemMap(va + 8 * kMiB, 2 * kMiB, 2 * kMiB, handle, 0), CUDA_SUCCESS);
    EXPECT_EQ(cuMemMap(va + 2 * kMiB, 2 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT_EQ(cuMemSetAccess(va, 4 * kMiB, &access, 1), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 4 * kMiB);
    int device = -1;
    ASSERT_EQ(cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 100),
              CUDA_SUCCESS);
    EXPECT_EQ(device, 0);
    CUmemGenericAllocationHandle retained = 0;
    ASSERT_EQ(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(va + 8 * kMiB)),
              CUDA_SUCCESS);
    EXPECT_EQ(retained, handle);
    ASSERT_EQ(cuMemRelease(retained), CUDA_SUCCESS);
    ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 4 * kMiB);  // still mapped
    ASSERT_EQ(cuMemUnmap(va, 4 * kMiB), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 4 * kMiB);
    EXPECT_EQ(cuMemUnmap(va, 4 * kMiB), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuMemUnmap(va + 8 * kMiB, 2 * kMiB), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    EXPECT_EQ(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemAddressFree(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);  // size must match
    EXPECT_EQ(cuMemAddressFree(va, 16 * kMiB), CUDA_SUCCESS);
  });
}

TEST(Vmm, SizesAndCapacityAreChecked) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}, {"FAKECUDA_DEVICE_MEMORY", "6M"}}, [] {
    init_primary();
    CUmemAllocationProp prop = device_prop();
    CUmemGenericAllocationHandle a = 0, b = 0;
    EXPECT_EQ(cuMemCreate(&a, kMiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuMemCreate(&a, 4 * kMiB, &prop, 0), CUDA_SUCCESS);
    EXPECT_EQ(cuMemCreate(&b, 4 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CUmemAllocationProp bad = device_prop(5);
    EXPECT_EQ(cuMemCreate(&b, 2 * kMiB, &bad, 0), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr va = 0;
    // Reserving far more than the device holds is fine (PyTorch reserves total + 1/8).
    ASSERT_EQ(cuMemAddressReserve(&va, 64 * kMiB, 0, 0, 0), CUDA_SUCCESS);
    CUdeviceptr hinted = 0;
    ASSERT_EQ(cuMemAddressReserve(&hinted, 2 * kMiB, 0, va + 64 * kMiB, 0), CUDA_SUCCESS);
    EXPECT_EQ(hinted, va + 64 * kMiB);
  });
}

}  // namespace
}  // namespace fakecuda_test
