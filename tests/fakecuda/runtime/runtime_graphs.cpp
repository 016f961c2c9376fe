// SPDX-License-Identifier: Apache-2.0
// Graphs with memory nodes: cudaGraph_t, cudaGraphNode_t and cudaGraphExec_t are the driver's
// handles; cudaGraphInstantiate maps to the flags ABI ("cuGraphInstantiate" since 12.0).
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

extern "C" {

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuGraphCreate(pGraph, flags));
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuGraphDestroy(graph));
}

cudaError_t CUDARTAPI cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                               const cudaGraphNode_t* pDependencies,
                                               size_t numDependencies,
                                               struct cudaMemAllocNodeParams* nodeParams) {
  if (nodeParams == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  const cudaMemPoolProps& props = nodeParams->poolProps;
  params.poolProps.allocType = static_cast<CUmemAllocationType>(props.allocType);
  params.poolProps.handleTypes = static_cast<CUmemAllocationHandleType>(props.handleTypes);
  params.poolProps.location.type = static_cast<CUmemLocationType>(props.location.type);
  params.poolProps.location.id = props.location.id;
  params.poolProps.maxSize = props.maxSize;
  params.accessDescs = reinterpret_cast<const CUmemAccessDesc*>(nodeParams->accessDescs);
  params.accessDescCount = nodeParams->accessDescCount;
  params.bytesize = nodeParams->bytesize;
  CUresult r =
      driver().cuGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies, &params);
  if (r == CUDA_SUCCESS) nodeParams->dptr = reinterpret_cast<void*>(params.dptr);
  return finish(r);
}

cudaError_t CUDARTAPI cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                              const cudaGraphNode_t* pDependencies,
                                              size_t numDependencies, void* dptr) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
                                               reinterpret_cast<CUdeviceptr>(dptr)));
}

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuGraphInstantiate(pGraphExec, graph, flags));
}

cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuGraphLaunch(graphExec, stream));
}

cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuGraphLaunch_ptsz(graphExec, stream));
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuGraphExecDestroy(graphExec));
}

cudaError_t CUDARTAPI cudaDeviceGraphMemTrim(int device) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuDeviceGraphMemTrim(device));
}

// cudaGraphMemAttributeType and CUgraphMem_attribute share their values.
cudaError_t CUDARTAPI cudaDeviceGetGraphMemAttribute(int device,
                                                     enum cudaGraphMemAttributeType attr,
                                                     void* value) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuDeviceGetGraphMemAttribute(
      device, static_cast<CUgraphMem_attribute>(attr), value));
}

}  // extern "C"
