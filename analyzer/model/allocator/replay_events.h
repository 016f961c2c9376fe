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
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/allocator/trace_replay.h"
#include "format/records.h"
#include "format/trace_reader.h"

namespace gmt::analyzer::allocator {

class ReplayEvents {
 public:
  // Throws TraceError when the trace is not readable at all.
  static ReplayEvents read(std::span<const uint8_t> bytes, const std::string& name,
                           format::PageAccess pages = {});

  // The same as replay_trace(bytes, name, options) for a what-if `options`; std::logic_error
  // for the unchanged replay's.
  TraceReplayResult replay(const ReplayOptions& options) const;

  uint64_t block_events() const { return blocks_.size(); }

 private:
  struct Block {
    uint64_t address;
    uint64_t size;
    uint64_t stream;
    int32_t device;
    uint32_t action;
  };
  static_assert(sizeof(Block) == 32);

  std::vector<Block> blocks_;
  // Each other record with the number of block events before it.
  std::vector<std::pair<uint64_t, format::Record>> others_;
  bool history_dropped_ = false;
  std::vector<std::string> problems_;
};

}  // namespace gmt::analyzer::allocator
