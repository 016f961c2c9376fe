// SPDX-License-Identifier: Apache-2.0
// CUDA graphs, as far as memory goes: memory allocation and free nodes.
//
// As in the real driver, adding an allocation node reserves its address (returned in
// nodeParams->dptr); the memory itself exists from the launch that allocates it until a free
// node, cuMemFreeAsync or cuMemFree. Launched memory comes from a per-device graph pool whose
// reserved bytes (what occupies the device) stay until cuDeviceGraphMemTrim. Other node types
// are not modelled.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "driver/driver_state.h"

namespace fakecuda {

struct GraphAllocation {
  int device = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t span = 0;
  int holders = 0;      // graphs and executable graphs that contain its node
  int executables = 0;  // executable graphs among the holders
  bool live = false;    // launched and not yet freed
};

}  // namespace fakecuda

struct CUgraphNode_st {
  enum class Type { kMemAlloc, kMemFree };
  Type type = Type::kMemAlloc;
  CUgraph_st* graph = nullptr;
  fakecuda::GraphAllocation* allocation = nullptr;  // kMemAlloc
  CUDA_MEM_ALLOC_NODE_PARAMS params{};              // kMemAlloc
  CUdeviceptr free_address = 0;                     // kMemFree
};

struct CUgraph_st {
  std::vector<CUgraphNode_st*> nodes;
};

struct CUgraphExec_st {
  std::vector<fakecuda::GraphAllocation*> allocations;
  std::vector<CUdeviceptr> frees;
};

using namespace fakecuda;

