// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/backward_attribution.h"

#include <string_view>
#include <vector>

namespace gmt::analyzer {
namespace {

// Attributed stacks get ids the recorder never gives (it counts up from 1).
constexpr uint32_t kFirstAttributedStack = 0xC0000000;

// torch.autograd's machinery and torch.Tensor.backward: not the user's call.
bool autograd_file(std::string_view file) {
  return file.find("/torch/autograd/") != std::string_view::npos ||
         file.ends_with("/torch/_tensor.py");
}

bool runs_the_engine(const TraceSummary::PythonCode& code) {
  return autograd_file(code.file) &&
         (code.name == "backward" || code.name == "grad" || code.name == "_engine_run_backward");
}

}  // namespace

BackwardAttribution::Python BackwardAttribution::python_of(const TraceSummary& summary,
                                                           uint32_t stack) {
  if (const auto known = python_.find(stack); known != python_.end()) return known->second;
  Python p = Python::kNone;
  if (const auto frames = summary.python_stacks.find(stack);
      frames != summary.python_stacks.end() && !frames->second.empty()) {
    p = Python::kOutsideBackward;
    for (uint64_t packed : frames->second) {
      const auto code = summary.python_code.find(static_cast<uint32_t>(packed >> 32));
      if (code != summary.python_code.end() && runs_the_engine(code->second)) {
        p = Python::kInBackward;
        break;
      }
    }
  }
  python_.emplace(stack, p);
  return p;
}

uint32_t BackwardAttribution::stack_for(TraceSummary& summary, uint64_t thread, uint32_t stack) {
  // A bounded trace's carried blocks name no thread (0), and come in address order, not in time:
  // they neither move a thread in or out of backward() nor are told apart by thread.
  if (stack == 0 || thread == 0) return stack;
  switch (python_of(summary, stack)) {
    case Python::kInBackward:
      caller_ = Caller{thread, stack};
      return stack;
    case Python::kOutsideBackward:
      if (caller_ && caller_->thread == thread) caller_.reset();
      return stack;
    case Python::kNone:
      break;
  }
  if (!caller_ || caller_->thread == thread) return stack;
  return attributed(summary, stack, caller_->stack);
}

uint32_t BackwardAttribution::driver_stack_in_backward(TraceSummary& summary, uint64_t thread,
                                                       uint32_t stack) {
  if (stack == 0 || caller_->thread == thread || thread == 0) return stack;
  if (python_of(summary, stack) != Python::kNone) return stack;
  return attributed(summary, stack, caller_->stack);
}

uint32_t BackwardAttribution::attributed(TraceSummary& summary, uint32_t stack, uint32_t caller) {
  const auto [it, added] = attributed_.try_emplace(
      {stack, caller}, kFirstAttributedStack + static_cast<uint32_t>(attributed_.size()));
  if (!added) return it->second;
  const uint32_t id = it->second;
  if (const auto native = summary.stacks.find(stack); native != summary.stacks.end())
    summary.stacks[id] = native->second;
  if (const auto epoch = summary.stack_module_epoch.find(stack);
      epoch != summary.stack_module_epoch.end())
    summary.stack_module_epoch[id] = epoch->second;
  // The caller's frames from the user's call of backward() out, after the mark.
  std::vector<uint64_t> python{uint64_t{TraceSummary::kAttributionCode} << 32};
  const std::vector<uint64_t>& frames = summary.python_stacks.at(caller);
  std::size_t first = 0;
  while (first < frames.size()) {
    const auto code = summary.python_code.find(static_cast<uint32_t>(frames[first] >> 32));
    if (code == summary.python_code.end() || !autograd_file(code->second.file)) break;
    ++first;
  }
  if (first == frames.size()) first = 0;  // all of torch's: keep them all
  python.insert(python.end(), frames.begin() + static_cast<std::ptrdiff_t>(first), frames.end());
  summary.python_stacks[id] = std::move(python);
  summary.python_code[TraceSummary::kAttributionCode] = {"autograd thread, for backward() below",
                                                         ""};
  return id;
}

}  // namespace gmt::analyzer
