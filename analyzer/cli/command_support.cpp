// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/command_support.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "analyzer/model/input/progress_bar.h"
#include "analyzer/report/history_text.h"

namespace gmt::analyzer {

TraceSummary load_trace(const std::string& path, std::ostream& err, const SummaryOptions& options,
                        bool history_said) {
  SummaryOptions with_progress = options;
  if (with_progress.progress == nullptr) with_progress.progress = progress_stream();
  TraceSummary trace = summarize_trace(path, with_progress);
  for (const std::string& problem : trace.problems) {
    err << "gpumemtrace: " << path << ": left out at " << problem << "\n";
  }
  // A bounded trace that dropped its oldest history: every figure is of what it kept.
  if (const std::string history = history_text(trace); !history.empty() && !history_said)
    err << "gpumemtrace: " << path << ": " << history << "\n";
  return trace;
}

namespace {

std::string got(const std::string& text) {
  return ", got '" + text + "'";
}

// `text` as a whole number with an optional leading '-', when all of it is one and it fits.
std::optional<int64_t> whole_number(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || text[0] == '+') return std::nullopt;
  return value;
}

}  // namespace

const CLI::Validator& positive_whole_number() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        const auto value = whole_number(text);
        if (!value || *value < 1 || *value > std::numeric_limits<uint32_t>::max() ||
            text[0] == '-') {
          return "expected a positive whole number" + got(text);
        }
        return "";
      },
      "", "");
  return validator;
}

const CLI::Validator& device_number() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        const auto value = whole_number(text);
        if (!value || *value < -1 || *value > std::numeric_limits<int>::max()) {
          return "expected a device number (0, 1, ...)" + got(text);
        }
        return "";
      },
      "", "");
  return validator;
}

const CLI::Validator& milliseconds() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) ||
            value <= 0 || value > kMaxMilliseconds) {
          return "expected a number of milliseconds above 0 and at most 1e12" + got(text);
        }
        return "";
      },
      "", "");
  return validator;
}

const CLI::Validator& seconds_interval() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) ||
            value <= 0 || value > kMaxIntervalSeconds) {
          return "expected a number of seconds above 0 and at most 86400" + got(text);
        }
        return "";
      },
      "", "");
  return validator;
}

}  // namespace gmt::analyzer
