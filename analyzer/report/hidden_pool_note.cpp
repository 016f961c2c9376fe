// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/hidden_pool_note.h"

#include "analyzer/report/byte_size.h"

namespace gmt::analyzer {
namespace {

constexpr const char* kSetting = "XLA_PYTHON_CLIENT_ALLOCATOR=platform";
constexpr const char* kRunOption = "--jax-allocator=platform";

}  // namespace

std::string hidden_pool_note(const HiddenPool& pool, int device) {
  std::string note =
      "XLA's pool holds " + human_bytes(pool.bytes) + " of device " + std::to_string(device);
  if (pool.device_total_bytes > 0) {
    note +=
        " (" +
        std::to_string((pool.bytes * 100 + pool.device_total_bytes / 2) / pool.device_total_bytes) +
        "% of it)";
  }
  note += " in " + std::to_string(pool.allocations) +
          (pool.allocations == 1 ? " allocation" : " allocations") +
          (pool.preallocated ? ", taken at once" : ", grown as needed") +
          ": the arrays JAX keeps in it are not seen. " + kSetting + " (gpumemtrace run " +
          kRunOption +
          ") makes each array its own allocation, at its line, at a cost: every array is then a "
          "cudaMalloc and a cudaFree, slower, with no pooling.";
  // Growing instead of taking the device at once is cheaper, but the arrays stay inside the pool.
  if (pool.preallocated)
    note +=
        " XLA_PYTHON_CLIENT_PREALLOCATE=false costs less, but still pools: the arrays stay unseen.";
  return note;
}

nlohmann::ordered_json hidden_pool_json(const HiddenPool& pool, int device) {
  return {{"framework", pool.framework},
          {"bytes", pool.bytes},
          {"allocations", pool.allocations},
          {"preallocated", pool.preallocated},
          {"device_total_bytes", pool.device_total_bytes},
          {"setting", kSetting},
          {"run_option", kRunOption},
          {"note", hidden_pool_note(pool, device)}};
}

std::vector<std::string> notes_and_hidden_pools(const TraceSummary& trace) {
  std::vector<std::string> notes = trace.notes;
  for (const auto& [ordinal, d] : trace.devices) {
    if (const auto pool = hidden_pool(trace, d)) notes.push_back(hidden_pool_note(*pool, d.device));
  }
  return notes;
}

}  // namespace gmt::analyzer
