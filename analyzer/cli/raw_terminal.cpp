// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/raw_terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace gmt::analyzer {

RawTerminal::RawTerminal() {
  if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
  termios raw = saved_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG kept: Ctrl-C is SIGINT
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
}

RawTerminal::~RawTerminal() {
  if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

TerminalSize terminal_size(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) != 0) return {};
  return {size.ws_col, size.ws_row};
}

}  // namespace gmt::analyzer
