// SPDX-License-Identifier: Apache-2.0
// Graph memory nodes: the address exists at node creation, memory from launch to free, and the
// graph pool keeps its reservation until trimmed.
#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  params.bytesize = bytes;
  return params;
}

cuuint64_t graph_attribute(CUgraphMem_attribute attribute) {
  cuuint64_t value = ~0ull;
  EXPECT_EQ(cuDeviceGetGraphMemAttribute(0, attribute, &value), CUDA_SUCCESS);
  return value;
}

TEST(Graphs, AllocationNodeMemoryLivesFromLaunchToFree) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUgraph graph = nullptr;
    ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUDA_MEM_ALLOC_NODE_PARAMS params = alloc_params(3 * kMiB);
    CUgraphNode node = nullptr;
    ASSERT_EQ(cuGraphAddMemAllocNode(&node, graph, nullptr, 0, &params), CUDA_SUCCESS);
    EXPECT_NE(params.dptr, 0u);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);  // nothing until launched
    CUgraphExec exec = nullptr;
    ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    CUgraphExec second = nullptr;
    EXPECT_EQ(cuGraphInstantiateWithFlags(&second, graph, 0), CUDA_ERROR_NOT_SUPPORTED);
    ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 3 * kMiB);
    EXPECT_EQ(graph_attribute(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 3 * kMiB);
    EXPECT_EQ(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);  // not freed yet
    ASSERT_EQ(cuMemFreeAsync(params.dptr, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(graph_attribute(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0u);
    EXPECT_EQ(graph_attribute(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 3 * kMiB);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 3 * kMiB);         // the graph pool keeps it
    ASSERT_EQ(cuGraphLaunch_ptsz(exec, nullptr), CUDA_SUCCESS);  // relaunch reuses the address
    EXPECT_EQ(graph_attribute(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 3 * kMiB);
    ASSERT_EQ(cuMemFree_v2(params.dptr), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
    EXPECT_EQ(graph_attribute(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 3 * kMiB);
    EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  });
}

TEST(Graphs, FreeNodeInTheSameGraphFreesAtLaunch) {
  run_scenario({{"FAKECUDA_CONTEXT_OVERHEAD", "0"}}, [] {
    init_primary();
    CUgraph graph = nullptr;
    ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUDA_MEM_ALLOC_NODE_PARAMS params = alloc_params(kMiB);
    CUgraphNode alloc = nullptr, free = nullptr;
    ASSERT_EQ(cuGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params), CUDA_SUCCESS);
    ASSERT_EQ(cuGraphAddMemFreeNode(&free, graph, &alloc, 1, params.dptr), CUDA_SUCCESS);
    EXPECT_EQ(cuGraphAddMemFreeNode(&free, graph, nullptr, 0, 0x1234), CUDA_ERROR_INVALID_VALUE);
    CUgraphExec exec = nullptr;
    ASSERT_EQ(cuGraphInstantiate_v2(&exec, graph, nullptr, nullptr, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(graph_attribute(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0u);
    EXPECT_EQ(graph_attribute(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), kMiB);
    EXPECT_EQ(fakecuda_process_used_bytes(0), kMiB);
    EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_process_used_bytes(0), 0u);
  });
}

}  // namespace
}  // namespace fakecuda_test
