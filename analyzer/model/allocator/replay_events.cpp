// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/replay_events.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <variant>

#include "analyzer/model/containers/flat_hash_map.h"
#include "analyzer/model/input/trace_error.h"
#include "format/file_header.h"

namespace gmt::analyzer::allocator {
namespace {

using format::BlockAction;

bool is_pytorch(uint32_t allocator) {
  return allocator == static_cast<uint32_t>(format::BlockAllocator::kPytorch);
}

// Whether two records kept beside the block events do the same to a replay (TraceReplay::apply)
// when met at the same place of two steps: the ends of steps and backwards, a capture's
// beginning, ranges pushed and popped. Any other (settings, a failed cudaMalloc, a name, a
// started range, whose id is new each time) makes its step unlike any other.
bool alike(const format::Record& a, const format::Record& b) {
  if (const auto* x = std::get_if<format::ScopeRecord>(&a)) {
    const auto* y = std::get_if<format::ScopeRecord>(&b);
    return y != nullptr && x->kind == y->kind && x->action == y->action;
  }
  if (const auto* x = std::get_if<format::PhaseRecord>(&a)) {
    const auto* y = std::get_if<format::PhaseRecord>(&b);
    const auto action = static_cast<format::PhaseAction>(x->action);
    return y != nullptr && action != format::PhaseAction::kStart &&
           action != format::PhaseAction::kEnd && x->action == y->action && x->tid == y->tid &&
           x->name == y->name;
  }
  return false;
}

// GPUMEMTRACE_REPLAY_EVERY_STEP=1: repeated steps replayed all the same (to check that skipping
// them changes no figure, and to time what it saves).
bool replay_every_step() {
  const char* every = std::getenv("GPUMEMTRACE_REPLAY_EVERY_STEP");
  return every != nullptr && std::string(every) == "1";
}

bool sample_has_total(const format::SampleRecord& s) {
  return ((s.present & format::SampleField::kDriverTotal) != 0 && s.driver_total != 0) ||
         ((s.present & format::SampleField::kNvmlDeviceTotal) != 0 && s.nvml_device_total != 0);
}

}  // namespace

// Each block's id in a what-if replay: not its recorded address but the lowest number free,
// taken at its request and free again once its free completed. The model serves requests by
// size, stream and order alone, so the ids change no figure; but where the recording gave a
// step's blocks other addresses than the step before's (cudaMalloc placed its segments
// elsewhere), the ids of a step that asks for the same sizes in the same order are still the
// same: steps alike are seen to be alike (find_repeats). Outside the anonymous namespace: a
// field of ReplayEventsCollector::State, whose linkage is external.
class RequestIds {
 public:
  // Above any CUDA address, and below the recomputation's and renewed gradients' own ids.
  static constexpr uint64_t kFirst = 1ull << 62;

  uint64_t requested(uint64_t address) {
    if (const auto* e = live_.find(address); e != nullptr) return e->value;  // no free seen
    uint64_t id = next_;
    if (!free_.empty()) {
      id = free_.top();
      free_.pop();
    } else {
      ++next_;
    }
    live_.insert(address, id);
    return id;
  }
  // A free's id: its request's, else (a free of a block the trace did not show made) the
  // address as it was.
  uint64_t freed(uint64_t address, bool completed) {
    auto* e = live_.find(address);
    if (e == nullptr) return address;
    const uint64_t id = e->value;
    if (completed) {
      free_.push(id);
      live_.erase(e);
    }
    return id;
  }

