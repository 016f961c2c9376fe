// SPDX-License-Identifier: Apache-2.0
// Graph memory nodes. The driver fixes the node's address when the node is added and backs it
// with physical memory when the graph runs; we count the node's bytes from its creation (an
// upper bound of the footprint, which the sampled graph-memory attributes refine) until a free
// node, or a stream-ordered free of the address, ends it.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::Hook;

extern "C" {

CUresult gmt_cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph,
                                    const CUgraphNode* dependencies, size_t count,
                                    CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  Hook hook;
  const CUresult result =
      GMT_REAL(hook, cuGraphAddMemAllocNode)(node, graph, dependencies, count, params);
  if (hook.outermost()) {
    Hook::Current owner;
    uint64_t address = 0;
    uint64_t bytes = 0;
    if (params != nullptr) {
      if (params->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        owner.device = params->poolProps.location.id;
      address = params->dptr;
      bytes = params->bytesize;
    }
    hook.allocated(result, MemoryKind::kGraphMemory, Api::kCuGraphAddMemAllocNode, address, bytes,
                   owner);
  }
  return result;
}

CUresult gmt_cuGraphAddMemFreeNode(CUgraphNode* node, CUgraph graph,
                                   const CUgraphNode* dependencies, size_t count,
                                   CUdeviceptr dptr) {
  Hook hook;
  const CUresult result =
      GMT_REAL(hook, cuGraphAddMemFreeNode)(node, graph, dependencies, count, dptr);
  // Stamped after: adding a free node does not free anything that another thread could reuse.
  if (hook.outermost() && result == CUDA_SUCCESS)
    hook.events().freeing(Api::kCuGraphAddMemFreeNode, dptr);
  return result;
}

GMT_EXPORT_WRAPPER(cuGraphAddMemAllocNode)
GMT_EXPORT_WRAPPER(cuGraphAddMemFreeNode)
}
