// SPDX-License-Identifier: Apache-2.0
// Symbolizes recorded stacks, by id, into the frames the reports print.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

using ResolvedStacks = std::unordered_map<uint32_t, std::vector<SiteFrame>>;

// The frames of each stack in `ids` (leaf first; Python frames in place of the interpreter's),
// symbolized from the trace's own module records. The symbolizer's warnings (files missing,
// build-id mismatches) are appended to `warnings`. Stack 0 and unknown ids get no frames.
ResolvedStacks resolve_stacks(const TraceSummary& trace, const std::vector<uint32_t>& ids,
                              std::vector<std::string>& warnings);

}  // namespace gmt::analyzer
