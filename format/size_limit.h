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

// Bytes, from a size as parse_byte_size() reads it (size_text.h: "1GiB", "1.5GiB", "64MB");
// nullopt for anything else, and for less than kMinMaxSize.
std::optional<uint64_t> parse_max_size(std::string_view text);

}  // namespace gmt::format
