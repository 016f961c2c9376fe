// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace whatif TRACE [CHANGE]... [--device-memory SIZE] [--json]`: PyTorch's block
// requests replayed through the caching allocator's model, unchanged first (does the model
// reproduce the recording?), then under the changes (allocator settings, batch scale, sharding,
// dtypes): the highest allocated and reserved bytes predicted, by role, whether the run would
// fit, and the largest batch that would.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "analyzer/cli/commands.h"
#include "analyzer/model/allocator/whatif_prediction.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/report/whatif_report.h"

namespace gmt::analyzer {

int whatif_command(const WhatIfCommandOptions& options, std::ostream& out, std::ostream& err) {
  allocator::WhatIfOptions w;
  w.alloc_conf = options.alloc_conf;
  w.device_memory = options.device_memory;
  w.batch_scale = options.batch_scale;
  w.batch_from = options.batch_from;
  if (options.shard) {
    allocator::Shard shard;
    allocator::parse_shard(*options.shard, shard);
    w.shard = shard;
  }
  for (const std::string& text : options.dtype) {
    Role role = Role::kUnknown;
    double factor = 1;
    allocator::parse_dtype(text, role, factor);
    w.dtype.emplace_back(role, factor);
  }
  w.checkpoint = options.checkpoint;
  w.set_to_none = options.set_to_none;
  if (options.empty_cache_at)
    w.empty_cache_at = allocator::parse_empty_cache_at(*options.empty_cache_at);
  w.largest_batch =
      options.largest_batch || options.batch_scale.has_value() || options.batch_from.has_value();
  allocator::WhatIfResult result;
  try {
    result = allocator::predict_whatif_file(options.path, w);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  } catch (const allocator::WhatIfError& e) {
    err << "gpumemtrace: " << options.path << ": " << e.what() << "\n";
    return 1;
  }
  if (result.block_events == 0) {
    err << "gpumemtrace: " << options.path
        << ": no PyTorch block events in the trace (whatif replays PyTorch's caching allocator; "
           "trace a PyTorch program with its block events on)\n";
    return 1;
  }
  const WhatIfRequest request{options.path, w};
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
      "Replay PyTorch's allocator under other settings, batch, sharding, dtypes or device size: "
      "predicted peaks by role, and the largest batch that fits");
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
  add_device_memory_option(*command, options->device_memory,
                           "Each device's memory (default: the trace's)");
  command
      ->add_option_function<std::string>(
          "--batch-scale",
          [options](const std::string& text) {
            char* end = nullptr;
            const double k = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !(k > 0) || k > allocator::kLargestBatchSearched)
              throw CLI::ValidationError("--batch-scale",
                                         "expected a factor above 0 (0.5, 2), got '" + text + "'");
            options->batch_scale = k;
          },
          "Activations, temporaries and inputs K times larger (the batch); also the largest "
          "batch scale that fits")
      ->type_name("K");
  command
      ->add_option("--batch-from", options->batch_from,
                   "A trace of the same program at another batch: each request's size fitted "
                   "against the batch through both, not scaled in proportion (with --batch-scale, "
                   "and the largest batch that fits)")
      ->check(CLI::ExistingFile)
      ->type_name("TRACE2");
  command->add_flag("--largest-batch", options->largest_batch,
                    "Search the largest batch scale that fits the device");
  command
      ->add_option_function<std::string>(
          "--shard",
          [options](const std::string& text) {
            allocator::Shard shard;
            const std::string error = allocator::parse_shard(text, shard);
            if (!error.empty())
              throw CLI::ValidationError("--shard", error + ", got '" + text + "'");
            options->shard = text;
          },
          "Optimizer state (zero1), gradients (zero2), parameters (zero3, fsdp) divided over N "
          "ranks")
      ->type_name("N[:STAGE]");
  command
      ->add_option_function<std::vector<std::string>>(
          "--dtype",
          [options](const std::vector<std::string>& texts) {
            for (const std::string& text : texts) {
              Role role = Role::kUnknown;
              double factor = 1;
              const std::string error = allocator::parse_dtype(text, role, factor);
              if (!error.empty())
                throw CLI::ValidationError("--dtype", error + ", in '" + text + "'");
              options->dtype.push_back(text);
            }
          },
          "A role's tensors in another dtype than float32 (activation=bf16); repeatable")
      ->type_name("ROLE=DTYPE");
  command
      ->add_option("--checkpoint", options->checkpoint,
                   "Activation checkpointing (torch.utils.checkpoint) of a module, by its "
                   "qualified name as by_module lists it (layer3, blocks.2); repeatable")
      ->type_name("MODULE");
  command
      ->add_option_function<std::string>(
          "--empty-cache-at",
          [options](const std::string& text) {
            if (text.empty())
              throw CLI::ValidationError("--empty-cache-at",
                                         "expected step, backward or a phase's name");
            options->empty_cache_at = text;
          },
          "torch.cuda.empty_cache() at the end of each optimizer step (step), each backward "
          "(backward), or each phase of a name (an NVTX range or a gpumemtrace phase)")
      ->type_name("PHASE");
  command->add_flag("--set-to-none", options->set_to_none,
                    "optimizer.zero_grad(set_to_none=True), in a run that zeroed its gradients "
                    "in place: freed at each step's end, made anew in the next backward");
  command->add_flag("--json", options->json,
                    "Machine-readable output (contract in docs/commands.md)");
  return {command, [options] { return whatif_command(*options, std::cout, std::cerr); }};
}

}  // namespace gmt::analyzer
