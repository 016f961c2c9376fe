// SPDX-License-Identifier: Apache-2.0
#include "interpose/hooks/driver_views_of_driver.h"

#include "interpose/hooks/cuda_api.h"

namespace gmt::interpose {

std::string DriverViewsOfDriver::pci_bus_id(int device) {
  auto get = driver_.query_as<PFN_cuDeviceGet_v2000>(DriverQuery::cuDeviceGet);
  auto bus = driver_.query_as<PFN_cuDeviceGetPCIBusId_v4010>(DriverQuery::cuDeviceGetPCIBusId);
  CUdevice dev = 0;
  char text[64] = {};
  if (get == nullptr || bus == nullptr || get(&dev, device) != CUDA_SUCCESS ||
      bus(text, sizeof text - 1, dev) != CUDA_SUCCESS) {
    return {};
  }
  return text;
}

uint64_t DriverViewsOfDriver::total_bytes(int device) {
  auto get = driver_.query_as<PFN_cuDeviceGet_v2000>(DriverQuery::cuDeviceGet);
  auto total = driver_.query_as<PFN_cuDeviceTotalMem_v3020>(DriverQuery::cuDeviceTotalMem_v2);
  CUdevice dev = 0;
  size_t bytes = 0;
  if (get == nullptr || total == nullptr || get(&dev, device) != CUDA_SUCCESS ||
      total(&bytes, dev) != CUDA_SUCCESS) {
    return 0;
  }
  return bytes;
}

// Retaining a primary context that is active only adds a reference; the teardown lock makes sure
// the program's last release cannot happen while we hold ours. The context is pushed on the
// sampler's own thread, so no program thread's current context changes.
void DriverViewsOfDriver::read(int device, bool pools, bool graphs, format::SampleRecord& sample) {
  using format::SampleField;
  auto get = driver_.query_as<PFN_cuDeviceGet_v2000>(DriverQuery::cuDeviceGet);
  auto state = driver_.query_as<PFN_cuDevicePrimaryCtxGetState_v7000>(
      DriverQuery::cuDevicePrimaryCtxGetState);
  auto retain =
      driver_.query_as<PFN_cuDevicePrimaryCtxRetain_v7000>(DriverQuery::cuDevicePrimaryCtxRetain);
  auto release = driver_.query_as<PFN_cuDevicePrimaryCtxRelease_v11000>(
      DriverQuery::cuDevicePrimaryCtxRelease_v2);
  auto push = driver_.query_as<PFN_cuCtxPushCurrent_v4000>(DriverQuery::cuCtxPushCurrent_v2);
  auto pop = driver_.query_as<PFN_cuCtxPopCurrent_v4000>(DriverQuery::cuCtxPopCurrent_v2);
  auto info = driver_.query_as<PFN_cuMemGetInfo_v3020>(DriverQuery::cuMemGetInfo_v2);
  if (get == nullptr || state == nullptr || retain == nullptr || release == nullptr ||
      push == nullptr || pop == nullptr || info == nullptr) {
    return;
  }
  CUdevice dev = 0;
  if (get(&dev, device) != CUDA_SUCCESS) return;

  std::lock_guard<std::mutex> lock(teardown_);
  unsigned int flags = 0;
  int active = 0;
  if (state(dev, &flags, &active) != CUDA_SUCCESS || active == 0) return;
  CUcontext ctx = nullptr;
  if (retain(&ctx, dev) != CUDA_SUCCESS) return;
  if (push(ctx) == CUDA_SUCCESS) {
    size_t free_bytes = 0, total = 0;
    if (info(&free_bytes, &total) == CUDA_SUCCESS) {
      sample.driver_free = free_bytes;
      sample.driver_total = total;
      sample.present |= SampleField::kDriverFree | SampleField::kDriverTotal;
    }
    if (pools) read_pool(dev, sample);
    if (graphs) read_graph_memory(dev, sample);
    CUcontext popped = nullptr;
    pop(&popped);
  }
  release(dev);
}

void DriverViewsOfDriver::read_pool(CUdevice dev, format::SampleRecord& sample) {
  using format::SampleField;
  auto current = driver_.query_as<PFN_cuDeviceGetMemPool_v11020>(DriverQuery::cuDeviceGetMemPool);
  auto attribute =
      driver_.query_as<PFN_cuMemPoolGetAttribute_v11020>(DriverQuery::cuMemPoolGetAttribute);
  CUmemoryPool pool = nullptr;
  if (current == nullptr || attribute == nullptr || current(&pool, dev) != CUDA_SUCCESS) return;
  cuuint64_t value = 0;
  if (attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value) == CUDA_SUCCESS) {
    sample.pool_reserved = value;
    sample.present |= SampleField::kPoolReserved;
  }
  if (attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &value) == CUDA_SUCCESS) {
    sample.pool_used = value;
    sample.present |= SampleField::kPoolUsed;
  }
}

void DriverViewsOfDriver::read_graph_memory(CUdevice dev, format::SampleRecord& sample) {
  using format::SampleField;
  auto attribute = driver_.query_as<PFN_cuDeviceGetGraphMemAttribute_v11040>(
      DriverQuery::cuDeviceGetGraphMemAttribute);
  if (attribute == nullptr) return;
  cuuint64_t value = 0;
  if (attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &value) == CUDA_SUCCESS) {
    sample.graph_reserved = value;
    sample.present |= SampleField::kGraphReserved;
  }
  if (attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &value) == CUDA_SUCCESS) {
    sample.graph_used = value;
    sample.present |= SampleField::kGraphUsed;
  }
}

}  // namespace gmt::interpose
