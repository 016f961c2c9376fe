// SPDX-License-Identifier: Apache-2.0
// Linear device memory: address reuse, non-overlap, capacity and cuMemGetInfo arithmetic.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

TEST(DeviceMemory, FreedAddressIsReusedBySameSizedAllocation) {
  run_scenario({}, [] {
    init_primary();
    CUdeviceptr a = 0, b = 0, c = 0, d = 0;
    ASSERT_EQ(cuMemAlloc_v2(&a, 1000), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc_v2(&b, 1000), CUDA_SUCCESS);
    EXPECT_EQ(a % 512, 0u);
    EXPECT_EQ(b, a + 1024);  // 1000 bytes take 1024 (512-byte granules)
    ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc_v2(&c, 1000), CUDA_SUCCESS);
    EXPECT_EQ(c, a);
    // Freed neighbours coalesce: both blocks serve one larger request.
    ASSERT_EQ(cuMemFree_v2(c), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc_v2(&d, 2048), CUDA_SUCCESS);
    EXPECT_EQ(d, a);
  });
}

TEST(DeviceMemory, LiveRangesNeverOverlapAcrossKinds) {
  run_scenario({}, [] {
    init_primary();
    std::vector<std::pair<CUdeviceptr, size_t>> ranges;
    for (size_t size : {1ull, 511ull, 512ull, 513ull, 3 * kMiB + 7, 100ull}) {
      CUdeviceptr p = 0;
      ASSERT_EQ(cuMemAlloc_v2(&p, size), CUDA_SUCCESS);
      ranges.emplace_back(p, size);
    }
    CUdeviceptr pitched = 0;
    size_t pitch = 0;
    ASSERT_EQ(cuMemAllocPitch_v2(&pitched, &pitch, 1000, 10, 4), CUDA_SUCCESS);
    EXPECT_EQ(pitch, 1024u);
    ranges.emplace_back(pitched, pitch * 10);
    CUdeviceptr async = 0;
    ASSERT_EQ(cuMemAllocAsync(&async, 5000, nullptr), CUDA_SUCCESS);
    ranges.emplace_back(async, 5000);
    CUipcMemHandle handle;
    ASSERT_EQ(cuIpcGetMemHandle(&handle, ranges[0].first), CUDA_SUCCESS);
    CUdeviceptr imported = 0;
    ASSERT_EQ(cuIpcOpenMemHandle_v2(&imported, handle, 0), CUDA_SUCCESS);
    ranges.emplace_back(imported, ranges[0].second);
    CUdeviceptr managed = 0;
    ASSERT_EQ(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ranges.emplace_back(managed, 4096);
    CUdeviceptr reserved = 0;
    ASSERT_EQ(cuMemAddressReserve(&reserved, 2 * kMiB, 0, 0, 0), CUDA_SUCCESS);
    ranges.emplace_back(reserved, 2 * kMiB);
    // The driver agrees on each allocation's extent.
    CUdeviceptr base = 0;
    size_t size = 0;
    ASSERT_EQ(cuMemGetAddressRange_v2(&base, &size, pitched + 5), CUDA_SUCCESS);
    EXPECT_EQ(base, pitched);
    EXPECT_EQ(size, pitch * 10);
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) {
      EXPECT_LE(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first)
          << std::hex << ranges[i - 1].first << " overlaps " << ranges[i].first;
    }
  });
}

