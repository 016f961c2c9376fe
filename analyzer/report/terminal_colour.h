// SPDX-License-Identifier: Apache-2.0
// Colour for people at a terminal, and none for pipes, files or NO_COLOR.
#pragma once

#include <string>

namespace gmt::analyzer {

// ANSI colour for people at a terminal: only when `fd` is a terminal and NO_COLOR is not set.
bool colour_wanted(int fd);
std::string paint(const std::string& text, const char* sgr, bool colour);

}  // namespace gmt::analyzer
