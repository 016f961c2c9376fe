// SPDX-License-Identifier: Apache-2.0
// What a byte of a device is for, in the user's terms: a role, and how the analyzer knows it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gmt::analyzer {

// Values index RoleBreakdown::roles; names are the JSON's (role_name).
enum class Role : uint8_t {
  kParameter,
  kBuffer,
  kGradient,
  kOptimizerState,
  kActivation,      // made in a module's forward, kept until backward released it
  kTemporary,       // made and released inside one scope (a forward, backward or step)
  kInput,           // made outside the model, live while its forward ran
  kAllocatorCache,  // a caching allocator's segments, not handed out
  kLibrary,    // driver allocations of a library (cuBLAS, cuDNN, NCCL...) outside the framework
  kCudaGraph,  // made while a CUDA graph was captured: its private pool's blocks
  kKvCache,    // a key-value cache's keys and values, tagged by the framework
  kState,      // made in a model's forward and kept into a later forward of it (a cache, a state)
  kOutput,     // a root forward's result the program kept past its forward
  kUnknown,
};
inline constexpr std::size_t kRoleCount = 14;

const char* role_name(Role role);
// The role of a JSON or command-line name ("optimizer_state"); none for another.
std::optional<Role> role_of_name(std::string_view name);
// How a role's bytes are known, for each role: "tagged by the framework" or the rule that
// inferred it.
const char* role_basis(Role role, bool tagged);
// How a role's bytes are known when the work that made them was still running at the moment
// (RoleFigure::running_bytes); none for a role no running work gives.
const char* running_basis(Role role);

// One role's bytes at a moment, how many of them the framework tagged (the rest inferred), and
// how many are known only from the work still running then that made them (a forward cut short
// by a failure: its blocks are activations, or temporaries under no_grad).
struct RoleFigure {
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t tagged_bytes = 0;
  uint64_t running_bytes = 0;
};

// One module's bytes at a moment, by role (blocks made in its forward, or its own tensors).
struct ModuleRoles {
  std::string module;  // qualified name as named_modules() gives it; the root's class name
  std::array<uint64_t, kRoleCount> bytes{};
  uint64_t total = 0;
};

// A key-value cache's length, as the framework's hooks last reported it before a moment
// (format's ScopeKind::kKvCacheLength).
struct KvCacheLength {
  uint64_t batch = 0;            // sequences
  uint64_t tokens = 0;           // held per sequence
  uint64_t capacity = 0;         // tokens per sequence a preallocated cache holds; 0: it grows
  uint64_t bytes_per_token = 0;  // one more token, per sequence, every layer's keys and values
  uint64_t layers = 0;           // layers with keys and values; 0: not told
  // When the reports began to tell of this growth: the first of them whose tokens were not
  // fewer than the report's before, in the same batch and capacity (a new generate() starts
  // anew). Two moments with the same are of one decode loop.
  uint64_t growing_since_ns = 0;
};
// Parses the scope's name ("batch=8 tokens=1536 capacity=0 bytes_per_token=32768"); none when a
// field is missing or not a number.
std::optional<KvCacheLength> parse_kv_cache_length(std::string_view text);

// A device's bytes at a moment by role: they add up to the device's figure then. Driver
// allocations outside any caching allocator are `outside` until their owners are known
// (split_outside(): library or unknown).
struct RoleBreakdown {
  uint64_t time_ns = 0;  // the moment it is of
  // At exit: taken when the program's code was done (the framework's kProgramEnd scope), before
  // the interpreter's teardown freed what it held; false: at the trace's end.
  bool at_program_end = false;
  std::array<RoleFigure, kRoleCount> roles{};
  std::vector<ModuleRoles> modules;  // largest first
  struct Outside {
    uint32_t stack = 0;
    uint64_t bytes = 0;
    uint64_t count = 0;
  };
  std::vector<Outside> outside;
  // The caching allocators' live blocks by the stack of their allocation, each stack's bytes by
  // role (what `leaks` names each block group's role by).
  struct StackRoles {
    uint32_t stack = 0;
    std::array<uint64_t, kRoleCount> bytes{};
  };
  std::vector<StackRoles> block_stacks;  // by stack, ascending
  // The key-value cache's length then, where the framework's hooks reported one.
  std::optional<KvCacheLength> kv_cache;
  // The most the last root forward ended before then held above what was live when it began
  // (a decode step's working memory: its attention's scratch, a layer's keys made anew, its
  // logits); none before any root forward ended.
  std::optional<uint64_t> step_bytes;
  // The decode loop's next step was running then: a forward under no_grad of the root whose
  // forward the last cache report followed, the first begun since that report.
  bool in_decode_step = false;

  RoleFigure& operator[](Role role) { return roles[static_cast<std::size_t>(role)]; }
  const RoleFigure& operator[](Role role) const { return roles[static_cast<std::size_t>(role)]; }
  uint64_t total_bytes() const {
    uint64_t total = 0;
    for (const RoleFigure& r : roles) total += r.bytes;
    for (const Outside& o : outside) total += o.bytes;
    return total;
  }
};

}  // namespace gmt::analyzer
