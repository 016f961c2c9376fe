// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/roles/role_tracker.h"

#include <algorithm>

namespace gmt::analyzer {

namespace {

// The part of a tensor's qualified name that names its module: `layer1.0.conv1.weight` ->
// `layer1.0.conv1`; an optimizer's state (`layer1.0.conv1.weight.exp_avg`) drops one more.
std::string module_of_tensor(const std::string& name, int components) {
  std::size_t end = name.size();
  for (int i = 0; i < components; ++i) {
    const std::size_t dot = name.rfind('.', end == 0 ? 0 : end - 1);
    if (dot == std::string::npos || end == 0) return {};
    end = dot;
  }
  return name.substr(0, end);
}

// PyTorch keeps a cuBLAS workspace for each handle and stream (a thread has its own handle),
// made by the first matrix multiply there through the caching allocator and kept until the
// program ends: of CUBLAS_WORKSPACE_CONFIG's default size, ":4096:8" (32 MiB) on Hopper and later,
// ":4096:2:16:8" (8.125 MiB) before (CublasHandlePool.cpp). cuBLASLt's (1 MiB by default) is
// made after it (it takes the cuBLAS handle first), by the first multiply that uses cuBLASLt:
// one per thread. Without symbols of libtorch_cuda on the machine that reads the trace, their
// size and place are what tells them: seen on an H100 (torch 2.11), a 32 MiB and a 1 MiB block
// made in the first Linear's forward, and a 32 MiB one in the autograd thread's first backward.
constexpr uint64_t kCublasWorkspaceHopper = 4096 * 1024 * 8;
constexpr uint64_t kCublasWorkspaceBefore = 4096 * 1024 * 2 + 16 * 1024 * 8;
constexpr uint64_t kCublasLtWorkspace = 1024 * 1024;

bool cublas_workspace_size(uint64_t size) {
  return size == kCublasWorkspaceHopper || size == kCublasWorkspaceBefore;
}

}  // namespace

void RoleTracker::on(const format::ScopeRecord& r) {
  recorded_ = true;
  std::vector<Open>& open = threads_[r.thread];
  Where where = Where::kNone;
  switch (static_cast<format::ScopeKind>(r.kind)) {
    case format::ScopeKind::kModule:
      where = Where::kForward;
      break;
    case format::ScopeKind::kBackward:
      where = Where::kBackward;
      break;
    case format::ScopeKind::kOptimizer:
      where = Where::kOptimizer;
      break;
    case format::ScopeKind::kCudaGraph:
      where = Where::kCudaGraph;
      break;
    case format::ScopeKind::kProgramEnd:
      program_ended_ = true;
      return;
    case format::ScopeKind::kKvCacheLength:
      if (const auto name = names_.find(r.name); name != names_.end()) {
        if (auto length = parse_kv_cache_length(name->second)) {
          const bool grows = kv_cache_ && kv_cache_->batch == length->batch &&
                             kv_cache_->capacity == length->capacity &&
                             kv_cache_->tokens <= length->tokens;
          length->growing_since_ns = grows ? kv_cache_->growing_since_ns : r.time_ns;
          kv_cache_ = length;
          kv_report_root_ = last_ended_root_;
          kv_report_begun_ = root_forwards_begun_;
        }
      }
      return;
    case format::ScopeKind::kNoGrad:
      if (static_cast<format::ScopeAction>(r.action) == format::ScopeAction::kEnter) {
        mark_no_grad(open);
      }
      return;
    default:
      return;  // a kind this build does not know
  }
  const auto action = static_cast<format::ScopeAction>(r.action);
  if (action == format::ScopeAction::kEnter || action == format::ScopeAction::kEnterOutline) {
    const auto outer =
        std::find_if(open.begin(), open.end(), [where](const Open& o) { return o.where == where; });
    uint32_t instance = 0;
    if (outer != open.end()) {
      instance = outer->instance;
    } else {
      instance = static_cast<uint32_t>(instance_open_.size());
      instance_open_.push_back(true);
      instance_no_grad_.push_back(false);
      if (where == Where::kForward) {
        // A root forward begun while backward runs recomputes what activation checkpointing
        // dropped: not the next step's forward, so what lives across it is no input.
        if (open_backwards_.empty()) {
          ++forward_epoch_;
          root_forward_backwards_[r.name].push_back(backwards_);
        }
        if (root_forwards_.empty()) step_net_ = step_high_ = 0;
        RootForward& root = root_forwards_[instance];
        root.root = r.name;
        root.ordinal = ++root_forwards_begun_;
        root.outline = action == format::ScopeAction::kEnterOutline;
      }
      if (where == Where::kBackward) {
        ++backwards_;
        const Open* capture = capture_in(open);
        open_backwards_.push_back({instance, capture == nullptr
                                                 ? std::nullopt
                                                 : std::optional<uint32_t>(capture->instance)});
      }
    }
    open.push_back({where, r.name, instance});
    return;
  }
  const auto inner =
      std::find_if(open.rbegin(), open.rend(), [where](const Open& o) { return o.where == where; });
  if (inner == open.rend()) return;  // entered before the trace, or a stray exit
  const uint32_t instance = inner->instance;
  open.erase(std::next(inner).base());
  const bool outermost = std::none_of(open.begin(), open.end(), [&](const Open& o) {
    return o.where == where && o.instance == instance;
  });
  if (!outermost) return;
  instance_open_[instance] = false;
  std::erase_if(open_backwards_,
                [instance](const OpenBackward& b) { return b.instance == instance; });
  const auto root = root_forwards_.find(instance);
  if (root == root_forwards_.end()) return;
  if (!root->second.outline) root_modules_[root->second.root] = std::move(root->second.modules);
  last_ended_root_ = root->second.root;
  root_forwards_.erase(root);
  if (root_forwards_.empty()) last_step_bytes_ = static_cast<uint64_t>(step_high_);
}

void RoleTracker::mark_no_grad(const std::vector<Open>& open) {
  const auto forward = std::find_if(open.rbegin(), open.rend(),
                                    [](const Open& o) { return o.where == Where::kForward; });
  if (forward != open.rend()) instance_no_grad_[forward->instance] = true;
}

uint32_t RoleTracker::module_in(RootForward& forward, uint32_t stack, uint32_t innermost) {
  const uint64_t key = static_cast<uint64_t>(stack) << 32 | forward.made[stack]++;
  if (!forward.outline) {
    forward.modules[key] = innermost;
    return innermost;
  }
  const auto whole = root_modules_.find(forward.root);
  if (whole == root_modules_.end()) return forward.root;
  const auto module = whole->second.find(key);
  return module != whole->second.end() ? module->second : forward.root;
}

void RoleTracker::on(const format::TagRecord& r) {
  recorded_ = true;
  const auto* const live = live_.find(r.address);
  if (live == nullptr) {
    // An output may be a view into a block, not its start: a hint lost, no tag missed.
    if (r.role != static_cast<uint32_t>(format::TagRole::kOutput)) ++unmatched_tags_;
    return;
  }
  Facts& f = facts_[live->value];
  if (r.role == static_cast<uint32_t>(format::TagRole::kOutput)) {
    f.output = true;  // a hint: the block keeps its module and whatever else its life says
    return;
  }
  f.tag = static_cast<uint8_t>(r.role);
  f.module = r.name;
  if (r.role == static_cast<uint32_t>(format::TagRole::kGradient)) gradients_tagged_ = true;
}

uint32_t RoleTracker::new_facts() {
  if (!free_facts_.empty()) {
    const uint32_t i = free_facts_.back();
    free_facts_.pop_back();
    facts_[i] = Facts{};
    return i;
  }
  facts_.emplace_back();
  return static_cast<uint32_t>(facts_.size() - 1);
}

const std::string& RoleTracker::name(uint32_t id) const {
  static const std::string kNone;
  const auto it = names_.find(id);
  return it != names_.end() ? it->second : kNone;
}

void RoleTracker::on_block(const format::BlockRecord& r) {
  last_ended_.reset();
  const auto action = static_cast<format::BlockAction>(r.action);
  if (action == format::BlockAction::kAlloc) {
    const uint32_t i = new_facts();
    Facts& f = facts_[i];
    f.forward_epoch = forward_epoch_;
    f.size = r.size;
    if (!root_forwards_.empty()) {
      step_net_ += static_cast<int64_t>(r.size);
      step_high_ = std::max(step_high_, step_net_);
    }
    const auto thread = threads_.find(r.thread);
    const Open* capture = thread != threads_.end() ? capture_in(thread->second) : nullptr;
    if (capture != nullptr) {
      // A graph's private pool keeps what its capture made, whatever scope made it.
      f.where = Where::kCudaGraph;
      f.instance = capture->instance;
    } else if (thread != threads_.end() && !thread->second.empty()) {
      const Open& inner = thread->second.back();
      f.where = inner.where;
      f.instance = inner.instance;
      if (inner.where == Where::kForward) {
        const auto root = root_forwards_.find(inner.instance);
        f.module = root != root_forwards_.end() ? module_in(root->second, r.stack, inner.name)
                                                : inner.name;
        if (root != root_forwards_.end()) {
          f.root = root->second.root;
          f.root_epoch = static_cast<uint32_t>(root_forward_backwards_[f.root].size());
          f.backwards = backwards_;
          // module_in() has counted this block: its order at the stack is one less.
          f.site = static_cast<uint64_t>(r.stack) << 32 | (root->second.made[r.stack] - 1);
        }
      }
    } else if (!open_backwards_.empty()) {
      // An autograd thread's block: its thread opened no scope, backward() runs on another.
      const OpenBackward& backward = open_backwards_.back();
      const bool captured = backward.capture && instance_open_[*backward.capture];
      f.where = captured ? Where::kCudaGraph : Where::kBackward;
      f.instance = captured ? *backward.capture : backward.instance;
    }
    last_made_ = f.where == Where::kForward ? Made{f.module, f.instance + 1} : Made{};
    if (f.where == Where::kForward || f.where == Where::kBackward) {
      if (cublas_workspace_size(r.size)) {
        f.workspace = true;
        cublas_lt_workspaces_.try_emplace(r.thread, 0);
      } else if (r.size == kCublasLtWorkspace) {
        const auto lt = cublas_lt_workspaces_.find(r.thread);
        f.workspace = lt != cublas_lt_workspaces_.end() && lt->second == 0;
        if (f.workspace) lt->second = r.address;
      }
    }
    auto [live, inserted] = live_.try_insert(r.address, i);
    if (!inserted) {  // the old block's free was not recorded: it ends here
      Facts& old = facts_[live->value];
      last_ended_ = class_of(old);
      old.freed = true;
      if (!root_forwards_.empty()) step_net_ -= static_cast<int64_t>(old.size);
      if (old.pins == 0) free_facts_.push_back(live->value);
      live->value = i;
    }
    return;
  }
  if (action != format::BlockAction::kFreeRequested) return;
  auto* const live = live_.find(r.address);
  if (live == nullptr) return;
  const uint32_t i = live->value;
  live_.erase(live);
  Facts& f = facts_[i];
  f.freed = true;
  if (!root_forwards_.empty()) step_net_ -= static_cast<int64_t>(f.size);
  // A workspace is freed only by the teardown (or torch._C._cuda_clearCublasWorkspaces()): a
  // block freed before is none, and cuBLASLt's is the thread's next one of its size.
  if (!program_ended_ && f.workspace) {
    f.workspace = false;
    for (auto& [thread, lt] : cublas_lt_workspaces_) {
      if (lt == r.address) lt = 0;
    }
  }
  f.forward_during = forward_epoch_ > f.forward_epoch;
  if (f.where != Where::kNone && f.instance < instance_open_.size() && instance_open_[f.instance]) {
    f.end = End::kInside;
  } else if (!open_backwards_.empty()) {
    f.end = End::kByBackward;
  } else {
    f.end = End::kAfter;
  }
  // Kept into the model's next forward and released inside a later one: replaced by the model
  // itself (a cache grown by concatenation, a state updated), not a workspace freed at teardown.
  f.root_forward_during = root_forward_during(f) && f.end != End::kInside &&
                          std::any_of(root_forwards_.begin(), root_forwards_.end(),
                                      [&](const auto& open) { return open.second.root == f.root; });
  if (f.root != 0 && !f.output) {
    if (f.tag == static_cast<uint8_t>(format::TagRole::kKvCache)) {
      site_hints_[f.root][f.site] = SiteHint::kKvCache;
    } else if (f.tag == kUntagged && f.root_forward_during) {
      site_hints_[f.root].try_emplace(f.site, SiteHint::kState);
    }
  }
  last_ended_ = class_of(f);
  if (f.pins == 0) free_facts_.push_back(i);
}

bool RoleTracker::decode_step_open() const {
  if (!kv_cache_ || kv_report_root_ == 0) return false;
  return std::any_of(root_forwards_.begin(), root_forwards_.end(), [&](const auto& open) {
    return open.second.root == kv_report_root_ && open.second.ordinal == kv_report_begun_ + 1 &&
           instance_no_grad_[open.first];
  });
}

const RoleTracker::Open* RoleTracker::capture_in(const std::vector<Open>& open) {
  const auto it = std::find_if(open.rbegin(), open.rend(),
                               [](const Open& o) { return o.where == Where::kCudaGraph; });
  return it != open.rend() ? &*it : nullptr;
}

bool RoleTracker::capturing(uint64_t thread) const {
  const auto it = threads_.find(thread);
  return it != threads_.end() && capture_in(it->second) != nullptr;
}

bool RoleTracker::captured(uint64_t address) const {
  const auto* live = live_.find(address);
  return live != nullptr && facts_[live->value].where == Where::kCudaGraph;
}

void RoleTracker::snapshot(int device, int slot, const std::vector<Block>& blocks,
                           const std::vector<PeakSite>& rows) {
  Snapshot s;
  s.blocks.reserve(blocks.size());
  for (const Block& b : blocks) {
    const auto* const live = live_.find(b.address);
    if (live == nullptr) {
      s.unknown_blocks += b.size;
      ++s.unknown_count;
      continue;
    }
    ++facts_[live->value].pins;
    s.blocks.push_back({live->value, b.size, b.stack});
    s.running.push_back(running_now(facts_[live->value]));
  }
  s.kv_cache = kv_cache_;
  s.step_bytes = last_step_bytes_;
  s.in_decode_step = decode_step_open();
  for (const PeakSite& row : rows) {
    if (row.cache && row.graph) {
      s.graph_cache_bytes += row.bytes;
      s.graph_cache_count += row.count;
    } else if (row.cache) {
      s.cache_bytes += row.bytes;
      s.cache_count += row.count;
    } else if (row.allocator < 0) {
      s.outside.push_back({row.stack, row.bytes, row.count});
    }
  }
  auto [it, inserted] = snapshots_.try_emplace({device, slot});
  if (!inserted) unpin(it->second);
  it->second = std::move(s);
}

void RoleTracker::unpin(Snapshot& s) {
  for (const Snapshot::Held& held : s.blocks) {
    Facts& f = facts_[held.facts];
    if (--f.pins == 0 && f.freed) free_facts_.push_back(held.facts);
  }
  s.blocks.clear();
  s.running.clear();
}

RoleTracker::Running RoleTracker::running_now(const Facts& f) const {
  const bool open = f.instance < instance_open_.size() && instance_open_[f.instance];
  switch (f.where) {
    case Where::kForward:
      if (open) {
        return instance_no_grad_[f.instance] ? Running::kForwardNoGrad : Running::kForwardRecording;
      }
      return open_backwards_.empty() ? Running::kNo : Running::kKeptForBackward;
    case Where::kBackward:
      return open ? Running::kBackward : Running::kNo;
    default:
      return Running::kNo;
  }
}

bool RoleTracker::root_forward_during(const Facts& f) const {
  if (f.where != Where::kForward || f.root == 0) return false;
  const auto forwards = root_forward_backwards_.find(f.root);
  // The root's forwards are numbered from 1: the one after the block's is at index root_epoch.
  return forwards != root_forward_backwards_.end() && forwards->second.size() > f.root_epoch &&
         forwards->second[f.root_epoch] == f.backwards;
}

RoleTracker::SiteHint RoleTracker::site_hint(const Facts& f) const {
  if (f.root == 0 || f.tag != kUntagged || f.output) return SiteHint::kNone;
  const auto root = site_hints_.find(f.root);
  if (root == site_hints_.end()) return SiteHint::kNone;
  const auto hint = root->second.find(f.site);
  return hint == root->second.end() ? SiteHint::kNone : hint->second;
}

// workspace (1) | site hint (2) | output (1) | root_forward_during (1) | running (3 bits) |
// tag (8) | where (3) | end (2) | forward_during (1) | freed (1)
RoleTracker::RoleClass RoleTracker::class_of(const Facts& f, Running running) const {
  const bool forward_during = f.freed ? f.forward_during : forward_epoch_ > f.forward_epoch;
  // A live block's life is not over: whether the model replaces it is told by its site's.
  const bool kept_into_next = f.freed && f.root_forward_during;
  return static_cast<RoleClass>(
      static_cast<unsigned>(f.workspace) << 22 | static_cast<unsigned>(site_hint(f)) << 20 |
      static_cast<unsigned>(f.output) << 19 | static_cast<unsigned>(kept_into_next) << 18 |
      static_cast<unsigned>(running) << 15 | f.tag << 7 | static_cast<unsigned>(f.where) << 4 |
      static_cast<unsigned>(f.end) << 2 | forward_during << 1 | f.freed);
}

Role RoleTracker::settled_role(RoleClass c) const {
  Facts f;
  f.tag = static_cast<uint8_t>(c >> 7);
  f.where = static_cast<Where>(c >> 4 & 7);
  f.end = static_cast<End>(c >> 2 & 3);
  f.forward_during = (c >> 1 & 1) != 0;
  f.freed = (c & 1) != 0;
  f.root_forward_during = (c >> 18 & 1) != 0;
  f.output = (c >> 19 & 1) != 0;
  const auto hint = static_cast<SiteHint>(c >> 20 & 3);
  const bool workspace = (c >> 22 & 1) != 0;
  if (!recorded_) return Role::kUnknown;
  switch (f.tag) {
    case static_cast<uint8_t>(format::TagRole::kParameter):
      return Role::kParameter;
    case static_cast<uint8_t>(format::TagRole::kBuffer):
      return Role::kBuffer;
    case static_cast<uint8_t>(format::TagRole::kGradient):
      return Role::kGradient;
    case static_cast<uint8_t>(format::TagRole::kOptimizerState):
      return Role::kOptimizerState;
    case static_cast<uint8_t>(format::TagRole::kKvCache):
      return Role::kKvCache;
    default:
      break;
  }
  switch (f.where) {
    case Where::kForward:
      if (f.end == End::kInside) return Role::kTemporary;
      if (f.end == End::kByBackward) return Role::kActivation;
      // Kept past its forward: what the program took from the model (it returned it), else
      // what the model kept for itself once it ran again (a cache, a recurrent state).
      if (f.output) return Role::kOutput;
      if (f.root_forward_during) return Role::kState;
      // Not (yet) kept into a later forward: the blocks its forward's earlier runs made at the
      // same place say what it is (the last forward's cache, one still running at a failure).
      if (hint == SiteHint::kKvCache) return Role::kKvCache;
      if (hint == SiteHint::kState) return Role::kState;
      return workspace ? Role::kLibrary : Role::kUnknown;
    case Where::kBackward:
      if (f.end == End::kInside) return Role::kTemporary;
      if (!gradients_tagged_) return Role::kGradient;
      return workspace ? Role::kLibrary : Role::kUnknown;
    case Where::kOptimizer:
      return f.end == End::kInside ? Role::kTemporary : Role::kOptimizerState;
    case Where::kCudaGraph:
      return Role::kCudaGraph;
    case Where::kNone:
      break;
  }
  if (f.forward_during) return Role::kInput;
  if (f.freed) return Role::kTemporary;
  return f.output ? Role::kOutput : Role::kUnknown;
}

Role RoleTracker::role_of_class(RoleClass c) const {
  const Role settled = settled_role(c);
  if (settled != Role::kUnknown || !recorded_) return settled;
  // Nothing in its life placed it: the work that made it, running at that moment, does.
  switch (static_cast<Running>(c >> 15 & 7)) {
    case Running::kForwardRecording:
    case Running::kKeptForBackward:
      return Role::kActivation;
    case Running::kForwardNoGrad:
      return Role::kTemporary;
    case Running::kBackward:
      return Role::kGradient;
    case Running::kNo:
      break;
  }
  return settled;
}

std::string RoleTracker::module_of(const Facts& f, Role role) const {
  const auto name = names_.find(f.module);
  if (f.module == 0 || name == names_.end()) return {};
  if (f.tag == kUntagged) return f.where == Where::kForward ? name->second : std::string{};
  return module_of_tensor(name->second, role == Role::kOptimizerState ? 2 : 1);
}

std::optional<RoleBreakdown> RoleTracker::resolve(int device, int slot) const {
  const auto it = snapshots_.find({device, slot});
  if (it == snapshots_.end()) return std::nullopt;
  const Snapshot& s = it->second;
  RoleBreakdown table;
  std::map<std::string, ModuleRoles> modules;
  std::map<uint32_t, std::array<uint64_t, kRoleCount>> by_stack;
  for (std::size_t b = 0; b < s.blocks.size(); ++b) {
    const auto& [i, bytes, stack] = s.blocks[b];
    const Facts& f = facts_[i];
    const Role role = role_of_class(class_of(f, s.running[b]));
    by_stack[stack][static_cast<std::size_t>(role)] += bytes;
    RoleFigure& figure = table[role];
    figure.bytes += bytes;
    ++figure.count;
    if (recorded_ && f.tag != kUntagged) figure.tagged_bytes += bytes;
    if (role != settled_role(class_of(f, Running::kNo))) figure.running_bytes += bytes;
    const std::string module = recorded_ ? module_of(f, role) : std::string{};
    if (module.empty()) continue;
    ModuleRoles& m = modules[module];
    m.bytes[static_cast<std::size_t>(role)] += bytes;
    m.total += bytes;
  }
  table[Role::kUnknown].bytes += s.unknown_blocks;
  table[Role::kUnknown].count += s.unknown_count;
  table[Role::kAllocatorCache].bytes += s.cache_bytes;
  table[Role::kAllocatorCache].count += s.cache_count;
  // A graph's private pool serves only its captures: what is free in it is the graph's, kept for
  // its replays (CUDA graph trees free a capture's tensors and replay into the same memory).
  table[Role::kCudaGraph].bytes += s.graph_cache_bytes;
  table[Role::kCudaGraph].count += s.graph_cache_count;
  table.outside = s.outside;
  table.kv_cache = s.kv_cache;
  table.step_bytes = s.step_bytes;
  table.in_decode_step = s.in_decode_step;
  for (const auto& [stack, bytes] : by_stack) table.block_stacks.push_back({stack, bytes});
  for (auto& [name, m] : modules) {
    m.module = name;
    table.modules.push_back(std::move(m));
  }
  std::sort(table.modules.begin(), table.modules.end(),
            [](const ModuleRoles& a, const ModuleRoles& b) {
              return a.total != b.total ? a.total > b.total : a.module < b.module;
            });
  return table;
}

}  // namespace gmt::analyzer
