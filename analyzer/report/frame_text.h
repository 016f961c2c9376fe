// SPDX-License-Identifier: Apache-2.0
// Frames and devices as the text reports print them.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// "device 0", or "device unknown" for -1.
std::string device_name(int device);

// "function  file.cpp:12", or "function  (libfoo.so)" without debug information.
std::string frame_text(const SiteFrame& frame);

// Up to `shown` frames, one per line after `indent`, and how many more there are.
void write_frames(const std::vector<SiteFrame>& frames, std::size_t shown,
                  const std::string& indent, std::ostream& out);

}  // namespace gmt::analyzer
