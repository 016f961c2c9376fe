// SPDX-License-Identifier: Apache-2.0
// What `gpumemtrace top` shows of the traces it watches, as one JSON object per refresh (the
// contract is in docs/top.md): `--json` prints it, and the text view (top_text.h) is drawn from it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/model/live/live_watch.h"
#include "analyzer/report/frames/stack_frames.h"

namespace gmt::analyzer {

enum class TopSort { kNow, kPeak, kGrowth };
const char* top_sort_name(TopSort sort);

// What the person chose to see: the order, and one device or all.
struct TopChoice {
  TopSort sort = TopSort::kNow;
  std::optional<int> device;
};

// Where and when the frame is made: this host's name (a process of another host is never
// called cut), the clocks now, and whether a process of this host has ended (by its pid and its
// start, process_liveness.h: a pid reused since is another process).
struct TopMoment {
  std::string host;
  uint64_t monotonic_ns = 0;
  uint64_t unix_ns = 0;
  std::function<bool(const ProcessIdentity& process)> process_gone;
};

class TopFrames {
 public:
  // Symbolizes the stacks of the sites that hold memory now, each once per trace.
  void resolve_new_stacks(const LiveWatch& watch);
  nlohmann::ordered_json frame(const LiveWatch& watch, const TopChoice& choice,
                               const TopMoment& moment);

 private:
  struct Symbolized {
    ResolvedStacks stacks;
    std::vector<std::string> warnings;
  };
  std::map<std::string, Symbolized> symbolized_;  // by the trace's path
};

// The devices of every trace watched, ascending.
std::vector<int> top_devices(const LiveWatch& watch);

}  // namespace gmt::analyzer
