// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/python_code_deaths.h"

#include <atomic>
#include <cstring>

namespace gmt::interpose {
namespace {

using Dealloc = void (*)(void*);

// PyTypeObject's head, the same in every CPython 3 (release builds): ob_refcnt, ob_type,
// ob_size, tp_name, tp_basicsize, tp_itemsize, tp_dealloc.
constexpr std::size_t kTypeName = 24;
constexpr std::size_t kTypeDealloc = 48;

std::atomic<Dealloc> original_dealloc{nullptr};
std::atomic<const void*> freed_codes[PythonCodeDeaths::kKept];
// Deaths whose address is in freed_codes, and deaths whose address is being written there (at
// least as many): a reader that saw an address overwritten sees the latter moved past it.
std::atomic<uint64_t> published{0};
std::atomic<uint64_t> claimed{0};
// One writer at a time: the GIL orders deaths, but Python 3.12 may run interpreters that each
// have their own. Held for a few stores, never across a call.
std::atomic_flag writing = ATOMIC_FLAG_INIT;

void lock_log() {
  while (writing.test_and_set(std::memory_order_acquire)) {
  }
}
void unlock_log() {
  writing.clear(std::memory_order_release);
}

// Before the object is freed, and so before anything can be made at its address.
void logged_dealloc(void* code) {
  lock_log();
  const uint64_t n = published.load(std::memory_order_relaxed);
  claimed.store(n + 1, std::memory_order_relaxed);
  // Release: a reader that loads this address sees the claim before it.
  freed_codes[n % PythonCodeDeaths::kKept].store(code, std::memory_order_release);
  published.store(n + 1, std::memory_order_release);
  unlock_log();
  original_dealloc.load(std::memory_order_acquire)(code);
}

}  // namespace

bool PythonCodeDeaths::watch(Lookup lookup) {
  auto* type = static_cast<char*>(lookup("PyCode_Type"));
  if (type == nullptr) return false;
  const char* name = nullptr;
  std::memcpy(&name, type + kTypeName, sizeof name);
  // Another layout (a debug build's longer object head) puts something else there.
  if (name == nullptr || std::strcmp(name, "code") != 0) return false;
  auto* slot = reinterpret_cast<Dealloc*>(type + kTypeDealloc);
  Dealloc current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (current == &logged_dealloc) return true;
  if (current == nullptr) return false;
  original_dealloc.store(current, std::memory_order_release);
  // The interpreter reads the slot at each dealloc, ours or its own: a dealloc under way keeps
  // the function it read, and that object was never met (it was dying before we watched).
  return __atomic_compare_exchange_n(slot, &current, &logged_dealloc, false, __ATOMIC_RELEASE,
                                     __ATOMIC_ACQUIRE) ||
         current == &logged_dealloc;
}

uint64_t PythonCodeDeaths::count() {
  return published.load(std::memory_order_acquire);
}

bool PythonCodeDeaths::freed(uint64_t from, uint64_t to, const void** out) {
  if (to - from > kKept) return false;
  for (uint64_t i = from; i < to; ++i)
    out[i - from] = freed_codes[i % kKept].load(std::memory_order_acquire);
  return claimed.load(std::memory_order_relaxed) - from <= kKept;
}

void PythonCodeDeaths::before_fork() {
  lock_log();
}

void PythonCodeDeaths::after_fork() {
  unlock_log();
}

}  // namespace gmt::interpose
