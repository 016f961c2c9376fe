// SPDX-License-Identifier: Apache-2.0
// `--frames user|all`, the option of every command that prints stacks (frame_policy.h).
#pragma once

#include <CLI/CLI.hpp>

#include "analyzer/report/frames/frame_policy.h"

namespace gmt::analyzer {

// Adds `--frames` to `command`, parsed into `mode` (FrameMode::kUser unless given).
CLI::Option* add_frames_option(CLI::App& command, FrameMode& mode);

}  // namespace gmt::analyzer
