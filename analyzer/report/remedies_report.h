// SPDX-License-Identifier: Apache-2.0
// The remedies (allocator/remedies.h) where the user looks, at the end of `oom` and `peak`: for
// scripts, `remedies: [{"change", "predicted_max_reserved_bytes", "saves_bytes", "fits"...}]`
// and `remedies_note` (why there are none); for people, one line each, the cheapest first.
#pragma once

#include <cstdint>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "analyzer/model/allocator/remedies.h"

namespace gmt::analyzer {

// The remedies of the trace at `path`, searched on a thread of their own while the command reads
// the trace for its report; none when the trace is not readable (the command says so itself).
std::future<std::optional<allocator::Remedies>> start_remedies(
    const std::string& path, std::optional<uint64_t> device_memory);

// Adds "remedies" and "remedies_note" to `answer`.
void add_remedies_json(const allocator::Remedies& remedies, nlohmann::ordered_json& answer);
void write_remedies_text(const allocator::Remedies& remedies, std::ostream& out);

}  // namespace gmt::analyzer
