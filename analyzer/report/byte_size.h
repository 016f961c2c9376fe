// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gmt::analyzer {

// "1.50 GiB", "512 B": binary units, three significant digits, for people.
std::string human_bytes(uint64_t bytes);

// "512MiB", "10 GiB", "1.5G", "4096", "2GB": binary units (KiB, MiB, GiB, TiB, and K, M, G, T),
// decimal ones (KB, MB, GB, TB), or bytes. Empty when the text is not a size, or not a whole
// number of bytes ("1.5", "0.1K"), or more than 2^64 - 1 bytes.
std::optional<uint64_t> parse_byte_size(std::string_view text);

// "1.234 s", "15.0 ms": a duration in nanoseconds, for people.
std::string human_duration(uint64_t ns);

}  // namespace gmt::analyzer
