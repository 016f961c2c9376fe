// SPDX-License-Identifier: Apache-2.0
// Contexts: per-thread current context, overhead accounting, and teardown freeing allocations.
#include <thread>

#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

TEST(Contexts, DestroyingAContextFreesEverythingItOwns) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "100M"}}, [] {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUcontext ctx = nullptr;
    ASSERT_EQ(cuCtxCreate_v4(&ctx, nullptr, 0, 0), CUDA_SUCCESS);
    CUcontext current = nullptr;
    ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    EXPECT_EQ(current, ctx);  // cuCtxCreate makes it current
    EXPECT_EQ(fakecuda_live_context_count(0), 1);
    CUdeviceptr device = 0, managed = 0, async = 0;
    void* pinned = nullptr;
    ASSERT_EQ(cuMemAlloc_v2(&device, 10 * kMiB), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAllocManaged(&managed, kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAllocAsync(&async, 2 * kMiB, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuMemHostAlloc(&pinned, kMiB, 0), CUDA_SUCCESS);
    CUDA_ARRAY_DESCRIPTOR descriptor{256, 256, CU_AD_FORMAT_FLOAT, 1};
    CUarray array = nullptr;
    ASSERT_EQ(cuArrayCreate_v2(&array, &descriptor), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 100 * kMiB + 13 * kMiB + 256 * 256 * 4);

    ASSERT_EQ(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    EXPECT_EQ(fakecuda_live_context_count(0), 0);
    ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    EXPECT_EQ(current, nullptr);  // popped
    EXPECT_EQ(cuCtxDestroy_v2(ctx), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    init_primary();
    EXPECT_EQ(cuMemFree_v2(device), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
  });
}

TEST(Contexts, PrimaryContextIsReferenceCountedAndResetFreesItsMemory) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "64M"}}, [] {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUcontext first = nullptr, second = nullptr;
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&first, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&second, 0), CUDA_SUCCESS);
    EXPECT_EQ(first, second);
    ASSERT_EQ(cuCtxSetCurrent(first), CUDA_SUCCESS);
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc_v2(&p, kMiB), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 64 * kMiB + kMiB);  // one reference left
    ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    unsigned flags = 0;
    int active = 1;
    ASSERT_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    EXPECT_EQ(active, 0);
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(cuMemAlloc_v2(&p, kMiB), CUDA_ERROR_CONTEXT_IS_DESTROYED);  // still current

    // Reset frees everything whatever the reference count.
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&first, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&first, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc_v2(&p, 3 * kMiB), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 64 * kMiB + 3 * kMiB);
    ASSERT_EQ(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    EXPECT_EQ(fakecuda_live_context_count(0), 0);
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
  });
}

TEST(Contexts, EachContextCostsItsOverhead) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "10M"}, {"FAKECUDA_DEVICE_MEMORY", "25M"}}, [] {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUcontext a = nullptr, b = nullptr, c = nullptr;
    ASSERT_EQ(cuCtxCreate_v2(&a, 0, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxCreate_v2(&b, 0, 0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 20 * kMiB);
    EXPECT_EQ(fakecuda_live_context_count(0), 2);
    EXPECT_EQ(cuCtxCreate_v2(&c, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(cuCtxDestroy_v2(b), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 10 * kMiB);
  });
}

TEST(Contexts, CurrentContextIsPerThreadAndStacked) {
  run_scenario({}, [] {
    CUcontext primary = init_primary();
    CUcontext other = nullptr;
    ASSERT_EQ(cuCtxCreate_v2(&other, 0, 0), CUDA_SUCCESS);  // pushed on top
    CUcontext popped = nullptr, current = nullptr;
    ASSERT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    EXPECT_EQ(popped, other);
    ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    EXPECT_EQ(current, primary);
    ASSERT_EQ(cuCtxPushCurrent_v2(other), CUDA_SUCCESS);
    CUdevice device = -1;
    ASSERT_EQ(cuCtxGetDevice(&device), CUDA_SUCCESS);
    EXPECT_EQ(device, 0);
    std::thread([] {
      CUcontext seen = reinterpret_cast<CUcontext>(1);
      EXPECT_EQ(cuCtxGetCurrent(&seen), CUDA_SUCCESS);
      EXPECT_EQ(seen, nullptr);
      CUdeviceptr p = 0;
      EXPECT_EQ(cuMemAlloc_v2(&p, 1), CUDA_ERROR_INVALID_CONTEXT);
    }).join();
    EXPECT_EQ(cuCtxDestroy_v2(primary), CUDA_ERROR_INVALID_CONTEXT);  // primary: not destroyable
  });
}

TEST(Contexts, DeviceQueriesAndPciBusIds) {
  run_scenario({{"FAKECUDA_DEVICE_COUNT", "3"}}, [] {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    int count = 0;
    ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
    EXPECT_EQ(count, 3);
    char bus_id[32];
    ASSERT_EQ(cuDeviceGetPCIBusId(bus_id, sizeof bus_id, 2), CUDA_SUCCESS);
    EXPECT_STREQ(bus_id, "0000:30:00.0");
    CUdevice device = -1;
    ASSERT_EQ(cuDeviceGetByPCIBusId(&device, "00000000:20:00.0"), CUDA_SUCCESS);
    EXPECT_EQ(device, 1);
    int value = 0;
    ASSERT_EQ(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1), CUDA_SUCCESS);
    EXPECT_EQ(value, 0x20);
    EXPECT_EQ(cuDeviceGet(&device, 3), CUDA_ERROR_INVALID_DEVICE);
    int version = 0;
    ASSERT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
    EXPECT_EQ(version, 13000);
    const char* name = nullptr;
    ASSERT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name), CUDA_SUCCESS);
    EXPECT_STREQ(name, "CUDA_ERROR_OUT_OF_MEMORY");
  });
}

TEST(Contexts, VisibleDevicesRenumberOrdinals) {
  run_scenario({{"FAKECUDA_DEVICE_COUNT", "4"}, {"CUDA_VISIBLE_DEVICES", "2,0,9,1"}}, [] {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    int count = 0;
    ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
    EXPECT_EQ(count, 2);  // stops at the first invalid entry, like the real driver
    char bus_id[32];
    ASSERT_EQ(cuDeviceGetPCIBusId(bus_id, sizeof bus_id, 0), CUDA_SUCCESS);
    EXPECT_STREQ(bus_id, "0000:30:00.0");
  });
}

TEST(Contexts, NoVisibleDeviceMeansNoDevice) {
  run_scenario({{"FAKECUDA_DEVICE_COUNT", "0"}}, [] {
    EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
    int count = 0;
    EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  });
}

}  // namespace
}  // namespace fakecuda_test
