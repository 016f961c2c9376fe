// SPDX-License-Identifier: Apache-2.0
// IPC imports: a new address that maps someone else's memory and never counts.
#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

TEST(Ipc, ImportsAreReferenceCountedAndDoNotCount) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUdeviceptr exported = 0;
    ASSERT_EQ(cuMemAlloc_v2(&exported, 5 * kMiB), CUDA_SUCCESS);
    CUipcMemHandle handle;
    ASSERT_EQ(cuIpcGetMemHandle(&handle, exported), CUDA_SUCCESS);
    CUdeviceptr first = 0, second = 0;
    ASSERT_EQ(cuIpcOpenMemHandle_v2(&first, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
              CUDA_SUCCESS);
    ASSERT_EQ(cuIpcOpenMemHandle(&second, handle, 0), CUDA_SUCCESS);
    EXPECT_NE(first, exported);
    EXPECT_EQ(second, first);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 5 * kMiB);
    size_t size = 0;
    ASSERT_EQ(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, first + 1),
              CUDA_SUCCESS);
    EXPECT_EQ(size, 5 * kMiB);
    EXPECT_EQ(cuIpcCloseMemHandle(first), CUDA_SUCCESS);
    EXPECT_EQ(cuIpcCloseMemHandle(first), CUDA_SUCCESS);
    EXPECT_EQ(cuIpcCloseMemHandle(first), CUDA_ERROR_INVALID_VALUE);
    CUipcMemHandle garbage{};
    EXPECT_EQ(cuIpcOpenMemHandle_v2(&first, garbage, 0), CUDA_ERROR_INVALID_VALUE);
  });
}

}  // namespace
}  // namespace fakecuda_test
