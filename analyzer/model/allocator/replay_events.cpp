// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/replay_events.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <variant>

#include "analyzer/model/input/trace_error.h"
#include "format/file_header.h"

namespace gmt::analyzer::allocator {
namespace {

using format::BlockAction;

bool is_pytorch(uint32_t allocator) {
  return allocator == static_cast<uint32_t>(format::BlockAllocator::kPytorch);
}

bool sample_has_total(const format::SampleRecord& s) {
  return ((s.present & format::SampleField::kDriverTotal) != 0 && s.driver_total != 0) ||
         ((s.present & format::SampleField::kNvmlDeviceTotal) != 0 && s.nvml_device_total != 0);
}

}  // namespace

ReplayEvents ReplayEvents::read(std::span<const uint8_t> bytes, const std::string& name,
                                format::PageAccess pages) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(name + ": " + header.error);
  format::TraceReader reader(bytes, header.header, std::move(pages));
  ReplayEvents out;
  // A device's size is read from its first sample that has one (TraceReplay::apply): later
  // samples change nothing.
  std::set<int32_t> sampled;
  uint64_t requests = 0;
  int backwards = 0;  // open, on any thread
  while (const format::Record* record = reader.next_record()) {
    if (const auto* b = std::get_if<format::BlockRecord>(record)) {
      if (!is_pytorch(b->allocator)) continue;
      const auto action = static_cast<BlockAction>(b->action);
      const bool request = action == BlockAction::kAlloc || action == BlockAction::kOom;
      out.blocks_.push_back(
          {b->address, b->size, b->stream, request ? static_cast<uint32_t>(requests++) : kNoRequest,
           static_cast<int16_t>(b->device), static_cast<uint8_t>(b->action), backwards > 0});
      continue;
    }
    if (const auto* sc = std::get_if<format::ScopeRecord>(record);
        sc != nullptr && sc->kind == static_cast<uint32_t>(format::ScopeKind::kBackward))
      backwards += sc->action == static_cast<uint32_t>(format::ScopeAction::kExit) ? -1 : 1;
    bool keep = false;
    if (const auto* s = std::get_if<format::AllocatorSettingsRecord>(record)) {
      keep = is_pytorch(s->allocator);
    } else if (std::holds_alternative<format::AllocFailedRecord>(*record) ||
               std::holds_alternative<format::DeviceRecord>(*record)) {
      keep = true;
    } else if (const auto* s = std::get_if<format::SampleRecord>(record)) {
      keep = sample_has_total(*s) && sampled.insert(s->device).second;
    } else if (const auto* sc = std::get_if<format::ScopeRecord>(record)) {
      // CUDA graph captures counted; the ends of steps and backwards, where a what-if may
      // empty the cache.
      keep = (sc->kind == static_cast<uint32_t>(format::ScopeKind::kCudaGraph) &&
              sc->action == static_cast<uint32_t>(format::ScopeAction::kEnter)) ||
             ((sc->kind == static_cast<uint32_t>(format::ScopeKind::kOptimizer) ||
               sc->kind == static_cast<uint32_t>(format::ScopeKind::kBackward)) &&
              sc->action == static_cast<uint32_t>(format::ScopeAction::kExit));
    } else if (std::holds_alternative<format::NameRecord>(*record) ||
               std::holds_alternative<format::PhaseRecord>(*record)) {
      keep = true;  // the phases a what-if may empty the cache at
    }
    if (keep) out.others_.emplace_back(out.blocks_.size(), *record);
  }
  out.history_dropped_ = reader.window().dropped;
  for (const format::ReadProblem& p : reader.problems())
    out.problems_.push_back("byte " + std::to_string(p.offset) + ": " + p.reason);
  return out;
}

