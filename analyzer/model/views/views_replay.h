// SPDX-License-Identifier: Apache-2.0
// Replays SampleRecords, DeviceRecords, NameRecords and PhaseRecords beside the allocations: it
// is told of every change of a device's tracked bytes, so that each sample is paired with the
// tracked bytes of its own moment, and each phase with the bytes live while it ran.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/model/phase_matcher.h"
#include "analyzer/model/views/views_model.h"
#include "format/records.h"

namespace gmt::analyzer {

class ViewsReplay {
 public:
  static constexpr std::size_t kMarksKept = 1000;

  // Neither copied nor moved: it keeps a pointer into its own map.
  ViewsReplay() = default;
  ViewsReplay(const ViewsReplay&) = delete;
  ViewsReplay& operator=(const ViewsReplay&) = delete;

  void on(const format::DeviceRecord& r);
  void on(const format::SampleRecord& r);
  void on(const format::NameRecord& r);
  void on(const format::PhaseRecord& r);

  // A device's tracked bytes changed to `live` at `time_ns`; `new_peak` when that is its highest.
  // Inline, without a branch on whether they grew: every allocation and free calls it.
  void usage_changed(int ordinal, uint64_t live, uint64_t time_ns, bool new_peak) {
    DeviceState& d = device(ordinal);
    d.live = live;
    d.last_change_ns = time_ns;
    d.segment_max = std::max(d.segment_max, live);
    if (new_peak) [[unlikely]]
      name_peak_phase(d);
  }
  // A record took `device` to a new peak: the next samples describe it (until a higher one).
  void at_peak(int device);
  // A caching allocator's block events (format 4.2) put the device's framework figures (live
  // blocks, segments the allocator holds) at these values: every later sample carries them.
  void framework_blocks(int ordinal, uint64_t allocated, uint64_t reserved, uint64_t time_ns) {
    DeviceState& d = device(ordinal);
    d.blocks = BlockFigures{allocated, reserved, time_ns};
  }

  // The allocator's figures at the device's peak: its events that follow the peak's segment for
  // the same request (the segment, the block made in it) are the peak's moment, which Replay
  // closes where it takes the peak's block rows (Replay::blocks_in_plateau()).
  void framework_at_peak(int ordinal, uint64_t allocated, uint64_t reserved, uint64_t time_ns) {
    device(ordinal).blocks_at_peak = BlockFigures{allocated, reserved, time_ns};
  }

  const std::map<int, DeviceIdentity>& identities() const { return identities_; }
  std::optional<ViewValues> views_at_peak(int device) const;
  std::optional<ViewValues> views_at_exit(int device) const;
  // The device's last sampler views, with the framework's last figures.
  std::optional<ViewValues> latest(int device) const { return views_at_exit(device); }
  // Whether a run of the phase `name` ("domain::name" for a named NVTX domain) is open now.
  bool phase_open(const std::string& name) const {
    return std::any_of(phases_.open_runs().begin(), phases_.open_runs().end(),
                       [&](const auto& run) { return run.value.name == name; });
  }
  // The phases open now, oldest first.
  std::vector<OpenAtEnd> open_phases() const {
    std::vector<OpenAtEnd> open;
    for (const auto& run : phases_.open_runs())
      open.push_back({run.value.name, run.thread, run.value.start_ns});
    return open;
  }
  // The innermost phase open when the device first reached its peak ("" when none).
  std::string peak_phase(int device) const;
  // Every phase, closing at `end_ns` those still open.
  std::vector<PhaseStats> phases(uint64_t end_ns) const;
  const std::vector<PhaseMark>& marks() const { return marks_; }

 private:
  struct BlockFigures {
    uint64_t allocated = 0;
    uint64_t reserved = 0;
    uint64_t time_ns = 0;
  };
  struct DeviceState {
    uint64_t live = 0;
    std::optional<BlockFigures> blocks;          // from block events, when there are any
    std::optional<BlockFigures> blocks_at_peak;  // framework_at_peak()'s
    uint64_t last_change_ns = 0;
    // The most since the last phase opened. Every phase open now was open all that time: a
    // phase's maximum is the most of these over the stretches between the phases opening in
    // it, folded into it when the next phase opens (fold_segments()) and when it closes. Kept
    // per device rather than per open phase, it costs an allocation one comparison.
    uint64_t segment_max = 0;
    bool waiting_for_peak = false;          // at the peak record, and no sample of it yet
    uint64_t peak_live = 0;                 // the tracked bytes of the latest peak
    std::optional<ViewValues> before_peak;  // the last sample before the peak record
    std::optional<ViewValues> at_peak;
    std::optional<ViewValues> last;
    std::optional<ViewValues> framework_last;  // the last framework report
    std::optional<ViewValues> framework_at_peak;
    std::optional<ViewValues> framework_before_peak;
    bool framework_waiting = false;
    std::string peak_phase;
  };
  // What an open phase carries: its name and each device's figures since it opened.
  struct OpenPhase {
    std::string name;
    uint64_t start_ns = 0;
    std::map<int, uint64_t> start_live;  // per device, when it opened
    // Per device, the most since it opened: looked through on every allocation, and a process
    // has a few devices, so a short list.
    std::vector<std::pair<int, uint64_t>> max_live;
    uint64_t* max_of(int ordinal) {
      for (auto& [o, max] : max_live) {
        if (o == ordinal) return &max;
      }
      return nullptr;
    }
    uint64_t max_of(int ordinal, uint64_t otherwise) const {
      for (const auto& [o, max] : max_live) {
        if (o == ordinal) return max;
      }
      return otherwise;
    }
  };

  void close(const OpenPhase& phase, uint64_t time_ns,
             std::map<std::pair<std::string, int>, PhaseStats>& into) const;
  ViewValues values_of(const format::SampleRecord& r, const DeviceState& d) const;
  // Folds each device's segment_max into every open phase, and starts new segments.
  void fold_segments();
  // Notes the phases open at a device's new peak.
  void name_peak_phase(DeviceState& d);
  // Every allocation and free asks: the states of the first ordinals are kept in slots
  // (std::map nodes stay put).
  static constexpr int kDeviceSlots = 64;
  DeviceState& device(int ordinal) {
    if (static_cast<unsigned>(ordinal) < kDeviceSlots) {
      if (DeviceState* d = device_slots_[static_cast<std::size_t>(ordinal)]) [[likely]]
        return *d;
    }
    return device_slowly(ordinal);
  }
  DeviceState& device_slowly(int ordinal);

  std::map<int, DeviceIdentity> identities_;
  std::map<int, DeviceState> devices_;
  std::array<DeviceState*, kDeviceSlots> device_slots_{};
  PhaseMatcher<OpenPhase> phases_;
  std::map<std::pair<std::string, int>, PhaseStats> closed_;
  std::vector<PhaseMark> marks_;
};

}  // namespace gmt::analyzer
