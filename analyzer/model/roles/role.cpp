// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/roles/role.h"

namespace gmt::analyzer {

namespace {

constexpr std::array<const char*, kRoleCount> kNames = {
    "parameter", "buffer",          "gradient", "optimizer_state", "activation", "temporary",
    "input",     "allocator_cache", "library",  "cuda_graph",      "unknown"};

}  // namespace

const char* role_name(Role role) {
  const auto i = static_cast<std::size_t>(role);
  return i < kNames.size() ? kNames[i] : "unknown";
}

std::optional<Role> role_of_name(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<Role>(i);
  }
  return std::nullopt;
}

const char* role_basis(Role role, bool tagged) {
  if (tagged) return "tagged by the framework";
  switch (role) {
    case Role::kGradient:
      return "inferred: made in backward, outlived it (a trace without gradient tags)";
    case Role::kOptimizerState:
      return "inferred: made in an optimizer's step, outlived it";
    case Role::kActivation:
      return "inferred: made in a module's forward, released by backward";
    case Role::kTemporary:
      return "inferred: made and released inside one forward, backward or step, or between steps";
    case Role::kInput:
      return "inferred: made outside the model, live while its forward ran";
    case Role::kAllocatorCache:
      return "the allocator's segments less its live blocks";
    case Role::kLibrary:
      return "driver allocations whose stacks lie in a library (cuBLAS, cuDNN, NCCL...)";
    case Role::kCudaGraph:
      return "inferred: made while a CUDA graph was captured (torch.cuda.graph), its private "
             "pool's (the pool's free space is in allocator_cache)";
    case Role::kUnknown:
      return "no scope or tag places it (no roles recorded; a block kept past the forward or "
             "backward that made it, not by backward nor as a gradient: a library's workspace, a "
             "kept graph; memory outside any framework)";
    default:
      return "tagged by the framework";
  }
}

const char* running_basis(Role role) {
  switch (role) {
    case Role::kActivation:
      return "inferred: made in the forward that was running then, autograd recording (or kept "
             "for the backward running then)";
    case Role::kTemporary:
      return "inferred: made in the forward that was running then, under no_grad or "
             "inference_mode";
    case Role::kGradient:
      return "inferred: made in the backward that was running then";
    default:
      return nullptr;
  }
}

}  // namespace gmt::analyzer
