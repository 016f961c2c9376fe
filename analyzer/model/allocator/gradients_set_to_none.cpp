// SPDX-License-Identifier: Apache-2.0
// ReplayEvents::gradients_set_to_none: a run that zeroed its gradients in place, replayed as if
// it set them to None (replay_events.h).
#include <map>
#include <unordered_map>
#include <variant>

#include "analyzer/model/allocator/replay_events.h"
#include "analyzer/model/allocator/whatif_prediction.h"

namespace gmt::analyzer::allocator {
namespace {

using format::BlockAction;

constexpr std::size_t kNone = SIZE_MAX;
// The ids of the gradients made anew: no CUDA address is this high.
constexpr uint64_t kRenewedAddress = 5ull << 60;

}  // namespace

ReplayEvents ReplayEvents::gradients_set_to_none(const BlockRoles& roles,
                                                 SetToNoneChange& changed) const {
  changed = {};
  // Where each step ends: before the block event of that index.
  std::vector<std::size_t> step_ends;
  for (const auto& [index, record] : others_) {
    if (is_step_end(record) && (step_ends.empty() || step_ends.back() != index))
      step_ends.push_back(index);
  }
  if (step_ends.empty())
    throw WhatIfError(
        "--set-to-none: the trace has no optimizer step (PyTorch's roles hooks "
        "report optimizer.step())");
  // Each allocation's free requested and completed, and whether a gradient is made after the
  // first step's end (then the run already made them anew each backward).
  std::vector<std::size_t> freed(blocks_.size(), kNone);
  std::vector<std::size_t> completed(blocks_.size(), kNone);
  bool gradients = false;
  {
    std::unordered_map<uint64_t, std::size_t> live;
    std::unordered_map<uint64_t, std::size_t> requested;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      const Block& b = blocks_[i];
      const auto action = static_cast<BlockAction>(b.action);
      if (action == BlockAction::kAlloc) {
        live[b.address] = i;
        if (roles.of(b.ordinal) == Role::kGradient) {
          gradients = true;
          if (i >= step_ends.front())
            throw WhatIfError(
                "--set-to-none: this run already makes its gradients anew in each backward "
                "(zero_grad(set_to_none=True), PyTorch's default since 2.0): nothing to change");
        }
      } else if (action == BlockAction::kFreeRequested) {
        if (const auto it = live.find(b.address); it != live.end()) {
          freed[it->second] = i;
          requested[b.address] = it->second;
          live.erase(it);
        }
      } else if (action == BlockAction::kFreeCompleted) {
        if (const auto it = requested.find(b.address); it != requested.end()) {
          completed[it->second] = i;
          requested.erase(it);
        }
      }
    }
  }
  if (!gradients) throw WhatIfError("--set-to-none: no block of the trace is a gradient");

  Insertions before;
  std::vector<bool> dropped(blocks_.size(), false);   // free events no longer replayed
  std::unordered_map<std::size_t, uint64_t> renamed;  // a temporary kept: its new id
  std::vector<std::size_t> live_gradients;            // allocations, as gradients now
  std::size_t step = 0;
  std::multimap<uint64_t, std::size_t> wanted;  // size -> the gradient it replaces (freed)
  uint64_t next_id = kRenewedAddress;
  const auto free_at = [&](std::size_t at, const Block& made, uint64_t id) {
    for (const BlockAction action : {BlockAction::kFreeRequested, BlockAction::kFreeCompleted}) {
      Block b = made;
      b.address = id;
      b.ordinal = kNoRequest;
      b.action = static_cast<uint8_t>(action);
      before.emplace_back(at, b);
    }
  };
  for (std::size_t i = 0; i <= blocks_.size(); ++i) {
    if (step < step_ends.size() && step_ends[step] == i) {
      // zero_grad(set_to_none=True): the gradients live now are freed; the next backward makes
      // each anew.
      ++changed.steps;
      wanted.clear();
      for (const std::size_t g : live_gradients) {
        const auto r = renamed.find(g);
        // Freed before the step ended (not one the run kept): nothing to free.
        if (r == renamed.end() && freed[g] != kNone && freed[g] < i) continue;
        free_at(i, blocks_[g], r != renamed.end() ? r->second : blocks_[g].address);
        if (r == renamed.end()) {
          if (freed[g] != kNone) dropped[freed[g]] = true;
          if (completed[g] != kNone) dropped[completed[g]] = true;
        }
        wanted.emplace(blocks_[g].size, g);
        ++changed.gradients_freed;
      }
      live_gradients.clear();
      // Every gradient made anew is freed here: the next step's may take their ids again, so
      // that steps alike stay alike (ReplayEvents::replay skips steps that repeat).
      next_id = kRenewedAddress;
      ++step;
    }
    if (i == blocks_.size()) break;
    const Block& b = blocks_[i];
    if (static_cast<BlockAction>(b.action) != BlockAction::kAlloc) continue;
    if (roles.of(b.ordinal) == Role::kGradient) {
      live_gradients.push_back(i);
    } else if (b.in_backward && roles.of(b.ordinal) == Role::kTemporary) {
      const auto w = wanted.find(b.size);
      if (w == wanted.end()) continue;
      // The new gradient: kept past its free, under an id of its own (the recording's address
      // is taken again once it was freed).
      wanted.erase(w);
      renamed[i] = next_id++;
      if (freed[i] != kNone) dropped[freed[i]] = true;
      if (completed[i] != kNone) dropped[completed[i]] = true;
      live_gradients.push_back(i);
      ++changed.kept;
    }
  }

  return spliced(std::move(before), {}, [&](std::size_t i, Block& b) {
    if (dropped[i]) return false;
    if (const auto r = renamed.find(i); r != renamed.end()) b.address = r->second;
    return true;
  });
}

}  // namespace gmt::analyzer::allocator
