// SPDX-License-Identifier: Apache-2.0
// CUDA arrays count width x height x depth x channels x element size on the device.
#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

TEST(Arrays, BytesCountUntilDestroyed) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUDA_ARRAY_DESCRIPTOR flat{1000, 100, CU_AD_FORMAT_HALF, 2};
    CUarray a = nullptr;
    ASSERT_EQ(cuArrayCreate_v2(&a, &flat), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 1000u * 100 * 2 * 2);
    CUDA_ARRAY3D_DESCRIPTOR cube{64, 64, 64, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
    CUarray b = nullptr;
    ASSERT_EQ(cuArray3DCreate_v2(&b, &cube), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 400000u + 64 * 64 * 64 * 4);
    CUDA_ARRAY3D_DESCRIPTOR levels{8, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    CUmipmappedArray m = nullptr;
    ASSERT_EQ(cuMipmappedArrayCreate(&m, &levels, 4), CUDA_SUCCESS);  // 8x4 + 4x2 + 2x1 + 1x1
    EXPECT_EQ(fakecuda_process_used_bytes(0), 400000u + 1048576 + (32 + 8 + 2 + 1) * 4);
    CUDA_ARRAY_DESCRIPTOR three_channels{16, 16, CU_AD_FORMAT_FLOAT, 3};
    CUarray c = nullptr;
    EXPECT_EQ(cuArrayCreate_v2(&c, &three_channels), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
    EXPECT_EQ(cuArrayDestroy(b), CUDA_SUCCESS);
    EXPECT_EQ(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    EXPECT_EQ(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
  });
}

}  // namespace
}  // namespace fakecuda_test
