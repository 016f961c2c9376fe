// SPDX-License-Identifier: Apache-2.0
// The terminal of an interactive view (`gpumemtrace top`): keys read one at a time without
// echo while it runs, given back as it was on every way out; and its size.
#pragma once

#include <termios.h>

#include <cstddef>

namespace gmt::analyzer {

class RawTerminal {
 public:
  RawTerminal();
  ~RawTerminal();
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

struct TerminalSize {
  std::size_t columns = 0;  // 0: not known
  std::size_t rows = 0;
};
// The size of the terminal on `fd`, as it is now (it may change between two frames).
TerminalSize terminal_size(int fd);

}  // namespace gmt::analyzer
