// SPDX-License-Identifier: Apache-2.0
// Pairs phase boundaries (Phase records) into runs, as every view of phases must: a pop closes
// the innermost push of its thread and domain, an end closes its range. Each open run carries
// a T of its user's (the views' per-device figures, an export's run).
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/records.h"

namespace gmt::analyzer {

template <class T>
class PhaseMatcher {
 public:
  struct Open {
    uint64_t thread = 0;
    bool pushed = false;  // push/pop (nested on its thread) rather than start/end
    uint32_t domain = 0;
    uint64_t range = 0;  // start/end: the range's id
    T value;
  };

  void on(const format::NameRecord& r) { names_[r.id] = r.text; }

  // "name", or "domain::name" for a phase of a named NVTX domain.
  std::string name(const format::PhaseRecord& r) const {
    return r.domain == 0 ? name_of(r.name) : name_of(r.domain) + "::" + name_of(r.name);
  }

  // For a push or a start: a new open run, innermost, whose value the caller fills.
  T& open(const format::PhaseRecord& r) {
    const auto action = static_cast<format::PhaseAction>(r.action);
    open_.push_back({r.tid, action == format::PhaseAction::kPush, r.domain, r.range, T{}});
    return open_.back().value;
  }

  // For a pop or an end: the run it closes, taken out; nothing if no run matches.
  std::optional<T> close(const format::PhaseRecord& r) {
    const bool pop = static_cast<format::PhaseAction>(r.action) == format::PhaseAction::kPop;
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      const bool match = pop ? it->pushed && it->thread == r.tid && it->domain == r.domain
                             : !it->pushed && it->range == r.range;
      if (!match) continue;
      T value = std::move(it->value);
      open_.erase(std::next(it).base());
      return value;
    }
    return std::nullopt;
  }

  // The runs still open, oldest first (few: the nesting depth plus overlapping ranges).
  std::vector<Open>& open_runs() { return open_; }
  const std::vector<Open>& open_runs() const { return open_; }

 private:
  std::string name_of(uint32_t id) const {
    const auto it = names_.find(id);
    return it == names_.end() ? "name#" + std::to_string(id) : it->second;
  }

  std::unordered_map<uint32_t, std::string> names_;
  std::vector<Open> open_;
};

}  // namespace gmt::analyzer
