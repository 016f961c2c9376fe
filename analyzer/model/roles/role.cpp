// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/roles/role.h"

#include <charconv>
#include <map>

namespace gmt::analyzer {

namespace {

constexpr std::array<const char*, kRoleCount> kNames = {
    "parameter", "buffer", "gradient",        "optimizer_state", "activation",
    "temporary", "input",  "allocator_cache", "library",         "cuda_graph",
    "kv_cache",  "state",  "output",          "unknown"};

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
      return "driver allocations whose stacks lie in a library (cuBLAS, cuDNN, NCCL...), and "
             "PyTorch's cuBLAS and cuBLASLt workspaces (inferred: blocks of their sizes, 32 or "
             "8.125 MiB, and a thread's first 1 MiB after it, made in a forward or backward and "
             "kept to the end)";
    case Role::kCudaGraph:
      return "inferred: made while a CUDA graph was captured (torch.cuda.graph), and the free "
             "space of its private pool's segments (those its capture took or made blocks in), "
             "kept for its replays";
    case Role::kKvCache:
      return "inferred: made where the model's earlier forwards made its key-value cache's "
             "tagged keys and values, not yet tagged (the last forward's, or one still running)";
    case Role::kState:
      return "inferred: made in a model's forward and kept into its next forward, no backward "
             "between (a cache or state the model keeps), or made where its earlier forwards made "
             "such";
    case Role::kOutput:
      return "inferred: a root forward's result (the hooks saw it returned), kept past that "
             "forward and not released by backward";
    case Role::kUnknown:
      return "no scope or tag places it (no roles recorded; a block kept past the forward or "
             "backward that made it, not by backward, nor as a gradient, output or state: a "
             "library's workspace, a kept graph; memory outside any framework)";
    default:
      return "tagged by the framework";
  }
}

std::optional<KvCacheLength> parse_kv_cache_length(std::string_view text) {
  std::map<std::string_view, uint64_t> fields;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(' '), text.size());
    const std::string_view field = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    uint64_t value = 0;
    const std::string_view digits = field.substr(eq + 1);
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || ptr != digits.data() + digits.size()) return std::nullopt;
    fields[field.substr(0, eq)] = value;
  }
  KvCacheLength length;
  for (auto [key, slot] : {std::pair{"batch", &length.batch},
                           {"tokens", &length.tokens},
                           {"capacity", &length.capacity},
                           {"bytes_per_token", &length.bytes_per_token}}) {
    const auto it = fields.find(key);
    if (it == fields.end()) return std::nullopt;
    *slot = it->second;
  }
  if (const auto layers = fields.find("layers"); layers != fields.end())
    length.layers = layers->second;
  return length;
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
