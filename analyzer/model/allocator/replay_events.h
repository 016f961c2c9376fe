// SPDX-License-Identifier: Apache-2.0
// The records a what-if replay reads (TraceReplay::apply), decoded once and kept compact: a
// search of many replays (the remedies, the largest batch) then reads the trace once and each
// replay costs the allocator's model alone, not the trace's decoding again. 32 bytes a PyTorch
// block event; the few other records it needs (settings, failed cudaMallocs, the devices' sizes,
// CUDA graph captures, names, phases, the ends of steps and backwards) in trace order beside
// them.
//
// Only for what-if replays (ReplayOptions::what_if or alloc_conf set): the unchanged replay
// follows each block's extents and the recorded addresses, from the whole records.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/allocator/block_roles.h"
#include "analyzer/model/allocator/trace_replay.h"
#include "analyzer/model/containers/huge_page_allocator.h"
#include "format/records.h"
#include "format/trace_reader.h"

namespace gmt::analyzer::allocator {

class ReplayEvents;

// Gathers a trace's events for ReplayEvents from its records given one by one, in trace order:
// ReplayEvents::read()'s own pass, or the pass of a replay of the same trace that reads them
// anyway (replay_trace's `also`): a search then reads the trace once, not twice.
class ReplayEventsCollector {
 public:
  // `expected_blocks`: room kept for that many block events at once (one allocation, not grown
  // into: on 10 M events growing cost a seventh of a search, in copies and page faults).
  explicit ReplayEventsCollector(uint64_t expected_blocks);
  ~ReplayEventsCollector();
  ReplayEventsCollector(const ReplayEventsCollector&) = delete;
  ReplayEventsCollector& operator=(const ReplayEventsCollector&) = delete;

  void add(const format::Record& record);
  // The events, with what the reader dropped and the problems it met (its own or a replay's).
  ReplayEvents finish(bool history_dropped, std::vector<std::string> problems);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// What checkpointing the modules changed (ReplayEvents::checkpointed), per module asked for.
struct CheckpointedModule {
  std::string name;
  uint64_t forwards = 0;   // its forwards whose activations backward used (each recomputed once)
  uint64_t blocks = 0;     // activations freed at the ends of those forwards, all of them
  uint64_t max_bytes = 0;  // the most of their bytes one forward freed
};

// What zero_grad(set_to_none=True) changed (ReplayEvents::gradients_set_to_none).
struct SetToNoneChange {
  uint64_t steps = 0;            // optimizer steps whose ends freed the gradients
  uint64_t gradients_freed = 0;  // gradient blocks freed there, over all steps
  uint64_t kept = 0;             // backward's temporaries kept as the new gradients
};

class ReplayEvents {
 public:
  // Throws TraceError when the trace is not readable at all.
  // `expected_blocks`: how many block events the trace holds, where a replay counted them
  // already (TraceReplayResult::block_events); else room for as many as the trace has records.
  static ReplayEvents read(std::span<const uint8_t> bytes, const std::string& name,
                           format::PageAccess pages = {}, uint64_t expected_blocks = 0);

  // The same as replay_trace(bytes, name, options) for a what-if `options`; std::logic_error
  // for the unchanged replay's.
  TraceReplayResult replay(const ReplayOptions& options) const;

  uint64_t block_events() const { return blocks_.size(); }

