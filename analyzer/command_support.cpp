#include "analyzer/command_support.h"

#include "analyzer/progress_bar.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

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

std::string device_name(int device) {
  return device >= 0 ? "device " + std::to_string(device) : std::string("device unknown");
}

namespace {
std::string basename_of(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}
}  // namespace

std::string frame_text(const SiteFrame& f) {
  // An ostream: GCC 12 warns falsely (-Wrestrict) on chained string concatenation at -O3.
  std::ostringstream text;
  text << f.function;
  if (f.file) {
    text << "  " << basename_of(*f.file);
    if (f.line) text << ':' << *f.line;
  } else if (f.module) {
    text << "  (" << basename_of(*f.module) << ')';
  }
  return text.str();
}

namespace {

// The CUDA runtime's and driver's own libraries.
bool cuda_library(const std::optional<std::string>& module) {
  if (!module) return false;
  const std::string name = module->substr(module->rfind('/') + 1);
  return name.rfind("libcudart", 0) == 0 || name.rfind("libcuda.so", 0) == 0;
}

}  // namespace

void write_frames(const std::vector<SiteFrame>& frames, std::size_t shown,
                  const std::string& indent, std::ostream& out) {
  if (frames.empty()) out << indent << "(no stack recorded)\n";
  // A stack that went through the CUDA runtime starts with its internals: the text starts at
  // the runtime's entry point (the last of those frames, cudaMalloc), so that the frames shown
  // are the program's. The JSON keeps them all.
  std::size_t first = 0;
  while (first + 1 < frames.size() && cuda_library(frames[first].module) &&
         cuda_library(frames[first + 1].module)) {
    ++first;
  }
  // With Python frames further down, they are what the user wrote: the native frames between
  // the entry point and them are summed up in one line.
  std::size_t python = first;
  while (python < frames.size() && frames[python].kind != "python") ++python;
  if (python < frames.size() && python > first + 1 && python >= first + shown && shown > 1) {
    out << indent << frame_text(frames[first]) << "\n";
    out << indent << "... " << python - first - 1 << " native frames\n";
    first = python;
    shown -= 1;
  }
  for (std::size_t i = first; i < frames.size() && i < first + shown; ++i) {
    out << indent << frame_text(frames[i]) << "\n";
  }
  if (frames.size() > first + shown) {
    out << indent << "... " << frames.size() - first - shown << " more frames\n";
  }
}

nlohmann::ordered_json failure_json(const FailedAllocation& f) {
  return {{"time_ns", f.time_ns},
          {"device", f.device},
          {"api", format::api_name(f.api)},
          {"driver_api", format::api_name(f.driver_api)},
          {"requested_bytes", f.requested_bytes},
          {"live_bytes", f.live_bytes},
          {"driver_free_bytes", or_null(f.driver_free_bytes())},
          {"other_processes_bytes", or_null(f.other_processes_bytes())}};
}

nlohmann::ordered_json frames_json(const std::vector<SiteFrame>& frames) {
  using nlohmann::ordered_json;
  ordered_json out = ordered_json::array();
  for (const SiteFrame& f : frames) {
    out.push_back({{"function", f.function},
                   {"file", f.file ? ordered_json(*f.file) : nullptr},
                   {"line", f.line ? ordered_json(*f.line) : nullptr},
                   {"module", f.module ? ordered_json(*f.module) : nullptr},
                   {"kind", f.kind}});
  }
  return out;
}

nlohmann::ordered_json site_stats_json(const SiteStats& site) {
  using nlohmann::ordered_json;
  ordered_json histogram = ordered_json::array();
  for (std::size_t b = 0; b < site.size_histogram.size(); ++b) {
    if (site.size_histogram[b] == 0) continue;
    const uint64_t min_bytes = b == 0 ? 0 : uint64_t{1} << (b - 1);
    histogram.push_back({{"min_bytes", min_bytes}, {"count", site.size_histogram[b]}});
  }
  return {{"allocations", site.allocations},
          {"temporary_count", site.temporaries},
          {"size_histogram", histogram}};
}

const SiteStats& site_of(const TraceSummary& trace, int device, uint32_t stack) {
  static const SiteStats kNone;
  const auto it = trace.sites.find(site_key(device, stack));
  return it != trace.sites.end() ? it->second : kNone;
}

bool colour_wanted(int fd) {
  return isatty(fd) == 1 && std::getenv("NO_COLOR") == nullptr;
}

std::string paint(const std::string& text, const char* sgr, bool colour) {
  return colour ? std::string("\x1b[") + sgr + "m" + text + "\x1b[0m" : text;
}

}  // namespace gmt::analyzer