TraceReplayResult ReplayEvents::replay(const ReplayOptions& options) const {
  if (!options.what_if && !options.alloc_conf)
    throw std::logic_error("ReplayEvents::replay: the unchanged replay needs the whole records");
  TraceReplay replay(options);
  auto other = others_.begin();
  format::BlockRecord r;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  for (uint64_t i = 0; i <= blocks_.size(); ++i) {
    for (; other != others_.end() && other->first == i; ++other) replay.apply(other->second);
    if (i == blocks_.size()) break;
    const Block& b = blocks_[i];
    r.address = b.address;
    r.size = b.size;
    r.stream = b.stream;
    r.device = b.device;
    r.action = b.action;
    if (b.ordinal != kNoRequest) replay.set_next_request(b.ordinal);
    replay.apply(format::Record(r));
    if (options.stop_at_failure && replay.failed()) break;
  }
  TraceReplayResult result = replay.finish();
  result.history_dropped = history_dropped_;
  for (DeviceReplayResult& d : result.devices) d.history_dropped = history_dropped_;
  result.problems = problems_;
  return result;
}

namespace {

constexpr std::size_t kNone = SIZE_MAX;
// The ids of the recomputation's own blocks: no CUDA address is this high.
constexpr uint64_t kRecomputedAddress = 3ull << 61;

// Which module asked for a module name is (itself or inside it), the shortest first; -1: none.
int matching_module(const std::string& name, const std::vector<std::string>& modules) {
  int best = -1;
  for (std::size_t m = 0; m < modules.size(); ++m) {
    const std::string& want = modules[m];
    const bool inside = name == want || (name.size() > want.size() && name.starts_with(want) &&
                                         name[want.size()] == '.');
    if (inside && (best < 0 || want.size() < modules[static_cast<std::size_t>(best)].size()))
      best = static_cast<int>(m);
  }
  return best;
}

}  // namespace

std::vector<uint64_t> ReplayEvents::requested_by_module(const BlockRoles& roles, Role role) const {
  std::vector<uint64_t> bytes(roles.module_names.size(), 0);
  for (const Block& b : blocks_) {
    if (b.ordinal == kNoRequest || b.ordinal >= roles.modules.size() || roles.of(b.ordinal) != role)
      continue;
    if (const uint32_t m = roles.modules[b.ordinal]; m < bytes.size()) bytes[m] += b.size;
  }
  return bytes;
}

std::vector<uint64_t> ReplayEvents::request_sizes() const {
  std::vector<uint64_t> sizes;
  for (const Block& b : blocks_) {
    if (b.ordinal == kNoRequest) continue;
    if (b.ordinal >= sizes.size()) sizes.resize(b.ordinal + 1, 0);
    sizes[b.ordinal] = b.size;
  }
  return sizes;
}