 private:
  FlatHashMap<uint64_t, uint64_t, MixedHash> live_;
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> free_;
  uint64_t next_ = kFirst;
};

struct ReplayEventsCollector::State {
  ReplayEvents out;
  // A device's size is read from its first sample that has one (TraceReplay::apply): later
  // samples change nothing.
  std::set<int32_t> sampled;
  uint64_t requests = 0;
  int backwards = 0;  // open, on any thread
  RequestIds ids;
};

ReplayEventsCollector::ReplayEventsCollector(uint64_t expected_blocks)
    : state_(std::make_unique<State>()) {
  state_->out.blocks_.reserve(expected_blocks);
}

ReplayEventsCollector::~ReplayEventsCollector() = default;

void ReplayEventsCollector::add(const format::Record& record) {
  State& st = *state_;
  ReplayEvents& out = st.out;
  if (const auto* b = std::get_if<format::BlockRecord>(&record)) {
    if (!is_pytorch(b->allocator)) return;
    const auto action = static_cast<BlockAction>(b->action);
    const bool request = action == BlockAction::kAlloc || action == BlockAction::kOom;
    uint64_t id = b->address;
    if (action == BlockAction::kAlloc) {
      id = st.ids.requested(b->address);
    } else if (action == BlockAction::kFreeRequested || action == BlockAction::kFreeCompleted) {
      id = st.ids.freed(b->address, action == BlockAction::kFreeCompleted);
    }
    out.blocks_.push_back(
        {id, b->size, b->stream,
         request ? static_cast<uint32_t>(st.requests++) : ReplayEvents::kNoRequest,
         static_cast<int16_t>(b->device), static_cast<uint8_t>(b->action), st.backwards > 0});
    return;
  }
  if (const auto* sc = std::get_if<format::ScopeRecord>(&record);
      sc != nullptr && sc->kind == static_cast<uint32_t>(format::ScopeKind::kBackward))
    st.backwards += sc->action == static_cast<uint32_t>(format::ScopeAction::kExit) ? -1 : 1;
  bool keep = false;
  if (const auto* s = std::get_if<format::AllocatorSettingsRecord>(&record)) {
    keep = is_pytorch(s->allocator);
  } else if (std::holds_alternative<format::AllocFailedRecord>(record) ||
             std::holds_alternative<format::DeviceRecord>(record)) {
    keep = true;
  } else if (const auto* s = std::get_if<format::SampleRecord>(&record)) {
    keep = sample_has_total(*s) && st.sampled.insert(s->device).second;
  } else if (const auto* sc = std::get_if<format::ScopeRecord>(&record)) {
    // CUDA graph captures counted; the ends of steps and backwards, where a what-if may
    // empty the cache.
    keep = (sc->kind == static_cast<uint32_t>(format::ScopeKind::kCudaGraph) &&
            sc->action == static_cast<uint32_t>(format::ScopeAction::kEnter)) ||
           ((sc->kind == static_cast<uint32_t>(format::ScopeKind::kOptimizer) ||
             sc->kind == static_cast<uint32_t>(format::ScopeKind::kBackward)) &&
            sc->action == static_cast<uint32_t>(format::ScopeAction::kExit));
  } else if (std::holds_alternative<format::NameRecord>(record) ||
             std::holds_alternative<format::PhaseRecord>(record)) {
    keep = true;  // the phases a what-if may empty the cache at
  }
  if (keep) out.others_.emplace_back(out.blocks_.size(), record);
}

ReplayEvents ReplayEventsCollector::finish(bool history_dropped,
                                           std::vector<std::string> problems) {
  ReplayEvents out = std::move(state_->out);
  out.history_dropped_ = history_dropped;
  out.problems_ = std::move(problems);
  out.find_repeats();
  return out;
}

ReplayEvents ReplayEvents::read(std::span<const uint8_t> bytes, const std::string& name,
                                format::PageAccess pages, uint64_t expected_blocks) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(name + ": " + header.error);
  format::TraceReader reader(bytes, header.header, std::move(pages));
  ReplayEventsCollector collector(expected_blocks != 0 ? expected_blocks
                                                       : reader.expected_records());
  while (const format::Record* record = reader.next_record()) collector.add(*record);
  std::vector<std::string> problems;
  for (const format::ReadProblem& p : reader.problems())
    problems.push_back("byte " + std::to_string(p.offset) + ": " + p.reason);
  return collector.finish(reader.window().dropped, std::move(problems));
}

bool ReplayEvents::is_step_end(const format::Record& r) {
  const auto* s = std::get_if<format::ScopeRecord>(&r);
  return s != nullptr && s->kind == static_cast<uint32_t>(format::ScopeKind::kOptimizer) &&
         s->action == static_cast<uint32_t>(format::ScopeAction::kExit);
}

