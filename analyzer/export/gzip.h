// SPDX-License-Identifier: Apache-2.0
// Gzip (RFC 1952) in memory, through zlib's deflate.
#pragma once

#include <string>
#include <string_view>

namespace gmt::analyzer {

// Throws std::runtime_error naming zlib's complaint when zlib fails (out of memory).
std::string gzip(std::string_view data);

}  // namespace gmt::analyzer
