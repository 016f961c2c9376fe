// SPDX-License-Identifier: Apache-2.0
#include "driver/driver_state.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace fakecuda {
namespace {

// A child forked while another thread held the lock would deadlock on its first call: take the
// lock around fork so the child starts with it free (tests fork a lot).
void register_fork_handlers() {
  pthread_atfork([] { state().mutex.lock(); }, [] { state().mutex.unlock(); },
                 [] { state().mutex.unlock(); });
}

}  // namespace

State& state() {
  static State* instance = new State;
  static const bool fork_handlers = (register_fork_handlers(), true);
  (void)fork_handlers;
  return *instance;
}

CUresult require_initialized(const State& s) {
  return s.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult require_device(const State& s, CUdevice device) {
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || static_cast<size_t>(device) >= s.devices.size()) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  return CUDA_SUCCESS;
}

CUresult require_context(const State& s, CUctx_st** ctx) {
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  CUctx_st* current = current_context();
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (!current->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *ctx = current;
  return CUDA_SUCCESS;
}

CUresult context_of_stream(const State& s, CUstream stream, CUctx_st** ctx) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    return require_context(s, ctx);
  }
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (s.streams.count(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!stream->ctx->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *ctx = stream->ctx;
  return CUDA_SUCCESS;
}

uint64_t process_used_bytes(const State& s, const DeviceState& d) {
  return d.resident + static_cast<uint64_t>(d.live_contexts) * s.config.context_overhead;
}

bool fits(const State& s, const DeviceState& d, uint64_t extra) {
  unsigned __int128 needed =
      static_cast<unsigned __int128>(process_used_bytes(s, d)) + d.other_processes + extra;
  return needed <= d.capacity;
}

Allocation& insert_allocation(State& s, Allocation allocation) {
  allocation.buffer_id = s.next_buffer_id++;
  uint64_t base = allocation.base;
  return s.allocations.insert_or_assign(base, allocation).first->second;
}

std::map<uint64_t, Allocation>::iterator find_allocation_base(State& s, uint64_t base) {
  return s.allocations.find(base);
}

Allocation* find_allocation_containing(State& s, uint64_t address) {
  auto it = s.allocations.upper_bound(address);
  if (it == s.allocations.begin()) return nullptr;
  --it;
  Allocation& candidate = it->second;
  uint64_t length = candidate.size == 0 ? 1 : candidate.size;
  return address - candidate.base < length ? &candidate : nullptr;
}

void release_allocation(State& s, std::map<uint64_t, Allocation>::iterator it) {
  Allocation& allocation = it->second;
  DeviceState& device = s.devices[static_cast<size_t>(allocation.device)];
  switch (allocation.kind) {
    case Kind::kDevice:
    case Kind::kPitched:
      device.resident -= allocation.size;
      break;
    case Kind::kManaged:
      device.resident -= allocation.size;
      munmap(reinterpret_cast<void*>(allocation.base),
             round_up(allocation.size, static_cast<uint64_t>(getpagesize())));
      break;
    case Kind::kPinnedHost:
      munmap(reinterpret_cast<void*>(allocation.base),
             round_up(allocation.size, static_cast<uint64_t>(getpagesize())));
      break;
    case Kind::kStreamOrdered:
      pool_release_bytes(s, allocation.pool, allocation.size);
      break;
    case Kind::kGraph:
      graph_allocation_freed(s, allocation.graph);
      break;
    case Kind::kHostRegistered:
    case Kind::kIpcImport:
      break;
  }
  if (allocation.space != nullptr && allocation.span != 0) {
    allocation.space->release(allocation.base, allocation.span);
  }
  s.allocations.erase(it);
}

namespace {

CUresult allocate_range_from(State& s, AddressAllocator& space, int device, CUctx_st* ctx,
                             Kind kind, uint64_t bytes, uint64_t* address) {
  DeviceState& d = s.devices[static_cast<size_t>(device)];
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!fits(s, d, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t span = round_up(bytes, kDeviceAlignment);
  std::optional<uint64_t> base = space.allocate(span, kDeviceAlignment);
  if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation allocation;
  allocation.kind = kind;
  allocation.base = *base;
  allocation.size = bytes;
  allocation.span = span;
  allocation.space = &space;
  allocation.device = device;
  allocation.ctx = ctx;
  insert_allocation(s, allocation);
  d.resident += bytes;
  *address = *base;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult allocate_device_range(State& s, int device, CUctx_st* ctx, Kind kind, uint64_t bytes,
                               uint64_t* address) {
  return allocate_range_from(s, *s.devices[static_cast<size_t>(device)].space, device, ctx, kind,
                             bytes, address);
}

CUresult allocate_legacy_range(State& s, int device, CUctx_st* ctx, Kind kind, uint64_t bytes,
                               uint64_t* address) {
  return allocate_range_from(s, s.legacy_window, device, ctx, kind, bytes, address);
}

void deactivate_context(State& s, CUctx_st* ctx) {
  if (!ctx->alive) return;
  for (auto it = s.allocations.begin(); it != s.allocations.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx) release_allocation(s, it);
    it = next;
  }
  destroy_context_arrays(s, ctx);
  destroy_context_streams(s, ctx);
  ctx->alive = false;
  s.devices[static_cast<size_t>(ctx->device)].live_contexts -= 1;
}

CUresult activate_context(State& s, CUctx_st* ctx) {
  DeviceState& d = s.devices[static_cast<size_t>(ctx->device)];
  if (!fits(s, d, s.config.context_overhead)) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx->alive = true;
  d.live_contexts += 1;
  return CUDA_SUCCESS;
}

}  // namespace fakecuda