TEST(DeviceMemory, OutOfMemoryPastConfiguredCapacity) {
  run_scenario({{"FAKECUDA_DEVICE_MEMORY", "1G"},
                {"FAKECUDA_CONTEXT_OVERHEAD", "256M"},
                {"FAKECUDA_OTHER_PROCESS_MEMORY", "128M"}},
               [] {
                 init_primary();
                 EXPECT_EQ(free_bytes(), 640 * kMiB);
                 CUdeviceptr p = 0xdead;
                 EXPECT_EQ(cuMemAlloc_v2(&p, 640 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
                 EXPECT_EQ(p, 0xdeadu);  // untouched on failure
                 ASSERT_EQ(cuMemAlloc_v2(&p, 640 * kMiB), CUDA_SUCCESS);
                 EXPECT_EQ(free_bytes(), 0u);
                 CUdeviceptr q = 0xdead;
                 EXPECT_EQ(cuMemAlloc_v2(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
                 EXPECT_EQ(cuMemAllocManaged(&q, 1, CU_MEM_ATTACH_GLOBAL),
                           CUDA_ERROR_OUT_OF_MEMORY);
                 EXPECT_EQ(cuMemAllocAsync(&q, 1, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
                 EXPECT_EQ(q, 0xdeadu);
                 // Host memory does not live on the device.
                 void* host = nullptr;
                 EXPECT_EQ(cuMemHostAlloc(&host, kMiB, 0), CUDA_SUCCESS);
                 ASSERT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
                 EXPECT_EQ(cuMemAlloc_v2(&q, kMiB), CUDA_SUCCESS);
               });
}

TEST(DeviceMemory, MemGetInfoCountsDeviceResidentBytesOnly) {
  run_scenario({{"FAKECUDA_DEVICE_MEMORY", "8G"},
                {"FAKECUDA_CONTEXT_OVERHEAD", "512M"},
                {"FAKECUDA_OTHER_PROCESS_MEMORY", "1G"}},
               [] {
                 init_primary();
                 size_t free = 0, total = 0;
                 ASSERT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
                 EXPECT_EQ(total, 8 * kGiB);
                 EXPECT_EQ(free, 8 * kGiB - 512 * kMiB - kGiB);
                 size_t start = free;
                 CUdeviceptr device = 0, managed = 0, pitched = 0, async = 0;
                 size_t pitch = 0;
                 ASSERT_EQ(cuMemAlloc_v2(&device, 100 * kMiB), CUDA_SUCCESS);
                 ASSERT_EQ(cuMemAllocManaged(&managed, 50 * kMiB, CU_MEM_ATTACH_GLOBAL),
                           CUDA_SUCCESS);
                 ASSERT_EQ(cuMemAllocPitch_v2(&pitched, &pitch, 512, 2048, 16), CUDA_SUCCESS);
                 ASSERT_EQ(cuMemAllocAsync(&async, 3 * kMiB, nullptr), CUDA_SUCCESS);
                 EXPECT_EQ(free_bytes(), start - 100 * kMiB - 50 * kMiB - kMiB - 3 * kMiB);
                 // Pinned and registered host memory, reservations: not device memory.
                 void* pinned = nullptr;
                 ASSERT_EQ(cuMemAllocHost_v2(&pinned, 10 * kMiB), CUDA_SUCCESS);
                 std::vector<char> buffer(kMiB);
                 ASSERT_EQ(cuMemHostRegister_v2(buffer.data(), buffer.size(), 0), CUDA_SUCCESS);
                 CUdeviceptr reserved = 0;
                 ASSERT_EQ(cuMemAddressReserve(&reserved, 64 * kMiB, 0, 0, 0), CUDA_SUCCESS);
                 EXPECT_EQ(free_bytes(), start - 154 * kMiB);
                 EXPECT_EQ(fakecuda_process_used_bytes(0), 512 * kMiB + 154 * kMiB);
                 ASSERT_EQ(cuMemFree_v2(managed), CUDA_SUCCESS);
                 ASSERT_EQ(cuMemFree_v2(async), CUDA_SUCCESS);  // cuMemFree takes async memory
                 EXPECT_EQ(free_bytes(), start - 101 * kMiB);
               });
}

TEST(DeviceMemory, ErrorsBeforeInitAndWithoutContext) {
  run_scenario({}, [] {
    CUdeviceptr p = 0;
    EXPECT_EQ(cuMemAlloc_v2(&p, 1), CUDA_ERROR_NOT_INITIALIZED);
    int count = 0;
    EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    EXPECT_EQ(cuMemAlloc_v2(&p, 1), CUDA_ERROR_INVALID_CONTEXT);
    size_t free = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_ERROR_INVALID_CONTEXT);
  });
}

TEST(DeviceMemory, InvalidFreesAreInvalidValue) {
  run_scenario({}, [] {
    init_primary();
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc_v2(&p, 4096), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(p + 512), CUDA_ERROR_INVALID_VALUE);  // not the base
    EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);  // double free
    EXPECT_EQ(cuMemFree_v2(0x1234), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemFreeHost(reinterpret_cast<void*>(0x1234)), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
  });
}

TEST(DeviceMemory, LegacyAbiUses32BitPointers) {
  run_scenario({}, [] {
    init_primary();
    CUdeviceptr_v1 p = 0;
    ASSERT_EQ(cuMemAlloc(&p, 4096), CUDA_SUCCESS);
    EXPECT_NE(p, 0u);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 512 * kMiB + 4096);
    unsigned free = 0, total = 0;
    ASSERT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(total, 0xffffffffu);  // 16 GiB saturates the 32-bit ABI
    EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 512 * kMiB);
  });
}

TEST(DeviceMemory, ManagedAndPinnedMemoryIsRealHostMemory) {
  run_scenario({}, [] {
    init_primary();
    CUdeviceptr managed = 0;
    ASSERT_EQ(cuMemAllocManaged(&managed, 8192, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    std::memset(reinterpret_cast<void*>(managed), 0x5a, 8192);
    void* pinned = nullptr;
    ASSERT_EQ(cuMemHostAlloc(&pinned, 8192, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    std::memset(pinned, 0x11, 8192);
    CUdeviceptr mapped = 0;
    ASSERT_EQ(cuMemHostGetDevicePointer_v2(&mapped, pinned, 0), CUDA_SUCCESS);
    EXPECT_EQ(mapped, reinterpret_cast<CUdeviceptr>(pinned));
    // Copies through "device" memory that has host backing move real bytes.
    ASSERT_EQ(cuMemcpyDtoH_v2(pinned, managed, 16), CUDA_SUCCESS);
    EXPECT_EQ(static_cast<unsigned char*>(pinned)[15], 0x5a);
    int attribute = -1;
    ASSERT_EQ(cuPointerGetAttribute(&attribute, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, managed),
              CUDA_SUCCESS);
    EXPECT_EQ(attribute, 0);
    CUcontext owner = nullptr;
    CUcontext current = nullptr;
    ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    ASSERT_EQ(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, managed), CUDA_SUCCESS);
    EXPECT_EQ(owner, current);
    EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(managed), CUDA_SUCCESS);
  });
}

TEST(DeviceMemory, HostRegistrationRejectsOverlapsAndUnknownPointers) {
  run_scenario({}, [] {
    init_primary();
    std::vector<char> buffer(3 * 4096);
    ASSERT_EQ(cuMemHostRegister_v2(buffer.data(), 2 * 4096, 0), CUDA_SUCCESS);
    EXPECT_EQ(cuMemHostRegister_v2(buffer.data() + 4096, 2 * 4096, 0),
              CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT_EQ(cuMemHostUnregister(buffer.data() + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EXPECT_EQ(cuMemHostUnregister(buffer.data()), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 512 * kMiB);
  });
}

TEST(DeviceMemory, CopiesValidateDeviceRanges) {
  run_scenario({}, [] {
    init_primary();
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc_v2(&p, 100), CUDA_SUCCESS);
    char host[200] = {1};
    EXPECT_EQ(cuMemcpyHtoD_v2(p, host, 100), CUDA_SUCCESS);
    EXPECT_EQ(cuMemcpyHtoD_v2(p, host, 101), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemcpyDtoH_v2(host, p + 50, 50), CUDA_SUCCESS);
    EXPECT_EQ(host[0], 0);  // device memory reads as zeros
    EXPECT_EQ(cuMemsetD8_v2(p, 7, 100), CUDA_SUCCESS);
    EXPECT_EQ(cuMemsetD8_v2(0x1000, 7, 1), CUDA_ERROR_INVALID_VALUE);
  });
}

TEST(DeviceMemory, ConcurrentThreadsGetDisjointRanges) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    CUcontext ctx = init_primary();
    std::mutex mutex;
    std::vector<std::pair<CUdeviceptr, size_t>> live;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);  // the current context is per thread
        std::vector<std::pair<CUdeviceptr, size_t>> mine;
        for (int i = 0; i < 500; ++i) {
          size_t size = 1 + static_cast<size_t>((i * 7919 + t * 104729) % 100000);
          CUdeviceptr p = 0;
          ASSERT_EQ(cuMemAlloc_v2(&p, size), CUDA_SUCCESS);
          mine.emplace_back(p, size);
          if (i % 3 == 0) {
            ASSERT_EQ(cuMemFree_v2(mine.front().first), CUDA_SUCCESS);
            mine.erase(mine.begin());
          }
        }
        std::lock_guard<std::mutex> lock(mutex);
        live.insert(live.end(), mine.begin(), mine.end());
      });
    }
    for (std::thread& thread : threads) thread.join();
    std::sort(live.begin(), live.end());
    size_t total = 0;
    for (size_t i = 0; i < live.size(); ++i) {
      total += live[i].second;
      if (i > 0) {
        EXPECT_LE(live[i - 1].first + live[i - 1].second, live[i].first);
      }
    }
    EXPECT_EQ(fakecuda_process_used_bytes(0), total);
    for (const auto& [address, size] : live) EXPECT_EQ(cuMemFree_v2(address), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
  });
}

