// SPDX-License-Identifier: Apache-2.0
// analyzer_passes TRACE: where `gpumemtrace report`'s time goes, as one JSON object on stdout.
//
// It times, one after the other on the same mapped file: the reader's up-front scan of the
// chunks (checksums, record counts), the format reader alone (every record
// decoded and merged in time order, nothing done with it), the reader feeding one Replay (the
// analyzer's first pass), and the whole summary (both passes, leak classes). The differences
// split the time between decoding, the model and the second pass; report's own figure adds
// symbolization and printing on top.
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <span>
#include <string>

#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/summarize_trace.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace {

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: analyzer_passes TRACE\n");
    return 2;
  }
  try {
    const std::string path = argv[1];
    gmt::analyzer::MappedFile file(path);
    const gmt::format::HeaderCheck header = gmt::format::check_header(file.bytes());
    if (!header.ok) throw std::runtime_error(path + ": " + header.error);

    // Read in batches, as report reads.
    using Batch = gmt::format::TraceReader::Batch;
    std::array<const gmt::format::MemoryEvent*, gmt::format::TraceReader::kBatchEvents> batch;
    uint64_t records = 0;
    double scan_s = 0;
    const double read_s = seconds([&] {
      std::optional<gmt::format::TraceReader> reader;
      scan_s = seconds([&] { reader.emplace(file.bytes(), header.header); });
      for (Batch b; (b = reader->next_batch(batch)).events > 0 || b.other != nullptr;) {
        records += b.events + (b.other != nullptr ? 1 : 0);
      }
    });
    uint64_t events = 0;
    const double replay_s = seconds([&] {
      gmt::format::TraceReader reader(file.bytes(), header.header);
      gmt::analyzer::Replay replay;
      for (Batch b; (b = reader.next_batch(batch)).events > 0 || b.other != nullptr;) {
        replay.apply_events(std::span(batch).first(b.events));
        if (b.other != nullptr) replay.apply(*b.other);
      }
      replay.finish();
      events = replay.summary().events;
    });
    const double summary_s = seconds([&] { gmt::analyzer::summarize_trace(path); });
    std::printf(
        "{\"records\": %llu, \"events\": %llu, \"scan_s\": %.3f, \"read_s\": %.3f, "
        "\"read_replay_s\": %.3f, "
        "\"summary_s\": %.3f}\n",
        static_cast<unsigned long long>(records), static_cast<unsigned long long>(events), scan_s,
        read_s, replay_s, summary_s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "analyzer_passes: %s\n", e.what());
    return 1;
  }
}
