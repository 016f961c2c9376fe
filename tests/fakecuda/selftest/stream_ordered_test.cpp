// SPDX-License-Identifier: Apache-2.0
// Stream-ordered allocation and pools: reserved vs used bytes, release threshold, trimming.
#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

cuuint64_t pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute) {
  cuuint64_t value = ~0ull;
  EXPECT_EQ(cuMemPoolGetAttribute(pool, attribute, &value), CUDA_SUCCESS);
  return value;
}

TEST(StreamOrdered, DefaultPoolReleasesFreedMemory) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUmemoryPool pool = nullptr;
    ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
    CUmemoryPool current = nullptr;
    ASSERT_EQ(cuDeviceGetMemPool(&current, 0), CUDA_SUCCESS);
    EXPECT_EQ(current, pool);
    CUstream stream = nullptr;
    ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
    CUdeviceptr a = 0, b = 0;
    ASSERT_EQ(cuMemAllocAsync(&a, 3 * kMiB, stream), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAllocAsync_ptsz(&b, kMiB, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4 * kMiB);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * kMiB);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 4 * kMiB);
    ASSERT_EQ(cuMemFreeAsync(a, stream), CUDA_SUCCESS);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), kMiB);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), kMiB);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 4 * kMiB);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 4 * kMiB);
    ASSERT_EQ(cuMemFreeAsync_ptsz(b, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    EXPECT_EQ(cuMemFreeAsync(b, nullptr), CUDA_ERROR_INVALID_VALUE);
    cuuint64_t zero = 0;
    ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero), CUDA_SUCCESS);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0u);
    EXPECT_EQ(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
  });
}

TEST(StreamOrdered, ReleaseThresholdKeepsFreedMemoryReservedUntilTrimmed) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CUmemoryPool pool = nullptr;
    ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
    cuuint64_t threshold = 8 * kMiB;
    ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
              CUDA_SUCCESS);
    CUdeviceptr a = 0, b = 0;
    ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 6 * kMiB, pool, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFreeAsync(a, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 6 * kMiB);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 6 * kMiB);  // cached memory occupies the device
    // Cached bytes serve the next request without growing the pool.
    ASSERT_EQ(cuMemAllocFromPoolAsync_ptsz(&b, 4 * kMiB, pool, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(b, a);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 6 * kMiB);
    ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
    EXPECT_EQ(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * kMiB);
    ASSERT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
    ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    ASSERT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
    EXPECT_EQ(cuMemAllocFromPoolAsync(&a, 1, pool, nullptr), CUDA_ERROR_INVALID_VALUE);
  });
}

TEST(StreamOrdered, CurrentPoolOfTheDeviceServesCuMemAllocAsync) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    props.maxSize = 2 * kMiB;
    CUmemoryPool pool = nullptr;
    ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceSetMemPool(0, pool), CUDA_SUCCESS);
    CUdeviceptr a = 0;
    ASSERT_EQ(cuMemAllocAsync(&a, kMiB, nullptr), CUDA_SUCCESS);
    CUmemoryPool owner = nullptr;
    ASSERT_EQ(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a), CUDA_SUCCESS);
    EXPECT_EQ(owner, pool);
    EXPECT_EQ(cuMemAllocAsync(&a, 2 * kMiB, nullptr), CUDA_ERROR_OUT_OF_MEMORY);  // maxSize
  });
}

}  // namespace
}  // namespace fakecuda_test
