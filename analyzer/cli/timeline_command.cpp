// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace timeline`: live bytes per device (and per kind) over time, as CSV, JSON or a
// chart for the terminal. Each bucket holds its maximum, so the peak always shows.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <string_view>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/report/byte_size.h"

namespace gmt::analyzer {
namespace {

using Devices = std::vector<std::pair<int, const DeviceTimeline*>>;

void write_csv(const Timeline& timeline, const Devices& devices, std::ostream& out) {
  std::set<format::MemoryKind> kinds;
  for (const auto& [ordinal, d] : devices) {
    for (const auto& [kind, series] : d->by_kind) kinds.insert(kind);
  }
  // The `device` column is the ordinal, so the kind named "device" (plain cuMemAlloc memory) is
  // headed `device_bytes`, as the Python API names it; the other kinds keep their names.
  out << "time_ns,device,resident";
  for (format::MemoryKind kind : kinds) {
    const std::string_view name = format::memory_kind_name(kind);
    out << ',' << (name == "device" ? "device_bytes" : name);
  }
  // A caching allocator's own figures (block events), when any device has them.
  bool framework = false;
  for (const auto& [ordinal, d] : devices) framework = framework || !d->framework_reserved.empty();
  if (framework) out << ",framework_allocated,framework_reserved";
  out << '\n';
  const auto at = [](const std::vector<uint64_t>& series, std::size_t b) {
    return b < series.size() ? series[b] : 0;
  };
  for (const auto& [ordinal, d] : devices) {
    for (std::size_t b = 0; b < d->resident.size(); ++b) {
      out << b * timeline.resolution_ns << ',' << ordinal << ',' << d->resident[b];
      for (format::MemoryKind kind : kinds) {
        const auto series = d->by_kind.find(kind);
        const bool has = series != d->by_kind.end() && b < series->second.size();
        out << ',' << (has ? series->second[b] : 0);
      }
      if (framework) {
        out << ',' << at(d->framework_allocated, b) << ',' << at(d->framework_reserved, b);
      }
      out << '\n';
    }
  }
}

nlohmann::ordered_json timeline_json(const TraceSummary& trace, const Devices& devices) {
  using nlohmann::ordered_json;
  ordered_json list = ordered_json::array();
  for (const auto& [ordinal, d] : devices) {
    ordered_json by_kind = ordered_json::object();
    for (const auto& [kind, series] : d->by_kind) {
      by_kind[std::string(format::memory_kind_name(kind))] = series;
    }
    const auto summary = trace.devices.find(ordinal);
    ordered_json device = {
        {"device", ordinal},
        {"peak_bytes", summary != trace.devices.end() ? summary->second.peak_bytes : 0},
        {"resident", d->resident},
        {"by_kind", by_kind}};
    if (!d->framework_reserved.empty()) {
      device["framework_allocated"] = d->framework_allocated;
      device["framework_reserved"] = d->framework_reserved;
    }
    list.push_back(std::move(device));
  }
  return {
      {"trace", trace.path}, {"resolution_ns", trace.timeline.resolution_ns}, {"devices", list}};
}

constexpr std::size_t kChartWidth = 64;

// Column c of `width` holds the most of its share of the buckets.
std::vector<uint64_t> columns(const std::vector<uint64_t>& buckets, std::size_t width) {
  std::vector<uint64_t> cols(std::min(width, buckets.size()), 0);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::size_t c = b * cols.size() / buckets.size();
    cols[c] = std::max(cols[c], buckets[b]);
  }
  return cols;
}

// The time axis under `width` columns: "0" under the first, the duration ending under the last,
// at least one space apart.
std::string time_axis(std::size_t width, uint64_t duration_ns) {
  const std::string end = human_duration(duration_ns);
  const std::size_t used = 1 + end.size();
  return "0" + std::string(width > used ? width - used : 1, ' ') + end;
}

void write_chart(const TraceSummary& trace, const Devices& devices, bool colour,
                 std::ostream& out) {
  constexpr std::size_t kHeight = 8;
  for (const auto& [ordinal, d] : devices) {
    const std::vector<uint64_t> cols = columns(d->resident, kChartWidth);
    const uint64_t top = cols.empty() ? 0 : *std::max_element(cols.begin(), cols.end());
    out << device_name(ordinal) << ": device-resident bytes over "
        << human_duration(trace.duration_ns) << " (peak " << human_bytes(top) << ")\n";
    for (std::size_t row = kHeight; row >= 1; --row) {
      const std::string label = row == kHeight ? human_bytes(top) : row == 1 ? "0" : "";
      out << std::setw(10) << label << " |";
      std::string line;
      for (uint64_t v : cols) {
        // A cell is filled when the column reaches above the row's lower edge.
        const bool filled = top > 0 && static_cast<double>(v) * kHeight >
                                           static_cast<double>(top) * static_cast<double>(row - 1);
        line += filled ? (v == top ? '#' : '=') : ' ';
      }
      out << paint(line, "32", colour) << "\n";
    }
    out << std::setw(12) << "+" << std::string(cols.size(), '-') << "\n";
    out << std::string(12, ' ') << time_axis(cols.size(), trace.duration_ns) << "\n";
    const uint64_t column_ns =
        cols.empty() ? 0 : d->resident.size() * trace.timeline.resolution_ns / cols.size();
    out << std::string(12, ' ') << "each column: the most live during " << human_duration(column_ns)
        << "; # reaches the peak, = below it\n";
  }
}

}  // namespace

int timeline_command(const TimelineOptions& options, std::ostream& out, std::ostream& err) {
  SummaryOptions summary_options;
  // Without --resolution: 10 ms for CSV and JSON; the chart takes the finest buckets the limit
  // allows and folds them into its columns, so that any trace fills its width.
  const double resolution_ms =
      options.resolution_ms.value_or(options.format.empty() ? 0 : kDefaultResolutionMs);
  summary_options.timeline_resolution_ns =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(resolution_ms * 1e6)));
  TraceSummary trace;
  try {
    trace = load_trace(options.path, err, summary_options);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  Devices devices;
  for (const auto& [ordinal, d] : trace.timeline.devices) {
    if (!options.device || *options.device == ordinal) devices.emplace_back(ordinal, &d);
  }
  if (options.device && devices.empty()) {
    err << "gpumemtrace: " << options.path << ": no device " << *options.device
        << " in the trace\n";
    return 1;
  }
  if (options.format == "csv") {
    write_csv(trace.timeline, devices, out);
  } else if (options.format == "json") {
    out << timeline_json(trace, devices).dump(2) << "\n";
  } else {
    write_chart(trace, devices, options.colour, out);
  }
  return 0;
}

Command add_timeline_command(CLI::App& app) {
  auto options = std::make_shared<TimelineOptions>();
  CLI::App* timeline = app.add_subcommand("timeline", "Live bytes over time per device and kind");
  timeline->add_option("trace", options->path, "Trace file")->required();
  timeline->add_option("--format", options->format, "csv or json (default: a chart)")
      ->check(CLI::IsMember({"csv", "json"}));
  timeline->add_option("--device", options->device, "Only this device (default: every device)")
      ->check(device_number());
  timeline
      ->add_option("--resolution", options->resolution_ms,
                   "Bucket width in ms (default: 10 for csv and json; the chart fits its width)")
      ->type_name("MS")
      ->check(milliseconds());
  return {timeline, [options] {
            options->colour = colour_wanted(1);
            return timeline_command(*options, std::cout, std::cerr);
          }};
}

}  // namespace gmt::analyzer
