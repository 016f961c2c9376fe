// SPDX-License-Identifier: Apache-2.0
// The size limit of a bounded trace as people write it (GPUMEMTRACE_MAX_SIZE, `run --max-size`):
// shared by the traced process, which reads the variable, and the CLI, which checks the option
// before it starts anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gmt::format {

// The smallest limit: the header page, the chunks the writer never reuses (the process's
// description and ids) and room for the live set's checkpoints with history between them.
inline constexpr uint64_t kMinMaxSize = 1u << 20;

// Bytes, from "1073741824", "64MiB", "1GiB", "512KiB", "2TiB" (binary), "64MB", "1GB" (decimal)
// or "64M", "1G" (binary); nullopt for anything else, and for less than kMinMaxSize.
std::optional<uint64_t> parse_max_size(std::string_view text);

}  // namespace gmt::format
