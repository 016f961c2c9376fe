// SPDX-License-Identifier: Apache-2.0
// The one way the traced process talks to its user: a "gpumemtrace: ..." line on stderr,
// written with a single write(2) so that lines from several processes do not interleave.
#pragma once

#include <string>

namespace gmt::interpose {

void print_diagnostic(const std::string& message);

}  // namespace gmt::interpose
