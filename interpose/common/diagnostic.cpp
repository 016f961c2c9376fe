// SPDX-License-Identifier: Apache-2.0
#include "interpose/common/diagnostic.h"

#include <unistd.h>

namespace gmt::interpose {

void print_diagnostic(const std::string& message) {
  const std::string line = "gpumemtrace: " + message + "\n";
  const ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;  // nowhere left to report a failure to report
}

}  // namespace gmt::interpose
