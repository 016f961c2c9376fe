// SPDX-License-Identifier: Apache-2.0
// Sizes as people write them, one syntax everywhere: the traced process's variables
// (GPUMEMTRACE_MAX_SIZE) and every option of the CLI that takes a size (`run --max-size`,
// `check --max-peak`, `--max-leak`, `--max-role`).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gmt::format {

// A number, whole or with a decimal point, then optionally spaces and a unit, in any case: none
// or B (bytes); K, KiB, M, MiB, G, GiB, T, TiB (binary: 1024, ...); kB, MB, GB, TB (decimal:
// 1000, ...). "4096", "512MiB", "1.5GiB", "10 GiB", "8.04 GiB" (as the reports print sizes),
// "8g", "2GB". A fraction of a larger unit is rounded to the nearest byte ("0.1K": 102). Empty
// when the text is not such a size, is a count of bytes that is not whole ("1.5"), or is more
// than 2^64 - 1 bytes.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace gmt::format
