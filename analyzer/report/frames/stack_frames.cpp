// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/frames/stack_frames.h"

#include <algorithm>
#include <utility>

#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/symbolize/symbolizer.h"

namespace gmt::analyzer {

namespace {

// The interpreter's own frames: libpython, or a python executable with the interpreter linked in.
bool interpreter_module(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  return name.rfind("libpython", 0) == 0 || name.rfind("python", 0) == 0;
}

void append_python_frames(const TraceSummary& trace, const std::vector<uint64_t>& python,
                          std::vector<SiteFrame>& frames) {
  for (uint64_t packed : python) {
    SiteFrame frame;
    const auto id = static_cast<uint32_t>(packed >> 32);
    // The mark before frames taken from another thread (BackwardAttribution).
    frame.kind = id == TraceSummary::kAttributionCode ? "attribution" : "python";
    auto code = trace.python_code.find(id);
    if (code != trace.python_code.end() && roles_hook_file(code->second.file)) continue;
    frame.function = code != trace.python_code.end() ? code->second.name : "<unknown>";
    if (code != trace.python_code.end() && !code->second.file.empty())
      frame.file = code->second.file;
    if (const auto line = static_cast<uint32_t>(packed); line > 0)
      frame.line = static_cast<int>(line);
    frames.push_back(std::move(frame));
  }
}

// Our own library: its runtime wrappers sit between the program and libcudart in every stack
// that went through them, and tell the user nothing.
bool profiler_module(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return name.rfind("libgpumemtrace", 0) == 0;
}

// The symbolized frames of one stack, Python frames in place of the interpreter's.
std::vector<SiteFrame> resolve_stack(const TraceSummary& trace, uint32_t id,
                                     Symbolizer& symbolizer) {
  std::vector<SiteFrame> frames;
  const auto python = trace.python_stacks.find(id);
  bool python_placed = false;
  if (auto stack = trace.stacks.find(id); stack != trace.stacks.end()) {
    for (uint64_t address : stack->second) {
      // Every recorded frame is a return address: the call is the instruction before it.
      const std::vector<SymbolizedFrame>& chain = symbolizer.symbolize(address, true);
      // Like a mixed-mode profiler: the Python frames stand where the interpreter's begin.
      if (python != trace.python_stacks.end() && interpreter_module(chain.front().module)) {
        append_python_frames(trace, python->second, frames);
        python_placed = true;
        break;
      }
      if (profiler_module(chain.front().module)) continue;
      for (const SymbolizedFrame& f : chain) {
        SiteFrame frame;
        frame.function = f.function;
        frame.file = f.file;
        frame.line = f.line;
        if (!f.module.empty()) frame.module = f.module;
        frames.push_back(std::move(frame));
      }
    }
  }
  if (python != trace.python_stacks.end() && !python_placed) {
    append_python_frames(trace, python->second, frames);
  }
  return frames;
}

}  // namespace

ResolvedStacks resolve_stacks(const TraceSummary& trace, const std::vector<uint32_t>& ids,
                              std::vector<std::string>& warnings) {
  // The stacks to resolve, in the order they were recorded, so that the symbolizer holds the
  // modules of that moment (a library unloaded and replaced at the same addresses later).
  std::vector<std::pair<std::size_t, uint32_t>> wanted;
  for (uint32_t id : ids) {
    const auto epoch = trace.stack_module_epoch.find(id);
    wanted.emplace_back(epoch != trace.stack_module_epoch.end() ? epoch->second : 0, id);
  }
  std::sort(wanted.begin(), wanted.end());
  Symbolizer symbolizer;
  std::size_t modules_added = 0;
  ResolvedStacks resolved;
  for (const auto& [epoch, id] : wanted) {
    for (; modules_added < epoch && modules_added < trace.modules.size(); ++modules_added) {
      const format::ModuleRecord& m = trace.modules[modules_added];
      symbolizer.add_module(ModuleInfo{m.path, m.load_base, m.start, m.end, m.build_id});
    }
    if (!resolved.count(id)) resolved[id] = resolve_stack(trace, id, symbolizer);
  }
  // Each said once: every pass over a trace's stacks (the peak's, then a command's own) finds
  // the same modules' problems again.
  for (const std::string& found : symbolizer.warnings()) {
    if (std::find(warnings.begin(), warnings.end(), found) == warnings.end()) {
      warnings.push_back(found);
    }
  }
  return resolved;
}

}  // namespace gmt::analyzer
