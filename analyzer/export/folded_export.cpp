// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export --format folded`: one `frame;frame;frame bytes` line per stack, root first,
// as flamegraph.pl, inferno and speedscope read them; each frame with its file and line.
#include <map>

#include "analyzer/export/export_formats.h"
#include "analyzer/export/export_stacks.h"

namespace gmt::analyzer {
namespace {

// A frame may not contain the separator, nor end a line early.
std::string folded_name(std::string name) {
  for (char& c : name) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return name;
}

// A frame as a folded line names it: with its file and line where it has them, so that two call
// sites of one function stay two ("step (train.cpp:57)" and "step (train.cpp:61)").
std::string folded_frame(const SiteFrame& frame) {
  std::string label = frame_label(frame);
  if (!frame.file) return label;
  label += " (" + frame.file->substr(frame.file->find_last_of('/') + 1);
  if (frame.line) label += ":" + std::to_string(*frame.line);
  return label + ")";
}

}  // namespace

void write_folded(TraceSummary& trace, ProfileWhat what, FrameMode mode, std::ostream& out) {
  const std::vector<WeightedStack> stacks =
      what == ProfileWhat::kLeaks ? leak_stacks(trace) : peak_stacks(trace);
  ResolvedStacks frames = resolve_weighted(trace, stacks, mode);
  // Sites whose frames symbolize alike, to the line, are one line.
  std::map<std::string, uint64_t> lines;
  for (const WeightedStack& s : stacks) {
    std::string line;
    for (const std::string& root : s.roots) line += folded_name(root) + ';';
    const std::vector<SiteFrame>& f = frames[s.stack];
    if (f.empty()) line += folded_name(s.no_stack_frame);
    for (auto it = f.rbegin(); it != f.rend(); ++it) {
      line += folded_name(folded_frame(*it));
      if (std::next(it) != f.rend()) line += ';';
    }
    lines[line] += s.bytes;
  }
  for (const auto& [line, bytes] : lines) out << line << ' ' << bytes << '\n';
}

}  // namespace gmt::analyzer
