// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/frames_option.h"

#include <map>
#include <string>

namespace gmt::analyzer {

CLI::Option* add_frames_option(CLI::App& command, FrameMode& mode) {
  static const std::map<std::string, FrameMode> kModes = {{"user", FrameMode::kUser},
                                                          {"all", FrameMode::kAll}};
  return command
      .add_option("--frames", mode,
                  "Stack frames shown: user (from the first frame in your code, the CUDA "
                  "runtime's and frameworks' frames below it as one 'via' line) or all")
      ->transform(CLI::CheckedTransformer(kModes))
      ->default_str("user");
}

}  // namespace gmt::analyzer
