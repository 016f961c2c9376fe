// SPDX-License-Identifier: Apache-2.0
// What `report`, `peak` and the page say of a pool the trace cannot see into (hidden_pool.h):
// what it holds, the setting that shows each array at its line, and what that setting costs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/model/hidden_pool.h"

namespace gmt::analyzer {

// One sentence per idea, on one line: "XLA's pool holds 12.00 GiB of device 0 (75% of it) in 1
// allocation, taken at once: ...".
std::string hidden_pool_note(const HiddenPool& pool, int device);

// The pool's figures, the setting and the note, for a device's JSON ("hidden_pool").
nlohmann::ordered_json hidden_pool_json(const HiddenPool& pool, int device);

// The recording's own notes of `trace`, then the note of each device that has such a pool: what
// the page lists under the trace.
std::vector<std::string> notes_and_hidden_pools(const TraceSummary& trace);

}  // namespace gmt::analyzer
