// SPDX-License-Identifier: Apache-2.0
// Frames for the report tests, as the symbolizer would give them.
#pragma once

#include <string>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer::test_frames {

// A native frame without debug information: its function and module.
inline SiteFrame in(const std::string& function, const std::string& module) {
  SiteFrame f;
  f.function = function;
  f.module = module;
  return f;
}

// A native frame with its file and line.
inline SiteFrame at(const std::string& function, const std::string& file, int line,
                    const std::string& module = "/opt/app/train") {
  SiteFrame f = in(function, module);
  f.file = file;
  f.line = line;
  return f;
}

inline SiteFrame python(const std::string& function, const std::string& file, int line) {
  SiteFrame f;
  f.function = function;
  f.file = file;
  f.line = line;
  f.kind = "python";
  return f;
}

}  // namespace gmt::analyzer::test_frames
