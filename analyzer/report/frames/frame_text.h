// SPDX-License-Identifier: Apache-2.0
// Frames and devices as the text reports print them.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/trace_summary.h"
#include "analyzer/report/frames/frame_policy.h"

namespace gmt::analyzer {

// `text` (an argument, a host or function name: anything the trace brings) safe to print on a
// terminal: control characters (C0, DEL, and C1 as UTF-8) become escapes ("\x1b", "\u009b"),
// and a backslash is doubled only where it would read as one of them.
std::string printable(std::string_view text);

// "device 0", or "device unknown" for -1.
std::string device_name(int device);

// "function  file.cpp:12", "function  (libfoo.so)" without debug information, or
// "libfoo.so+0x1a2b" for a function nothing names.
std::string frame_text(const SiteFrame& frame);

// A site in one line, the same rule in every command that names sites in one line (peak's,
// leaks' and oom's JSON, `export --format jsonl`, `top`, the job view, and the Python API and
// notebook cell through the JSON's `site`): the first frame in the user's code (frame_policy.h),
// else the leaf, as `file.py:LINE` (`function (libfoo.so)` for a frame without a line). Rows
// listed together that share that frame are told apart by the callers where their stacks part,
// outermost first: `train.py:12 > train.py:6` and `train.py:15 > train.py:6` for two calls of
// the helper at train.py:6. `rows[i]` is one row's frames (leaf first; null or empty: no stack,
// labelled ""). Rows whose callers are all alike keep the same label.
std::vector<std::string> site_labels(const std::vector<const std::vector<SiteFrame>*>& rows);
// One site's label, with no other row to tell it from.
std::string site_label(const std::vector<SiteFrame>& frames);
// A frame as site labels name it.
std::string site_frame_label(const SiteFrame& frame);

// The stack as frame_policy.h shows it, one frame per line after `indent`: the first user
// frame, the `via` line under it (indented two more), then its callers, up to `shown` frames and
// how many more there are. FrameMode::kAll writes every frame.
void write_frames(const std::vector<SiteFrame>& frames, std::size_t shown,
                  const std::string& indent, std::ostream& out, FrameMode mode = FrameMode::kUser);

}  // namespace gmt::analyzer