TEST(DeviceMemory, PerDeviceCapacitiesFromCommaList) {
  run_scenario({{"FAKECUDA_DEVICE_COUNT", "2"},
                {"FAKECUDA_DEVICE_MEMORY", "2G,4G"},
                {"FAKECUDA_CONTEXT_OVERHEAD", "0"}},
               [] {
                 ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
                 size_t bytes = 0;
                 ASSERT_EQ(cuDeviceTotalMem_v2(&bytes, 0), CUDA_SUCCESS);
                 EXPECT_EQ(bytes, 2 * kGiB);
                 ASSERT_EQ(cuDeviceTotalMem_v2(&bytes, 1), CUDA_SUCCESS);
                 EXPECT_EQ(bytes, 4 * kGiB);
                 init_primary(1);
                 CUdeviceptr p = 0;
                 ASSERT_EQ(cuMemAlloc_v2(&p, 3 * kGiB), CUDA_SUCCESS);
                 // Each device has its own address range.
                 CUdeviceptr q = 0;
                 init_primary(0);
                 ASSERT_EQ(cuMemAlloc_v2(&q, kMiB), CUDA_SUCCESS);
                 EXPECT_NE(p >> 40, q >> 40);
                 EXPECT_EQ(fakecuda_process_used_bytes(1), 3 * kGiB);
                 EXPECT_EQ(fakecuda_process_used_bytes(0), kMiB);
               });
}

}  // namespace
}  // namespace fakecuda_test
