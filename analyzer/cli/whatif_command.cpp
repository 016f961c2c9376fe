// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace whatif TRACE [--alloc-conf CONF] [--device-memory SIZE] [--json]`: PyTorch's block
// requests replayed through the caching allocator's model, unchanged first (does the model
// reproduce the recording?), then under the change: the highest allocated and reserved bytes
// predicted, and whether the run would fit.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "analyzer/cli/commands.h"
#include "analyzer/model/allocator/whatif_prediction.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/report/whatif_report.h"
#include "format/size_text.h"

namespace gmt::analyzer {

int whatif_command(const WhatIfCommandOptions& options, std::ostream& out, std::ostream& err) {
  allocator::WhatIfOptions w;
  w.alloc_conf = options.alloc_conf;
  w.device_memory = options.device_memory;
  allocator::WhatIfResult result;
  try {
    result = allocator::predict_whatif_file(options.path, w);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  if (result.block_events == 0) {
    err << "gpumemtrace: " << options.path
        << ": no PyTorch block events in the trace (whatif replays PyTorch's caching allocator; "
           "trace a PyTorch program with its block events on)\n";
    return 1;
  }
  const WhatIfRequest request{options.path, options.alloc_conf, options.device_memory};
  if (options.json) {
    out << whatif_json(request, result).dump(2) << "\n";
  } else {
    write_whatif_text(request, result, out);
  }
  return 0;
}

Command add_whatif_command(CLI::App& app) {
  auto options = std::make_shared<WhatIfCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "whatif",
      "Replay PyTorch's allocator under other settings or another device size: predicted peaks");
  command->add_option("trace", options->path, "Trace file")->required();
  command
      ->add_option_function<std::string>(
          "--alloc-conf",
          [options](const std::string& text) {
            const allocator::AllocConf conf = allocator::parse_alloc_conf(text);
            if (!conf.error.empty())
              throw CLI::ValidationError("--alloc-conf", conf.error + ", in '" + text + "'");
            options->alloc_conf = text;
          },
          "PYTORCH_CUDA_ALLOC_CONF to predict ('expandable_segments:True,max_split_size_mb:128')")
      ->type_name("CONF");
  command
      ->add_option_function<std::string>(
          "--device-memory",
          [options](const std::string& text) {
            options->device_memory = format::parse_byte_size(text);
            if (!options->device_memory || *options->device_memory == 0)
              throw CLI::ValidationError(
                  "--device-memory",
                  "expected a size above 0 (40GiB, 80 GB, 81559MiB), got '" + text + "'");
          },
          "Each device's memory (default: the trace's)")
      ->type_name("SIZE");
  command->add_flag("--json", options->json,
                    "Machine-readable output (contract in docs/commands.md)");
  return {command, [options] { return whatif_command(*options, std::cout, std::cerr); }};
}

}  // namespace gmt::analyzer
