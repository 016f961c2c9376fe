// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/frames_option.h"

#include <string>

namespace gmt::analyzer {

CLI::Option* add_frames_option(CLI::App& command, FrameMode& mode) {
  // `mode` lives in the command's options, which outlive the parse.
  return command
      .add_option_function<std::string>(
          "--frames",
          [&mode](const std::string& value) {
            mode = value == "all" ? FrameMode::kAll : FrameMode::kUser;
          },
          "Stack frames shown: user (from the first frame in your code, the CUDA runtime's and "
          "frameworks' frames below it as one 'via' line) or all")
      ->check(CLI::IsMember({"user", "all"}))
      ->default_str("user");
}

}  // namespace gmt::analyzer