  // The events as they would be with activation checkpointing (torch.utils.checkpoint) of each
  // module named (and what runs inside it: "layer1" is also "layer1.0.conv1"), in every root
  // forward whose activations a backward used. The activations made in the module's forward and
  // released by a backward are released at the forward's end instead, except its output (taken
  // to be the one of them the backward releases first: the next module keeps it, and its
  // backward runs before this module's); right before the backward
  // releases the first of them, the module's forward runs again: every block it made, in order,
  // temporaries freed as they were, the output again and dropped, the activations kept for the
  // backward, which then releases them as recorded. `roles` must have the modules
  // (read_block_roles(..., true)). A module no block of the trace was made in is not
  // checkpointed (its entry says 0 forwards).
  ReplayEvents checkpointed(const BlockRoles& roles, const std::vector<std::string>& modules,
                            std::vector<CheckpointedModule>& changed) const;
  // The events as they would be with the gradients set to None at each optimizer step's end
  // (optimizer.zero_grad(set_to_none=True), PyTorch's default since 2.0) in a run that zeroed
  // them in place (set_to_none=False: made in the first backward, kept for good, each later
  // backward adding its new gradient, a temporary of the same size, into them). At each step's
  // end the gradients live then are freed; in the next backward, for each of them, the first
  // temporary of its size that backward made is kept instead of freed: the gradient made anew
  // (its role stays temporary in the figures by role), freed in turn at the next step's end.
  // Throws WhatIfError where there is nothing to change: no optimizer step, no gradient, or
  // gradients already made anew in a later backward (the run set them to None).
  ReplayEvents gradients_set_to_none(const BlockRoles& roles, SetToNoneChange& changed) const;
  // The bytes the requests of `role` asked for, by module (BlockRoles' module ids; `roles` with
  // the modules), over the whole trace.
  std::vector<uint64_t> requested_by_module(const BlockRoles& roles, Role role) const;
  // The bytes each request asked for, by its ordinal (BlockRoles'), in the recording.
  std::vector<uint64_t> request_sizes() const;

 private:
  friend class ReplayEventsCollector;
  struct Block {
    uint64_t address;
    uint64_t size;
    uint64_t stream;
    uint32_t ordinal;  // a request's (kAlloc, kOom): BlockRoles'; else kNoRequest
    int16_t device;
    uint8_t action;
    bool in_backward;  // a backward was running (on any thread)
  };
  static constexpr uint32_t kNoRequest = UINT32_MAX;
  static_assert(sizeof(Block) == 32);

  // Events to insert, each with the index of the block event it goes before (`size()`: at the
  // end) or after; those of one index in the order added. A list of the few inserted, not a
  // list per event: on 2 M events, one per event cost a tenth of a second in page faults.
  using Insertions = std::vector<std::pair<std::size_t, Block>>;
  // These events changed: `before` inserted before their block events, `after` after theirs,
  // and each event itself passed through `edit` (none: kept as it is), which may change it or
  // drop it (false; what was to go after it is dropped too).
  ReplayEvents spliced(Insertions before, Insertions after,
                       const std::function<bool(std::size_t, Block&)>& edit) const;

  // An optimizer step's end (its scope's exit): where steps are told apart.
  static bool is_step_end(const format::Record& r);
  // Where the events repeat: steps_ and repeats_ found again over blocks_ and others_.
  void find_repeats();
  // Whether window `b` asks what window `a` asked under `options`: each request's role and
  // batch slope (the windows' events are alike: repeats_).
  bool same_requests(std::size_t a, std::size_t b, const ReplayOptions& options) const;
  // The state at window `to`'s beginning is window `from`'s again: how many windows from `to`
  // on go round that cycle again (whole cycles; 0 where they do not ask alike).
  std::size_t cycle_skip(std::size_t from, std::size_t to, const ReplayOptions& options) const;

  // Hundreds of MB on 10 M events, written once in order: on huge pages, the first writes cost a
  // page fault each 2 MiB, not each 4 KiB (a tenth of `whatif --batch-scale 2` there in faults).
  std::vector<Block, HugePageAllocator<Block>> blocks_;
  // Each other record with the number of block events before it.
  std::vector<std::pair<uint64_t, format::Record>> others_;
  // A training loop repeats its step: from the second or third on, every step asks for the
  // same sizes in the same order, at the same addresses, and the allocator's state before it
  // is the same; replaying one such step again changes nothing but counts. The windows are
  // the block events between optimizer steps' ends: steps_[w] is where window w begins (its
  // first block event; it ends where window w + 1 begins), others_at_[w] its first other
  // record, and repeats_[w] says its events are window w - 1's again (block events alike but
  // for their request ordinals, other records alike at the same places). The last entry of
  // steps_ closes the last window.
  std::vector<uint64_t> steps_;
  std::vector<std::size_t> others_at_;
  std::vector<uint8_t> repeats_;
  bool history_dropped_ = false;
  std::vector<std::string> problems_;
};

}  // namespace gmt::analyzer::allocator