ReplayEvents ReplayEvents::checkpointed(const BlockRoles& roles,
                                        const std::vector<std::string>& modules,
                                        std::vector<CheckpointedModule>& changed) const {
  changed.assign(modules.size(), {});
  for (std::size_t m = 0; m < modules.size(); ++m) changed[m].name = modules[m];
  // Each module name's match, by BlockRoles' dense id.
  std::vector<int> match(roles.module_names.size(), -1);
  for (std::size_t id = 1; id < roles.module_names.size(); ++id)
    match[id] = matching_module(roles.module_names[id], modules);

  // Each allocation's free (requested), and the blocks of each module's forward, in order.
  std::vector<std::size_t> freed(blocks_.size(), kNone);
  std::map<std::pair<uint32_t, int>, std::vector<std::size_t>> groups;  // (forward, module)
  {
    std::unordered_map<uint64_t, std::size_t> live;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      const Block& b = blocks_[i];
      const auto action = static_cast<BlockAction>(b.action);
      if (action == BlockAction::kAlloc) {
        live[b.address] = i;
        const uint32_t o = b.ordinal;
        if (o < roles.modules.size() && roles.modules[o] < match.size() &&
            match[roles.modules[o]] >= 0 && roles.forwards[o] != 0)
          groups[{roles.forwards[o], match[roles.modules[o]]}].push_back(i);
      } else if (action == BlockAction::kFreeRequested) {
        if (const auto it = live.find(b.address); it != live.end()) {
          freed[it->second] = i;
          live.erase(it);
        }
      }
    }
  }

  std::vector<std::vector<Block>> before(blocks_.size() + 1), after(blocks_.size());
  uint64_t next_recomputed = kRecomputedAddress;
  for (const auto& [key, group] : groups) {
    const std::size_t exit = group.back();  // the forward's last block: it ends right after
    std::vector<std::size_t> kept;          // activations the backward releases
    for (const std::size_t a : group) {
      const std::size_t f = freed[a];
      if (roles.of(blocks_[a].ordinal) != Role::kActivation || f == kNone || f < exit ||
          !blocks_[f].in_backward)
        continue;
      kept.push_back(a);
    }
    // The module's output is not its to release: the next module keeps it, and the backward
    // releases it first, in that module's backward, before this module's own.
    if (!kept.empty())
      kept.erase(std::min_element(kept.begin(), kept.end(), [&](std::size_t a, std::size_t b) {
        return freed[a] < freed[b];
      }));
    std::size_t first_use = kNone;
    uint64_t bytes = 0;
    for (const std::size_t a : kept) {
      first_use = std::min(first_use, freed[a]);
      bytes += blocks_[a].size;
    }
    if (kept.empty()) continue;
    CheckpointedModule& c = changed[static_cast<std::size_t>(key.second)];
    ++c.forwards;
    c.blocks += kept.size();
    c.max_bytes = std::max(c.max_bytes, bytes);
    const auto is_kept = [&](std::size_t a) {
      return std::binary_search(kept.begin(), kept.end(), a);
    };
    // Released at the forward's end.
    for (const std::size_t a : kept) {
      for (const BlockAction action : {BlockAction::kFreeRequested, BlockAction::kFreeCompleted}) {
        Block b = blocks_[a];
        b.ordinal = kNoRequest;
        b.action = static_cast<uint8_t>(action);
        after[exit].push_back(b);
      }
    }
    // The forward again, before the backward needs its activations.
    std::vector<Block>& again = before[first_use];
    std::unordered_map<uint64_t, uint64_t> renamed;  // the original's address -> the recomputed
    std::vector<uint64_t> open;                      // recomputed blocks not yet freed
    std::size_t member = 0;
    for (std::size_t j = group.front(); j <= exit; ++j) {
      Block b = blocks_[j];
      const auto action = static_cast<BlockAction>(b.action);
      if (action == BlockAction::kAlloc) {
        if (member >= group.size() || group[member] != j) continue;  // not this forward's
        ++member;
        if (!is_kept(j)) {
          b.address = next_recomputed++;
          renamed[blocks_[j].address] = b.address;
          open.push_back(b.address);
        }
        again.push_back(b);
      } else if (action == BlockAction::kFreeRequested) {
        // Freed as it was, and at once: the recomputation's streams are not the recording's.
        const auto it = renamed.find(b.address);
        if (it == renamed.end()) continue;
        b.address = it->second;
        b.ordinal = kNoRequest;
        again.push_back(b);
        b.action = static_cast<uint8_t>(BlockAction::kFreeCompleted);
        again.push_back(b);
        std::erase(open, b.address);
        renamed.erase(it);
      }
    }
    for (const uint64_t address : open) {  // the output again, and what outlived the forward
      for (const BlockAction action : {BlockAction::kFreeRequested, BlockAction::kFreeCompleted}) {
        Block b = blocks_[exit];
        b.address = address;
        b.ordinal = kNoRequest;
        b.action = static_cast<uint8_t>(action);
        again.push_back(b);
      }
    }
  }

  return spliced(before, after, nullptr);
}

ReplayEvents ReplayEvents::spliced(const std::vector<std::vector<Block>>& before,
                                   const std::vector<std::vector<Block>>& after,
                                   const std::function<bool(std::size_t, Block&)>& edit) const {
  ReplayEvents out;
  out.history_dropped_ = history_dropped_;
  out.problems_ = problems_;
  out.blocks_.reserve(blocks_.size());
  auto other = others_.begin();
  for (std::size_t i = 0; i <= blocks_.size(); ++i) {
    for (; other != others_.end() && other->first == i; ++other)
      out.others_.emplace_back(out.blocks_.size(), other->second);
    if (i < before.size())
      out.blocks_.insert(out.blocks_.end(), before[i].begin(), before[i].end());
    if (i == blocks_.size()) break;
    Block b = blocks_[i];
    if (edit && !edit(i, b)) continue;
    out.blocks_.push_back(b);
    if (i < after.size()) out.blocks_.insert(out.blocks_.end(), after[i].begin(), after[i].end());
  }
  return out;
}

}  // namespace gmt::analyzer::allocator