namespace {

// Guarded by the driver lock.
struct GraphState {
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> executables;
  std::set<CUgraphNode_st*> nodes;
  std::map<uint64_t, GraphAllocation*> allocations;  // by address, live or not
};

GraphState& graphs() {
  static auto* instance = new GraphState;
  return *instance;
}

// The address range goes once nothing holds the node and the memory is not allocated.
void release_if_unused(State& s, GraphAllocation* allocation) {
  if (allocation->holders > 0 || allocation->live) return;
  s.devices[static_cast<size_t>(allocation->device)].space->release(allocation->address,
                                                                    allocation->span);
  graphs().allocations.erase(allocation->address);
  delete allocation;
}

void drop_holder(State& s, GraphAllocation* allocation, bool executable) {
  allocation->holders -= 1;
  if (executable) allocation->executables -= 1;
  release_if_unused(s, allocation);
}

CUgraphNode_st* add_node(CUgraph_st* graph, CUgraphNode_st::Type type) {
  auto* node = new CUgraphNode_st;
  node->type = type;
  node->graph = graph;
  graph->nodes.push_back(node);
  graphs().nodes.insert(node);
  return node;
}

CUresult validate_dependencies(const CUgraphNode* dependencies, size_t count, CUgraph graph) {
  if (count > 0 && dependencies == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (graphs().nodes.count(dependencies[i]) == 0 || dependencies[i]->graph != graph) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* phGraphExec, CUgraph hGraph) {
  if (phGraphExec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (graphs().graphs.count(hGraph) == 0) return CUDA_ERROR_INVALID_VALUE;
  // A graph with allocation nodes may have only one executable at a time.
  for (CUgraphNode_st* node : hGraph->nodes) {
    if (node->allocation != nullptr && node->allocation->executables > 0) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  auto* exec = new CUgraphExec_st;
  for (CUgraphNode_st* node : hGraph->nodes) {
    if (node->type == CUgraphNode_st::Type::kMemAlloc) {
      node->allocation->holders += 1;
      node->allocation->executables += 1;
      exec->allocations.push_back(node->allocation);
    } else {
      exec->frees.push_back(node->free_address);
    }
  }
  graphs().executables.insert(exec);
  *phGraphExec = exec;
  return CUDA_SUCCESS;
}

CUresult launch(CUgraphExec hGraphExec, CUstream hStream) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = context_of_stream(s, hStream, &ctx); r != CUDA_SUCCESS) return r;
  if (graphs().executables.count(hGraphExec) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::map<int, uint64_t> needed;  // device -> bytes
  for (GraphAllocation* allocation : hGraphExec->allocations) {
    // Memory a previous launch allocated must be freed before the graph runs again.
    if (allocation->live) return CUDA_ERROR_INVALID_VALUE;
    needed[allocation->device] += allocation->size;
  }
  for (const auto& [device, bytes] : needed) {
    const DeviceState& d = s.devices[static_cast<size_t>(device)];
    uint64_t used = d.graph.used + bytes;
    if (used > d.graph.reserved && !fits(s, d, used - d.graph.reserved)) {
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  for (GraphAllocation* allocation : hGraphExec->allocations) {
    DeviceState& d = s.devices[static_cast<size_t>(allocation->device)];
    allocation->live = true;
    d.graph.used += allocation->size;
    d.graph.used_high = std::max(d.graph.used_high, d.graph.used);
    if (d.graph.used > d.graph.reserved) {
      d.resident += d.graph.used - d.graph.reserved;
      d.graph.reserved = d.graph.used;
      d.graph.reserved_high = std::max(d.graph.reserved_high, d.graph.reserved);
    }
    Allocation record;
    record.kind = Kind::kGraph;
    record.base = allocation->address;
    record.size = allocation->size;
    record.device = allocation->device;
    record.graph = allocation;
    insert_allocation(s, record);
  }
  for (CUdeviceptr address : hGraphExec->frees) {
    auto it = find_allocation_base(s, address);
    if (it != s.allocations.end() && it->second.kind == Kind::kGraph) release_allocation(s, it);
  }
  return CUDA_SUCCESS;
}

CUresult graph_mem_value(const GraphMemory& graph, CUgraphMem_attribute attr, cuuint64_t* out) {
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
      *out = graph.used;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
      *out = graph.used_high;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      *out = graph.reserved;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      *out = graph.reserved_high;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

namespace fakecuda {

void graph_allocation_freed(State& s, GraphAllocation* allocation) {
  GraphMemory& graph = s.devices[static_cast<size_t>(allocation->device)].graph;
  graph.used -= allocation->size;
  allocation->live = false;
  release_if_unused(s, allocation);
}

}  // namespace fakecuda

extern "C" {

CUresult CUDAAPI cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto* graph = new CUgraph_st;
  graphs().graphs.insert(graph);
  *phGraph = graph;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (graphs().graphs.erase(hGraph) == 0) return CUDA_ERROR_INVALID_VALUE;
  for (CUgraphNode_st* node : hGraph->nodes) {
    if (node->allocation != nullptr) drop_holder(s, node->allocation, false);
    graphs().nodes.erase(node);
    delete node;
  }
  delete hGraph;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                        const CUgraphNode* dependencies, size_t numDependencies,
                                        CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  if (phGraphNode == nullptr || nodeParams == nullptr || nodeParams->bytesize == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUmemPoolProps& props = nodeParams->poolProps;
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, props.location.id); r != CUDA_SUCCESS) {
    return r == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_VALUE : r;
  }
  if (graphs().graphs.count(hGraph) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = validate_dependencies(dependencies, numDependencies, hGraph);
      r != CUDA_SUCCESS) {
    return r;
  }
  DeviceState& d = s.devices[static_cast<size_t>(props.location.id)];
  uint64_t span = round_up(nodeParams->bytesize, kDeviceAlignment);
  std::optional<uint64_t> address = d.space->allocate(span, kDeviceAlignment);
  if (!address) return CUDA_ERROR_OUT_OF_MEMORY;
  auto* allocation = new GraphAllocation;
  allocation->device = props.location.id;
  allocation->address = *address;
  allocation->size = nodeParams->bytesize;
  allocation->span = span;
  allocation->holders = 1;
  graphs().allocations[*address] = allocation;
  nodeParams->dptr = *address;
  CUgraphNode_st* node = add_node(hGraph, CUgraphNode_st::Type::kMemAlloc);
  node->allocation = allocation;
  node->params = *nodeParams;
  *phGraphNode = node;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                       const CUgraphNode* dependencies, size_t numDependencies,
                                       CUdeviceptr dptr) {
  if (phGraphNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (graphs().graphs.count(hGraph) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = validate_dependencies(dependencies, numDependencies, hGraph);
      r != CUDA_SUCCESS) {
    return r;
  }
  // Only memory from graph allocation nodes can be freed by a graph.
  if (graphs().allocations.count(dptr) == 0) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode_st* node = add_node(hGraph, CUgraphNode_st::Type::kMemFree);
  node->free_address = dptr;
  *phGraphNode = node;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  if (params_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (graphs().nodes.count(hNode) == 0 || hNode->type != CUgraphNode_st::Type::kMemAlloc) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *params_out = hNode->params;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  if (dptr_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (graphs().nodes.count(hNode) == 0 || hNode->type != CUgraphNode_st::Type::kMemFree) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *dptr_out = hNode->free_address;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph,
                                    CUgraphNode* phErrorNode, char* logBuffer, size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return instantiate(phGraphExec, hGraph);
}

CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph,
                                       CUgraphNode* phErrorNode, char* logBuffer,
                                       size_t bufferSize) {
  return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                             unsigned long long flags) {
  (void)flags;
  return instantiate(phGraphExec, hGraph);
}

CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  if (instantiateParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = instantiate(phGraphExec, hGraph);
  instantiateParams->hErrNode_out = nullptr;
  instantiateParams->result_out =
      r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return r;
}

CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(
    CUgraphExec* phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

// Memory the executable allocated and did not free stays allocated (as documented).
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (graphs().executables.erase(hGraphExec) == 0) return CUDA_ERROR_INVALID_VALUE;
  for (GraphAllocation* allocation : hGraphExec->allocations) drop_holder(s, allocation, true);
  delete hGraphExec;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return launch(hGraphExec, hStream);
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return launch(hGraphExec, hStream);
}

CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, device); r != CUDA_SUCCESS) return r;
  return graph_mem_value(s.devices[static_cast<size_t>(device)].graph, attr,
                         static_cast<cuuint64_t*>(value));
}

// Only the high watermarks can be set, and only to 0 (which resets them to the current value).
CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void* value) {
  if (value == nullptr || *static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, device); r != CUDA_SUCCESS) return r;
  GraphMemory& graph = s.devices[static_cast<size_t>(device)].graph;
  if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) {
    graph.used_high = graph.used;
  } else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
    graph.reserved_high = graph.reserved;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, device); r != CUDA_SUCCESS) return r;
  DeviceState& d = s.devices[static_cast<size_t>(device)];
  d.resident -= d.graph.reserved - d.graph.used;
  d.graph.reserved = d.graph.used;
  return CUDA_SUCCESS;
}

}  // extern "C"
