// Replays SampleRecords, DeviceRecords, NameRecords and PhaseRecords beside the allocations: it
// is told of every change of a device's tracked bytes, so that each sample is paired with the
// tracked bytes of its own moment, and each phase with the bytes live while it ran.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/phase_matcher.h"
#include "analyzer/views_model.h"
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
  void usage_changed(int device, uint64_t live, uint64_t time_ns, bool new_peak);
  // A record took `device` to a new peak: the next samples describe it (until a higher one).
  void at_peak(int device);

  const std::map<int, DeviceIdentity>& identities() const { return identities_; }
  std::optional<ViewValues> views_at_peak(int device) const;
  std::optional<ViewValues> views_at_exit(int device) const;
  // The device's last sampler views, with the framework's last figures.
  std::optional<ViewValues> latest(int device) const { return views_at_exit(device); }
  // The innermost phase open when the device first reached its peak ("" when none).
  std::string peak_phase(int device) const;
  // Every phase, closing at `end_ns` those still open.
  std::vector<PhaseStats> phases(uint64_t end_ns) const;
  const std::vector<PhaseMark>& marks() const { return marks_; }

 private:
  struct DeviceState {
    uint64_t live = 0;
    uint64_t last_change_ns = 0;
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
    std::map<int, uint64_t> max_live;
  };

  void close(const OpenPhase& phase, uint64_t time_ns,
             std::map<std::pair<std::string, int>, PhaseStats>& into) const;
  ViewValues values_of(const format::SampleRecord& r, const DeviceState& d) const;
  void note_growth(int device, uint64_t live);
  // Every allocation and free asks: the last device asked for is kept (std::map nodes stay put).
  DeviceState& device(int ordinal) {
    if (last_device_ == nullptr || last_ordinal_ != ordinal) {
      last_device_ = &devices_[ordinal];
      last_ordinal_ = ordinal;
    }
    return *last_device_;
  }

  std::map<int, DeviceIdentity> identities_;
  std::map<int, DeviceState> devices_;
  DeviceState* last_device_ = nullptr;
  int last_ordinal_ = 0;
  PhaseMatcher<OpenPhase> phases_;
  std::map<std::pair<std::string, int>, PhaseStats> closed_;
  std::vector<PhaseMark> marks_;
};

}  // namespace gmt::analyzer
