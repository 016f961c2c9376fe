// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/terminal_colour.h"

#include <unistd.h>

#include <cstdlib>

namespace gmt::analyzer {

bool colour_wanted(int fd) {
  return isatty(fd) == 1 && std::getenv("NO_COLOR") == nullptr;
}

std::string paint(const std::string& text, const char* sgr, bool colour) {
  return colour ? std::string("\x1b[") + sgr + "m" + text + "\x1b[0m" : text;
}

}  // namespace gmt::analyzer
