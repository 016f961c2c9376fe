// SPDX-License-Identifier: Apache-2.0
// Frames and devices as the text reports print them.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// `text` (an argument, a host or function name: anything the trace brings) safe to print on a
// terminal: control characters (C0, DEL, and C1 as UTF-8) become escapes ("\x1b", "\u009b"),
// and a backslash is doubled only where it would read as one of them.
std::string printable(std::string_view text);

// "device 0", or "device unknown" for -1.
std::string device_name(int device);

// "function  file.cpp:12", or "function  (libfoo.so)" without debug information.
std::string frame_text(const SiteFrame& frame);

// Up to `shown` frames, one per line after `indent`, and how many more there are.
void write_frames(const std::vector<SiteFrame>& frames, std::size_t shown,
                  const std::string& indent, std::ostream& out);

}  // namespace gmt::analyzer
