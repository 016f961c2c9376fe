// SPDX-License-Identifier: Apache-2.0
// The simulated driver's process-wide state, and the bookkeeping every module shares.
//
// One mutex guards everything: the fake is a test double, so simplicity beats scalability.
// Public entry points take the lock once (DriverLock) and call helpers that expect it held.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "common/fake_config.h"
#include "driver/driver_api.h"
#include "driver/memory/address_allocator.h"

// Opaque handle types of cuda.h get their bodies in the fake.
struct CUctx_st {
  int device = 0;  // CUDA ordinal
  bool primary = false;
  bool alive = false;  // costs context overhead and accepts work
  unsigned flags = 0;
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
};

// A stream-ordered memory pool. Freed memory stays reserved up to the release threshold (0 by
// default), like the real pools; reserved bytes are what occupy the device.
struct CUmemPoolHandle_st {
  int device = 0;
  bool is_default = false;
  bool destroyed = false;  // by cuMemPoolDestroy; kept until its allocations are freed
  uint64_t max_size = 0;   // 0: unlimited
  uint64_t used = 0;
  uint64_t used_high = 0;
  uint64_t reserved = 0;
  uint64_t reserved_high = 0;
  uint64_t release_threshold = 0;
  uint64_t live_allocations = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
};

namespace fakecuda {

// Address layout. Device pointers are never dereferenced; the ranges are chosen where Linux never
// places mappings in practice (below the top-down mmap area at 0x7f.., above PIE executables at
// 0x55..-0x56..), so a device address can never equal a live host address.
inline constexpr uint64_t kDeviceSpaceBase = 0x600000000000ull;  // + physical index * stride
inline constexpr uint64_t kDeviceSpaceStride = 1ull << 40;       // 1 TiB per device
inline constexpr uint64_t kVmmSpaceBase = 0x400000000000ull;     // cuMemAddressReserve
inline constexpr uint64_t kVmmSpaceSize = 1ull << 44;            // 16 TiB
// Legacy (pre-_v2) entry points return 32-bit device pointers; they allocate from this window.
inline constexpr uint64_t kLegacyWindowBase = 0x80000000ull;
inline constexpr uint64_t kLegacyWindowSize = 0x80000000ull;

inline constexpr uint64_t kDeviceAlignment = 512;        // cuMemAlloc, pitch, pools
inline constexpr uint64_t kVmmGranularity = 2ull << 20;  // cuMemCreate / cuMemAddressReserve

struct GraphAllocation;

enum class Kind : uint8_t {
  kDevice,          // cuMemAlloc
  kPitched,         // cuMemAllocPitch
  kManaged,         // cuMemAllocManaged (real host memory, counted on the device)
  kStreamOrdered,   // cuMemAllocAsync, cuMemAllocFromPoolAsync
  kPinnedHost,      // cuMemAllocHost, cuMemHostAlloc (real host memory)
  kHostRegistered,  // cuMemHostRegister (the caller's memory)
  kGraph,           // a launched graph memory node, until freed
  kIpcImport,       // cuIpcOpenMemHandle
};

// A live allocation that has an address (arrays and VMM objects are tracked separately).
struct Allocation {
  Kind kind = Kind::kDevice;
  uint64_t base = 0;
  uint64_t size = 0;  // bytes as requested (pitch * height for pitched)
  uint64_t span = 0;  // bytes taken from `space`; 0 when the range is not from an allocator
  AddressAllocator* space = nullptr;
  int device = 0;
  CUctx_st* ctx = nullptr;  // owning context; its destruction frees the allocation
  CUmemPoolHandle_st* pool = nullptr;
  GraphAllocation* graph = nullptr;
  unsigned flags = 0;
  uint64_t buffer_id = 0;
  int ipc_refs = 0;             // opens of the same handle share one mapping
  uint64_t ipc_source_key = 0;  // which exported allocation an import maps
};

// Memory allocated by graph memory nodes, per device (cuDeviceGetGraphMemAttribute).
struct GraphMemory {
  uint64_t used = 0;
  uint64_t used_high = 0;
  uint64_t reserved = 0;
  uint64_t reserved_high = 0;
};

struct DeviceState {
  int physical = 0;
  uint64_t capacity = 0;
  uint64_t other_processes = 0;
  uint64_t resident = 0;  // device-resident bytes of this process, context overhead excluded
  int live_contexts = 0;
  CUctx_st* primary = nullptr;
  int primary_refs = 0;
  CUmemPoolHandle_st* default_pool = nullptr;
  CUmemPoolHandle_st* current_pool = nullptr;
  GraphMemory graph;
  std::unique_ptr<AddressAllocator> space;
};

struct State {
  std::mutex mutex;
  // Set once by cuInit under the mutex, read without it by the queries that only look at the
  // calling thread's state (cuCtxGetCurrent), as a real driver answers them without a lock.
  std::atomic<bool> initialized{false};
  FakeConfig config;
  std::vector<DeviceState> devices;            // by CUDA ordinal
  std::map<uint64_t, Allocation> allocations;  // by base address
  AddressAllocator legacy_window{kLegacyWindowBase, kLegacyWindowSize};
  AddressAllocator vmm_space{kVmmSpaceBase, kVmmSpaceSize};
  std::set<CUctx_st*> contexts;  // every context ever created (handles stay comparable)
  std::set<CUstream_st*> streams;
  std::set<CUmemPoolHandle_st*> pools;
  uint64_t next_buffer_id = 1;
};

// Never destroyed: threads and atexit handlers may call the driver during process exit.
State& state();

using DriverLock = std::unique_lock<std::mutex>;
inline DriverLock lock_state() {
  return DriverLock(state().mutex);
}

// --- checks (lock held) ---
CUresult require_initialized(const State& s);
CUresult require_device(const State& s, CUdevice device);
// The calling thread's current context, which must be alive.
CUresult require_context(const State& s, CUctx_st** ctx);
// The context a stream belongs to; the NULL, legacy and per-thread streams mean the current one.
CUresult context_of_stream(const State& s, CUstream stream, CUctx_st** ctx);

// --- capacity (lock held) ---
uint64_t process_used_bytes(const State& s, const DeviceState& d);
// Whether `extra` more device-resident bytes fit next to this process's usage and other
// processes' usage.
bool fits(const State& s, const DeviceState& d, uint64_t extra);

// --- allocation registry (lock held) ---
Allocation& insert_allocation(State& s, Allocation allocation);
std::map<uint64_t, Allocation>::iterator find_allocation_base(State& s, uint64_t base);
// The live allocation whose [base, base + size) contains `address`, or nullptr.
Allocation* find_allocation_containing(State& s, uint64_t address);
// Undoes everything an allocation holds (counted bytes, pool usage, host mapping, address range).
void release_allocation(State& s, std::map<uint64_t, Allocation>::iterator it);
// A device-resident range from the device's address space, counted toward its usage.
CUresult allocate_device_range(State& s, int device, CUctx_st* ctx, Kind kind, uint64_t bytes,
                               uint64_t* address);
// The same from the 32-bit window that legacy entry points need.
CUresult allocate_legacy_range(State& s, int device, CUctx_st* ctx, Kind kind, uint64_t bytes,
                               uint64_t* address);

// What the driver knows about an address: a live allocation or a VMM mapping containing it.
struct PointerInfo {
  int device = 0;
  uint64_t base = 0;
  uint64_t size = 0;
  const Allocation* allocation = nullptr;  // nullptr for a VMM mapping
  bool host_backed = false;  // real host memory behind it (pinned, registered, managed)
};
bool describe_pointer(State& s, uint64_t address, PointerInfo* info);

// --- contexts (lock held) ---
CUctx_st* current_context();
CUresult activate_context(State& s, CUctx_st* ctx);
// Frees everything the context owns and stops counting its overhead.
void deactivate_context(State& s, CUctx_st* ctx);

// --- VMM (lock held) ---
// The cuMemMap mapping containing `address`: its handle's device and its range.
bool find_vmm_mapping(State& s, uint64_t address, int* device, uint64_t* base, uint64_t* size);

// --- per-module cleanup when a context dies (lock held) ---
void destroy_context_streams(State& s, CUctx_st* ctx);
void destroy_context_arrays(State& s, CUctx_st* ctx);

// --- stream-ordered pools (lock held) ---
CUmemPoolHandle_st* create_pool(State& s, int device, bool is_default, uint64_t max_size);
bool is_live_pool(const State& s, CUmemoryPool pool);
// Takes `bytes` from `pool` for an allocation owned by `ctx` (the stream's context).
CUresult pool_allocate(State& s, CUmemPoolHandle_st* pool, CUctx_st* ctx, uint64_t bytes,
                       uint64_t* address);
void pool_release_bytes(State& s, CUmemPoolHandle_st* pool, uint64_t bytes);

// --- graph memory (lock held) ---
void graph_allocation_freed(State& s, GraphAllocation* allocation);

inline uint64_t round_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace fakecuda
