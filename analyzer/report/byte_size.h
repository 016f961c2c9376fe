// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

namespace gmt::analyzer {

// "1.50 GiB", "512 B": binary units, three significant digits, for people.
std::string human_bytes(uint64_t bytes);

// "1.234 s", "15.0 ms": a duration in nanoseconds, for people.
std::string human_duration(uint64_t ns);

}  // namespace gmt::analyzer