void ReplayEvents::find_repeats() {
  steps_.clear();
  others_at_.clear();
  repeats_.clear();
  for (std::size_t o = 0; o < others_.size(); ++o) {
    if (!is_step_end(others_[o].second)) continue;
    // Several optimizers' steps at one place are one boundary.
    if (!steps_.empty() && steps_.back() == others_[o].first) continue;
    steps_.push_back(others_[o].first);
    // The window's first other record: whatever sits at its first block event, before it.
    std::size_t first = o;
    while (first > 0 && others_[first - 1].first == others_[o].first) --first;
    others_at_.push_back(first);
  }
  repeats_.assign(steps_.size(), 0);
  for (std::size_t w = 1; w + 1 < steps_.size(); ++w) {
    const uint64_t begin = steps_[w], length = steps_[w + 1] - begin;
    if (length == 0 || steps_[w] - steps_[w - 1] != length) continue;
    bool same = true;
    for (uint64_t k = 0; k < length && same; ++k) {
      const Block& a = blocks_[steps_[w - 1] + k];
      const Block& b = blocks_[begin + k];
      same = a.address == b.address && a.size == b.size && a.stream == b.stream &&
             a.device == b.device && a.action == b.action && a.in_backward == b.in_backward &&
             (a.ordinal == kNoRequest) == (b.ordinal == kNoRequest);
    }
    const std::size_t others_a = others_at_[w + 1] - others_at_[w];
    same = same && others_at_[w] - others_at_[w - 1] == others_a;
    for (std::size_t k = 0; k < others_a && same; ++k) {
      const auto& a = others_[others_at_[w - 1] + k];
      const auto& b = others_[others_at_[w] + k];
      same = b.first - a.first == length && alike(a.second, b.second);
    }
    repeats_[w] = same;
  }
}

std::size_t ReplayEvents::cycle_skip(std::size_t from, std::size_t to,
                                     const ReplayOptions& options) const {
  // The cycle's windows and those skipped ask alike under the options too (roles, batch
  // slopes): each skipped window as the one a cycle before it.
  for (std::size_t w = from; w + 1 < to; ++w) {
    if (!same_requests(to - 1, w, options)) return 0;
  }
  std::size_t alike = 0;
  while (to + alike + 1 < steps_.size() && repeats_[to + alike] &&
         same_requests(to - 1, to + alike, options))
    ++alike;
  const std::size_t cycle = to - from;
  return alike / cycle * cycle;
}

bool ReplayEvents::same_requests(std::size_t a, std::size_t b, const ReplayOptions& options) const {
  if (options.roles == nullptr && options.batch_slopes == nullptr) return true;
  const uint64_t length = steps_[a + 1] - steps_[a];
  for (uint64_t k = 0; k < length; ++k) {
    const uint32_t x = blocks_[steps_[a] + k].ordinal, y = blocks_[steps_[b] + k].ordinal;
    if (x == kNoRequest) continue;
    if (options.roles != nullptr && options.roles->of(x) != options.roles->of(y)) return false;
    if (const std::vector<float>* slopes = options.batch_slopes; slopes != nullptr) {
      const float sx = x < slopes->size() ? (*slopes)[x] : std::nanf("");
      const float sy = y < slopes->size() ? (*slopes)[y] : std::nanf("");
      if (sx != sy && !(std::isnan(sx) && std::isnan(sy))) return false;
    }
  }
  return true;
}

