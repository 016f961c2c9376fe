// SPDX-License-Identifier: Apache-2.0
// Calls the driver's allocation entry points named on its command line, one operation per
// argument, through the path this build was compiled for (driver_table.h). Each operation names
// the API it calls and the slots it allocates into or frees; the tests know what every sequence
// must add up to. See op_line.h for the output and for `try:`.
//
//   device:N                                       make device N's primary context current
//   cuDevicePrimaryCtxRetain:N | Release:N | Reset:N
//   cuCtxCreate:CTX:N                              create (and make current) a context on N
//   cuCtxDestroy:CTX
//   cuMemAlloc:S:BYTES                             (slot NULL: a NULL output pointer)
//   cuMemAllocPitch:S:WIDTH:HEIGHT                 element size 4; prints pitch=P
//   cuMemAllocManaged:S:BYTES
//   cuMemFree:S                                    whatever allocated S
//   cuMemAllocHost:S:BYTES   cuMemHostAlloc:S:BYTES[:FLAGS]   cuMemFreeHost:S
//   cuMemHostRegister:S:BYTES                      registers fresh pages of that size
//   cuMemHostUnregister:S
//   cuMemAllocAsync[_ptsz]:S:BYTES   cuMemFreeAsync[_ptsz]:S     on the NULL stream
//   cuMemPoolCreate:P   cuMemPoolDestroy:P         a pool on the current device
//   cuMemPoolTrimTo:P:BYTES                        release the pool's cache down to BYTES
//   cuMemAllocFromPoolAsync[_ptsz]:S:P:BYTES
//   cuMemCreate:H:BYTES[:DEVICE]                   pinned device memory on DEVICE (default:
//                                                  the current one)
//   cuMemRelease:H
//   cuMemRetainAllocationHandle:H:R:OFFSET         the handle mapped at reservation R + OFFSET
//   cuMemAddressReserve:R:BYTES   cuMemAddressFree:R
//   cuMemMap:R:OFFSET:BYTES:H                      handle H (from its start) at R + OFFSET
//   cuMemUnmap:R:OFFSET:BYTES
//   cuArrayCreate:A:WIDTH:HEIGHT:FORMAT:CHANNELS   FORMAT: u8 u16 u32 i8 i16 i32 f16 f32
//   cuArray3DCreate:A:WIDTH:HEIGHT:DEPTH:FORMAT:CHANNELS
//   cuArrayDestroy:A
//   cuMipmappedArrayCreate:A:WIDTH:HEIGHT:DEPTH:FORMAT:CHANNELS:LEVELS
//   cuMipmappedArrayDestroy:A
//   cuGraphCreate:G   cuGraphDestroy:G
//   cuGraphAddMemAllocNode:S:G:BYTES[:DEVICE]      S gets the node's address
//   cuGraphAddMemFreeNode:G:S                      after S's allocation node
//   cuIpcGetMemHandle:S   cuIpcOpenMemHandle:I:S   cuIpcCloseMemHandle:I
//   threads:T:N:BYTES        T threads each cuMemAlloc and cuMemFree BYTES N times
//   race:T:N:BYTES           T threads each allocate N times and free, keeping 4 live, half of
//                            them with cuMemAlloc/cuMemFree and half with the stream-ordered
//                            pair, so freed addresses go straight to other threads and APIs;
//                            prints distinct=ADDRESSES shared=ADDRESSES_USED_BY_SEVERAL_THREADS
//   fork:cuda:BYTES          a child cuMemAllocs BYTES, cuMemAllocAsyncs BYTES and frees that
//                            one, then exits; prints child=PID
//   fork:none                a child that exits without touching CUDA; prints child=PID
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "driver_table.h"
#include "op_line.h"

