// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export --format folded`: one `frame;frame;frame bytes` line per stack, root first,
// as flamegraph.pl, inferno and speedscope read them.
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

}  // namespace

void write_folded(TraceSummary& trace, ProfileWhat what, FrameMode mode, std::ostream& out) {
  const std::vector<WeightedStack> stacks =
      what == ProfileWhat::kLeaks ? leak_stacks(trace) : peak_stacks(trace);
  ResolvedStacks frames = resolve_weighted(trace, stacks, mode);
  // Sites whose frames symbolize alike are one line, as a flame graph would merge them anyway.
  std::map<std::string, uint64_t> lines;
  for (const WeightedStack& s : stacks) {
    std::string line;
    for (const std::string& root : s.roots) line += folded_name(root) + ';';
    const std::vector<SiteFrame>& f = frames[s.stack];
    if (f.empty()) line += kNoStackFrame;
    for (auto it = f.rbegin(); it != f.rend(); ++it) {
      line += folded_name(frame_label(*it));
      if (std::next(it) != f.rend()) line += ';';
    }
    lines[line] += s.bytes;
  }
  for (const auto& [line, bytes] : lines) out << line << ' ' << bytes << '\n';
}

}  // namespace gmt::analyzer