TraceReplayResult ReplayEvents::replay(const ReplayOptions& options) const {
  if (!options.what_if && !options.alloc_conf)
    throw std::logic_error("ReplayEvents::replay: the unchanged replay needs the whole records");
  TraceReplay replay(options);
  auto other = others_.begin();
  format::BlockRecord r;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  // Within a run of windows alike (see steps_), whether the allocator's state comes back: it may
  // only every few steps (best fit goes round a few layouts), and from the one it came back to,
  // the windows alike go round the same cycle again, each cycle ending where it began. Found as
  // Brent's cycle finding does: each window's state against one kept, kept anew at windows 1,
  // 2, 4, 8... into the run, so that a cycle of any length is met once the kept one is in it.
  // A window's state is built in whole only where its summary is the kept one's: the cost is a
  // few words a window where the state never comes back.
  struct Kept {
    std::size_t window = 0;
    std::vector<uint64_t> summary, state, counters;
    uint64_t failed = 0;
  };
  std::optional<Kept> kept;
  std::size_t power = 1, since_kept = 0;
  std::vector<uint64_t> summary, state;
  std::size_t window = 0;
  uint64_t skipped = 0;
  const bool skip_repeats = !replay_every_step();
  const auto keep = [&](std::size_t at) {
    Kept k{at, summary, {}, {}, replay.failed_requests()};
    replay.append_state(k.state);
    replay.visit_counters([&](uint64_t& c) { k.counters.push_back(c); });
    kept = std::move(k);
    since_kept = 0;
  };
  for (uint64_t i = 0; i <= blocks_.size(); ++i) {
    if (skip_repeats && window < steps_.size() && i == steps_[window]) {
      const bool in_run = repeats_[window];
      if (!in_run) {
        kept.reset();
        power = 1;
      }
      if (in_run || (window + 1 < steps_.size() && repeats_[window + 1])) {
        summary.clear();
        replay.append_summary(summary);
        std::size_t skip = 0;
        // The failed requests are the one count a cycle may not grow: the first failure's
        // figures are kept.
        if (kept && in_run && summary == kept->summary &&
            replay.failed_requests() == kept->failed) {
          state.clear();
          replay.append_state(state);
          if (state == kept->state) skip = cycle_skip(kept->window, window, options);
        }
        if (skip > 0) {
          const std::size_t cycle = window - kept->window;
          std::size_t c = 0;
          replay.visit_counters([&](uint64_t& value) {
            value += (value - kept->counters[c]) * (skip / cycle);
            ++c;
          });
          window += skip;
          skipped += skip;
          i = steps_[window];
          other = others_.begin() + static_cast<std::ptrdiff_t>(others_at_[window]);
          keep(window);
          power = 1;
        } else if (!kept || since_kept == power) {
          keep(window);
          power *= 2;
        }
        ++since_kept;
      }
      ++window;
    }
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
  result.steps_skipped = skipped;
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

  Insertions before, after;
  for (const auto& [key, group] : groups) {
    // Each recomputation frees all its own blocks before the next begins: their ids are taken
    // again, so that steps alike stay alike (replay() skips steps that repeat).
    uint64_t next_recomputed = kRecomputedAddress;
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
        after.emplace_back(exit, b);
      }
    }
    // The forward again, before the backward needs its activations.
    const auto again = [&](const Block& b) { before.emplace_back(first_use, b); };
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
        again(b);
      } else if (action == BlockAction::kFreeRequested) {
        // Freed as it was, and at once: the recomputation's streams are not the recording's.
        const auto it = renamed.find(b.address);
        if (it == renamed.end()) continue;
        b.address = it->second;
        b.ordinal = kNoRequest;
        again(b);
        b.action = static_cast<uint8_t>(BlockAction::kFreeCompleted);
        again(b);
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
        again(b);
      }
    }
  }

  return spliced(std::move(before), std::move(after), nullptr);
}

ReplayEvents ReplayEvents::spliced(Insertions before, Insertions after,
                                   const std::function<bool(std::size_t, Block&)>& edit) const {
  const auto by_index = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(before.begin(), before.end(), by_index);
  std::stable_sort(after.begin(), after.end(), by_index);
  ReplayEvents out;
  out.history_dropped_ = history_dropped_;
  out.problems_ = problems_;
  out.blocks_.reserve(blocks_.size() + before.size() + after.size());
  auto other = others_.begin();
  std::size_t next_before = 0;
  std::size_t next_after = 0;
  for (std::size_t i = 0; i <= blocks_.size(); ++i) {
    for (; other != others_.end() && other->first == i; ++other)
      out.others_.emplace_back(out.blocks_.size(), other->second);
    for (; next_before < before.size() && before[next_before].first == i; ++next_before)
      out.blocks_.push_back(before[next_before].second);
    if (i == blocks_.size()) break;
    Block b = blocks_[i];
    const bool kept = !edit || edit(i, b);
    if (kept) out.blocks_.push_back(b);
    for (; next_after < after.size() && after[next_after].first == i; ++next_after) {
      if (kept) out.blocks_.push_back(after[next_after].second);
    }
  }
  out.find_repeats();
  return out;
}

}  // namespace gmt::analyzer::allocator
