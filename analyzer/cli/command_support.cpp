// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/command_support.h"

#include "analyzer/model/input/progress_bar.h"

namespace gmt::analyzer {

TraceSummary load_trace(const std::string& path, std::ostream& err, const SummaryOptions& options) {
  SummaryOptions with_progress = options;
  if (with_progress.progress == nullptr) with_progress.progress = progress_stream();
  TraceSummary trace = summarize_trace(path, with_progress);
  for (const std::string& problem : trace.problems) {
    err << "gpumemtrace: " << path << ": left out at " << problem << "\n";
  }
  return trace;
}

}  // namespace gmt::analyzer