namespace {

using workload::die;
using workload::DriverTable;
using workload::Op;

constexpr int kMaxDevices = 16;

const DriverTable& driver() {
  static const DriverTable table = workload::load_driver_table();
  return table;
}

// Primary contexts this program holds references on, so that `device:N` retains once and a
// release can be the last one.
CUcontext g_primary[kMaxDevices] = {};
int g_primary_refs[kMaxDevices] = {};
int g_device = 0;

void use_device(int device) {
  if (device < 0 || device >= kMaxDevices) die("bad device " + std::to_string(device));
  if (g_primary_refs[device] == 0) {
    if (driver().primary_retain(&g_primary[device], device) != CUDA_SUCCESS) {
      die("cuDevicePrimaryCtxRetain failed");
    }
    g_primary_refs[device] = 1;
  }
  if (driver().ctx_set_current(g_primary[device]) != CUDA_SUCCESS) die("cuCtxSetCurrent failed");
  g_device = device;
}

template <class T>
T& slot(std::map<std::string, T>& slots, const std::string& name) {
  auto it = slots.find(name);
  if (it == slots.end()) die("no slot " + name);
  return it->second;
}

// The output argument for slot `name`: NULL for the slot named NULL, to see that a failing call
// with a NULL output pointer is passed through as it is.
template <class T>
T* out(const std::string& name, T& storage) {
  return name == "NULL" ? nullptr : &storage;
}

CUarray_format array_format(const std::string& name) {
  if (name == "u8") return CU_AD_FORMAT_UNSIGNED_INT8;
  if (name == "u16") return CU_AD_FORMAT_UNSIGNED_INT16;
  if (name == "u32") return CU_AD_FORMAT_UNSIGNED_INT32;
  if (name == "i8") return CU_AD_FORMAT_SIGNED_INT8;
  if (name == "i16") return CU_AD_FORMAT_SIGNED_INT16;
  if (name == "i32") return CU_AD_FORMAT_SIGNED_INT32;
  if (name == "f16") return CU_AD_FORMAT_HALF;
  if (name == "f32") return CU_AD_FORMAT_FLOAT;
  die("unknown array format " + name);
}

CUmemAllocationProp device_memory_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

struct HostRange {
  void* base = nullptr;
  size_t bytes = 0;
};

struct Reservation {
  CUdeviceptr base = 0;
  size_t bytes = 0;
};

// The current context is per thread: every worker starts with the main thread's device.
void enter_device_in_thread() {
  if (driver().ctx_set_current(g_primary[g_device]) != CUDA_SUCCESS) {
    die("cuCtxSetCurrent in a thread failed");
  }
}

void alloc_free_loop(int count, size_t bytes) {
  enter_device_in_thread();
  for (int i = 0; i < count; ++i) {
    CUdeviceptr p = 0;
    if (driver().mem_alloc(&p, bytes) != CUDA_SUCCESS) die("threaded cuMemAlloc failed");
    if (driver().mem_free(p) != CUDA_SUCCESS) die("threaded cuMemFree failed");
  }
}

// One racing thread: a window of live allocations, the oldest freed before each new one.
void race_loop(int thread, int count, size_t bytes, std::vector<CUdeviceptr>* seen) {
  enter_device_in_thread();
  constexpr size_t kWindow = 4;
  const bool stream_ordered = thread % 2 == 1;
  auto allocate = [&](CUdeviceptr* p) {
    return stream_ordered ? driver().mem_alloc_async(p, bytes, nullptr)
                          : driver().mem_alloc(p, bytes);
  };
  auto release = [&](CUdeviceptr p) {
    return stream_ordered ? driver().mem_free_async(p, nullptr) : driver().mem_free(p);
  };
  std::vector<CUdeviceptr> live;
  for (int i = 0; i < count; ++i) {
    if (live.size() == kWindow) {
      if (release(live.front()) != CUDA_SUCCESS) die("racing free failed");
      live.erase(live.begin());
    }
    CUdeviceptr p = 0;
    if (allocate(&p) != CUDA_SUCCESS) die("racing allocation failed");
    live.push_back(p);
    seen->push_back(p);
  }
  for (CUdeviceptr p : live) {
    if (release(p) != CUDA_SUCCESS) die("racing free failed");
  }
}

std::string race(int threads, int count, size_t bytes) {
  std::vector<std::vector<CUdeviceptr>> seen(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back(race_loop, t, count, bytes, &seen[static_cast<size_t>(t)]);
  }
  for (auto& w : workers) w.join();
  std::map<CUdeviceptr, std::set<int>> users;
  for (int t = 0; t < threads; ++t) {
    for (CUdeviceptr p : seen[static_cast<size_t>(t)]) users[p].insert(t);
  }
  size_t shared = 0;
  for (const auto& [address, by] : users) shared += by.size() > 1 ? 1 : 0;
  return "distinct=" + std::to_string(users.size()) + " shared=" + std::to_string(shared);
}

// The child's exit status tells the parent whether it did what it was asked.
std::string fork_child(const std::string& what, const Op& op) {
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) die("fork failed");
  if (child == 0) {
    if (what == "cuda") {
      const size_t bytes = op.num(2);
      CUdeviceptr kept = 0;
      CUdeviceptr freed = 0;
      if (driver().mem_alloc(&kept, bytes) != CUDA_SUCCESS) _exit(4);
      if (driver().mem_alloc_async(&freed, bytes, nullptr) != CUDA_SUCCESS) _exit(4);
      if (driver().mem_free_async(freed, nullptr) != CUDA_SUCCESS) _exit(4);
    } else if (what != "none") {
      _exit(5);
    }
    std::exit(0);  // a normal exit: atexit handlers and library destructors run in the child
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("forked child failed");
  return "child=" + std::to_string(child);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, CUdeviceptr> pointers;
  std::map<std::string, void*> pinned;
  std::map<std::string, HostRange> registered;
  std::map<std::string, CUmemoryPool> pools;
  std::map<std::string, CUmemGenericAllocationHandle> handles;
  std::map<std::string, Reservation> reservations;
  std::map<std::string, CUarray> arrays;
  std::map<std::string, CUmipmappedArray> mipmapped;
  std::map<std::string, CUgraph> graphs;
  std::map<std::string, CUgraphNode> alloc_nodes;
  std::map<std::string, CUipcMemHandle> ipc_handles;
  std::map<std::string, CUcontext> contexts;

  const DriverTable& d = driver();
  use_device(0);
  for (int i = 1; i < argc; ++i) {
    const Op op(argv[i]);
    const std::string& name = op.name();
    if (name == "device") {
      use_device(static_cast<int>(op.num(1)));
      op.report(0);
    } else if (name == "cuDevicePrimaryCtxRetain") {
      const int device = static_cast<int>(op.num(1));
      const CUresult r = d.primary_retain(&g_primary[device], device);
      if (r == CUDA_SUCCESS) ++g_primary_refs[device];
      op.report(r);
    } else if (name == "cuDevicePrimaryCtxRelease") {
      const int device = static_cast<int>(op.num(1));
      const CUresult r = d.primary_release(device);
      if (r == CUDA_SUCCESS) --g_primary_refs[device];
      op.report(r);
    } else if (name == "cuDevicePrimaryCtxReset") {
      const int device = static_cast<int>(op.num(1));
      const CUresult r = d.primary_reset(device);
      if (r == CUDA_SUCCESS) g_primary_refs[device] = 0;
      op.report(r);
    } else if (name == "cuCtxCreate") {
      CUcontext ctx = nullptr;
      const CUresult r = workload::create_context(d, &ctx, static_cast<CUdevice>(op.num(2)));
      contexts[op.str(1)] = ctx;
      op.report(r);
    } else if (name == "cuCtxDestroy") {
      op.report(d.ctx_destroy(slot(contexts, op.str(1))));
    } else if (name == "cuMemAlloc") {
      op.report(d.mem_alloc(out(op.str(1), pointers[op.str(1)]), op.num(2)));
    } else if (name == "cuMemAllocPitch") {
      size_t pitch = 0;
      const CUresult r = d.mem_alloc_pitch(out(op.str(1), pointers[op.str(1)]),
                                           out(op.str(1), pitch), op.num(2), op.num(3), 4);
      op.report(r, "pitch=" + std::to_string(pitch));
    } else if (name == "cuMemAllocManaged") {
      op.report(d.mem_alloc_managed(out(op.str(1), pointers[op.str(1)]), op.num(2),
                                    CU_MEM_ATTACH_GLOBAL));
    } else if (name == "cuMemFree") {
      op.report(d.mem_free(slot(pointers, op.str(1))));
    } else if (name == "cuMemAllocHost") {
      op.report(d.mem_alloc_host(out(op.str(1), pinned[op.str(1)]), op.num(2)));
    } else if (name == "cuMemHostAlloc") {
      const unsigned flags = op.has(3) ? static_cast<unsigned>(op.num(3)) : 0;
      op.report(d.mem_host_alloc(out(op.str(1), pinned[op.str(1)]), op.num(2), flags));
    } else if (name == "cuMemFreeHost") {
      op.report(d.mem_free_host(slot(pinned, op.str(1))));
    } else if (name == "cuMemHostRegister") {
      HostRange range{nullptr, op.num(2)};
      range.base =
          mmap(nullptr, range.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (range.base == MAP_FAILED) die("mmap failed");
      registered[op.str(1)] = range;
      op.report(d.mem_host_register(range.base, range.bytes, 0));
    } else if (name == "cuMemHostUnregister") {
      const HostRange range = slot(registered, op.str(1));
      op.report(d.mem_host_unregister(range.base));
      munmap(range.base, range.bytes);
    } else if (name == "cuMemAllocAsync" || name == "cuMemAllocAsync_ptsz") {
      auto fn = name == "cuMemAllocAsync" ? d.mem_alloc_async : d.mem_alloc_async_ptsz;
      op.report(fn(out(op.str(1), pointers[op.str(1)]), op.num(2), nullptr));
    } else if (name == "cuMemFreeAsync" || name == "cuMemFreeAsync_ptsz") {
      auto fn = name == "cuMemFreeAsync" ? d.mem_free_async : d.mem_free_async_ptsz;
      op.report(fn(slot(pointers, op.str(1)), nullptr));
    } else if (name == "cuMemPoolCreate") {
      CUmemPoolProps props{};
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      props.location.id = g_device;
      op.report(d.mem_pool_create(&pools[op.str(1)], &props));
    } else if (name == "cuMemPoolDestroy") {
      op.report(d.mem_pool_destroy(slot(pools, op.str(1))));
    } else if (name == "cuMemPoolTrimTo") {
      op.report(d.mem_pool_trim_to(slot(pools, op.str(1)), op.num(2)));
    } else if (name == "cuMemAllocFromPoolAsync" || name == "cuMemAllocFromPoolAsync_ptsz") {
      auto fn = name == "cuMemAllocFromPoolAsync" ? d.mem_alloc_from_pool_async
                                                  : d.mem_alloc_from_pool_async_ptsz;
      op.report(
          fn(out(op.str(1), pointers[op.str(1)]), op.num(3), slot(pools, op.str(2)), nullptr));
    } else if (name == "cuMemCreate") {
      const CUmemAllocationProp prop =
          device_memory_prop(op.has(3) ? static_cast<int>(op.num(3)) : g_device);
      op.report(d.mem_create(out(op.str(1), handles[op.str(1)]), op.num(2), &prop, 0));
    } else if (name == "cuMemRelease") {
      op.report(d.mem_release(slot(handles, op.str(1))));
    } else if (name == "cuMemRetainAllocationHandle") {
      const Reservation& r = slot(reservations, op.str(2));
      op.report(d.mem_retain_allocation_handle(&handles[op.str(1)],
                                               reinterpret_cast<void*>(r.base + op.num(3))));
    } else if (name == "cuMemAddressReserve") {
      Reservation& r = reservations[op.str(1)];
      r.bytes = op.num(2);
      op.report(d.mem_address_reserve(out(op.str(1), r.base), r.bytes, 0, 0, 0));
    } else if (name == "cuMemAddressFree") {
      const Reservation& r = slot(reservations, op.str(1));
      op.report(d.mem_address_free(r.base, r.bytes));
    } else if (name == "cuMemMap") {
      const Reservation& r = slot(reservations, op.str(1));
      op.report(d.mem_map(r.base + op.num(2), op.num(3), 0, slot(handles, op.str(4)), 0));
    } else if (name == "cuMemUnmap") {
      const Reservation& r = slot(reservations, op.str(1));
      op.report(d.mem_unmap(r.base + op.num(2), op.num(3)));
    } else if (name == "cuArrayCreate") {
      CUDA_ARRAY_DESCRIPTOR desc{};
      desc.Width = op.num(2);
      desc.Height = op.num(3);
      desc.Format = array_format(op.str(4));
      desc.NumChannels = static_cast<unsigned>(op.num(5));
      op.report(d.array_create(out(op.str(1), arrays[op.str(1)]), &desc));
    } else if (name == "cuArray3DCreate" || name == "cuMipmappedArrayCreate") {
      CUDA_ARRAY3D_DESCRIPTOR desc{};
      desc.Width = op.num(2);
      desc.Height = op.num(3);
      desc.Depth = op.num(4);
      desc.Format = array_format(op.str(5));
      desc.NumChannels = static_cast<unsigned>(op.num(6));
      if (name == "cuArray3DCreate") {
        op.report(d.array_3d_create(out(op.str(1), arrays[op.str(1)]), &desc));
      } else {
        op.report(d.mipmapped_array_create(out(op.str(1), mipmapped[op.str(1)]), &desc,
                                           static_cast<unsigned>(op.num(7))));
      }
    } else if (name == "cuArrayDestroy") {
      op.report(d.array_destroy(slot(arrays, op.str(1))));
    } else if (name == "cuMipmappedArrayDestroy") {
      op.report(d.mipmapped_array_destroy(slot(mipmapped, op.str(1))));
    } else if (name == "cuGraphCreate") {
      op.report(d.graph_create(&graphs[op.str(1)], 0));
    } else if (name == "cuGraphDestroy") {
      op.report(d.graph_destroy(slot(graphs, op.str(1))));
    } else if (name == "cuGraphAddMemAllocNode") {
      CUDA_MEM_ALLOC_NODE_PARAMS params{};
      params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      params.poolProps.location.id = op.has(4) ? static_cast<int>(op.num(4)) : g_device;
      params.bytesize = op.num(3);
      const CUresult r = d.graph_add_mem_alloc_node(out(op.str(1), alloc_nodes[op.str(1)]),
                                                    slot(graphs, op.str(2)), nullptr, 0, &params);
      pointers[op.str(1)] = params.dptr;
      op.report(r);
    } else if (name == "cuGraphAddMemFreeNode") {
      CUgraphNode node = nullptr;
      CUgraphNode after = slot(alloc_nodes, op.str(2));
      op.report(d.graph_add_mem_free_node(&node, slot(graphs, op.str(1)), &after, 1,
                                          slot(pointers, op.str(2))));
    } else if (name == "cuIpcGetMemHandle") {
      op.report(d.ipc_get_mem_handle(&ipc_handles[op.str(1)], slot(pointers, op.str(1))));
    } else if (name == "cuIpcOpenMemHandle") {
      op.report(d.ipc_open_mem_handle(out(op.str(1), pointers[op.str(1)]),
                                      slot(ipc_handles, op.str(2)),
                                      CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    } else if (name == "cuIpcCloseMemHandle") {
      op.report(d.ipc_close_mem_handle(slot(pointers, op.str(1))));
    } else if (name == "threads") {
      std::vector<std::thread> workers;
      for (unsigned long long t = 0; t < op.num(1); ++t) {
        workers.emplace_back(alloc_free_loop, static_cast<int>(op.num(2)), op.num(3));
      }
      for (auto& w : workers) w.join();
      op.report(0);
    } else if (name == "race") {
      op.report(0, race(static_cast<int>(op.num(1)), static_cast<int>(op.num(2)), op.num(3)));
    } else if (name == "fork") {
      op.report(0, fork_child(op.str(1), op));
    } else {
      die("unknown operation " + op.text());
    }
  }
  return 0;
}
