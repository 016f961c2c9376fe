// SPDX-License-Identifier: Apache-2.0
// Memory for the state that every stack of a thread touches (its remembered walks, its cache of
// stacks, the Python frames it met), taken from one region per thread, 2 MiB aligned and, where
// the kernel allows it, backed by one transparent huge page. Between two allocations a
// framework's own work evicts the caches and the TLB; with this state on a few hundred 4 KiB
// pages, each one a stack touched cost a TLB miss, and in a virtual machine a TLB miss walks
// two page tables. One huge page is one TLB entry for all of it.
//
// What does not fit (or a region the kernel refuses) comes from the heap, as before.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace gmt::interpose {

namespace thread_region {

// `size` bytes, 64-byte aligned, for the calling thread; null when there is no memory.
void* allocate(std::size_t size) noexcept;
// Gives back what allocate() gave; the region goes when nothing in it is left. Any thread.
void release(void* memory) noexcept;

}  // namespace thread_region

// A T made in the calling thread's region; null when there is no memory.
template <class T, class... Args>
T* make_in_thread_region(Args&&... args) {
  void* memory = thread_region::allocate(sizeof(T));
  return memory != nullptr ? new (memory) T(std::forward<Args>(args)...) : nullptr;
}

template <class T>
void destroy_in_thread_region(T* object) {
  if (object == nullptr) return;
  object->~T();
  thread_region::release(object);
}

}  // namespace gmt::interpose
