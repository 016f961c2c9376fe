// SPDX-License-Identifier: Apache-2.0
// What python/gpumemtrace_roles.py reports from PyTorch's hooks, for the workloads that play it
// from C++: gpumemtrace.h's framework entry points found as the hooks find them (dlsym: none,
// and so no-ops, when the program runs untraced), and format/records.h's values they take.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace sim {

// format/records.h's ScopeAction, ScopeKind and TagRole.
constexpr uint32_t kEnter = 0, kExit = 1, kEnterOutline = 2;
constexpr uint32_t kModule = 0, kBackward = 1, kOptimizer = 2, kProgramEnd = 3, kNoGrad = 5,
                   kKvCacheLength = 6;
constexpr uint32_t kParameter = 0, kGradient = 2, kOptimizerState = 3, kKvCache = 4;

struct FrameworkHooks {
  using NameFn = uint32_t (*)(const char*);
  using ScopeFn = void (*)(uint32_t, uint32_t, uint32_t);
  using TagsFn = void (*)(uint32_t, uint32_t, const uint64_t*, const uint32_t*);

  NameFn name = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "gpumemtrace_framework_name"));
  ScopeFn scope = reinterpret_cast<ScopeFn>(dlsym(RTLD_DEFAULT, "gpumemtrace_framework_scope"));
  TagsFn tags = reinterpret_cast<TagsFn>(dlsym(RTLD_DEFAULT, "gpumemtrace_framework_tags"));

  uint32_t id(const char* text) const { return name != nullptr ? name(text) : 0; }
  void enter(uint32_t kind, const char* text, uint32_t action = kEnter) const {
    if (scope != nullptr) scope(action, kind, id(text));
  }
  void exit(uint32_t kind) const {
    if (scope != nullptr) scope(kExit, kind, 0);
  }
  void tag(uint32_t role, const std::vector<std::pair<void*, const char*>>& tensors) const {
    if (tags == nullptr) return;
    std::vector<uint64_t> addresses;
    std::vector<uint32_t> names;
    for (const auto& [p, text] : tensors) {
      addresses.push_back(reinterpret_cast<uintptr_t>(p));
      names.push_back(id(text));
    }
    tags(role, static_cast<uint32_t>(addresses.size()), addresses.data(), names.data());
  }
};

}  // namespace sim
