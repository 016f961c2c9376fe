// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export --format speedscope`: speedscope's file format
// (https://www.speedscope.app/file-format-schema.json): shared frames, and two "sampled"
// profiles weighted in bytes, what was live at each device's peak and what was never freed.
// Each sample is one site, root first, under pseudo-frames naming its device (and leak class).
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "analyzer/export/export_formats.h"
#include "analyzer/export/export_stacks.h"

namespace gmt::analyzer {
namespace {

using nlohmann::ordered_json;

// speedscope's shared frame list, each distinct (name, file, line) once.
class SharedFrames {
 public:
  std::size_t id(const std::string& name, const std::optional<std::string>& file,
                 std::optional<int> line) {
    const auto key = std::make_tuple(name, file.value_or(""), line.value_or(0));
    const auto [it, added] = ids_.try_emplace(key, frames_.size());
    if (added) {
      ordered_json frame = {{"name", name}};
      if (file) frame["file"] = *file;
      if (line) frame["line"] = *line;
      frames_.push_back(std::move(frame));
    }
    return it->second;
  }
  ordered_json& frames() { return frames_; }

 private:
  std::map<std::tuple<std::string, std::string, int>, std::size_t> ids_;
  ordered_json frames_ = ordered_json::array();
};

ordered_json sampled_profile(const std::string& name, const std::vector<WeightedStack>& stacks,
                             ResolvedStacks& resolved, SharedFrames& shared) {
  ordered_json samples = ordered_json::array();
  ordered_json weights = ordered_json::array();
  uint64_t total = 0;
  for (const WeightedStack& s : stacks) {
    ordered_json sample = ordered_json::array();
    for (const std::string& root : s.roots) sample.push_back(shared.id(root, {}, {}));
    const std::vector<SiteFrame>& frames = resolved[s.stack];
    if (frames.empty()) sample.push_back(shared.id(s.no_stack_frame, {}, {}));
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
      sample.push_back(shared.id(frame_label(*it), it->file, it->line));
    samples.push_back(std::move(sample));
    weights.push_back(s.bytes);
    total += s.bytes;
  }
  return {{"type", "sampled"}, {"name", name},       {"unit", "bytes"},   {"startValue", 0},
          {"endValue", total}, {"samples", samples}, {"weights", weights}};
}

}  // namespace

void write_speedscope(TraceSummary& trace, FrameMode mode, std::ostream& out) {
  const std::vector<WeightedStack> peak = peak_stacks(trace);
  const std::vector<WeightedStack> leaks = leak_stacks(trace);
  std::vector<WeightedStack> both = peak;
  both.insert(both.end(), leaks.begin(), leaks.end());
  ResolvedStacks resolved = resolve_weighted(trace, both, mode);
  SharedFrames shared;
  ordered_json profiles = ordered_json::array();
  profiles.push_back(sampled_profile("live at the peak", peak, resolved, shared));
  profiles.push_back(sampled_profile("never freed", leaks, resolved, shared));
  const std::string base = trace.path.substr(trace.path.find_last_of('/') + 1);
  const ordered_json file = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                             {"shared", {{"frames", std::move(shared.frames())}}},
                             {"profiles", std::move(profiles)},
                             {"name", base},
                             {"activeProfileIndex", 0},
                             {"exporter", "gpumemtrace"}};
  out << file.dump() << "\n";
}

}  // namespace gmt::analyzer
