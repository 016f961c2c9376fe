// SPDX-License-Identifier: Apache-2.0
// How every command says what a bounded trace kept of its history: from when it is complete and
// what was carried from before (empty for a trace that kept it all).
#pragma once

#include <string>

#include "analyzer/model/trace_summary.h"
#include "nlohmann/json.hpp"

namespace gmt::analyzer {

// "history kept from 12.3 s (dropped 1,234,567 earlier events); 3,210 allocations (1.2 GiB)
// carried from before", then, when the file grew past its bound, by how much and why; or empty.
std::string history_text(const TraceSummary& t);
// The same as JSON fields: null for an unbounded trace; the limit and the events dropped (0 when
// none were) and how far its chunks reach (`written_bytes`: past `max_size` when the bound did
// not hold) for a bounded one, and when history was dropped, from when and what was carried.
nlohmann::ordered_json history_json(const TraceSummary& t);

}  // namespace gmt::analyzer
