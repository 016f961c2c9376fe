// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/command_support.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>

#include "analyzer/model/input/progress_bar.h"
#include "analyzer/report/history_text.h"
#include "format/size_text.h"

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

namespace {

// What an option's type name (CLI11's: INT, UINT, FLOAT, TEXT...) asks for, in words.
std::string expected_of(const CLI::Option* option) {
  const std::string type = option != nullptr ? option->get_type_name() : "";
  if (type == "INT") return "a whole number";
  if (type == "UINT") return "a whole number";
  if (type == "FLOAT") return "a number";
  if (type.empty() || type == "TEXT") return "a value";
  return type;
}

// The option or positional argument `name` of `command` (a positional by its name, "after").
const CLI::Option* option_named(const CLI::App& command, const std::string& name) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->check_name(name) || option->get_name() == name) return option;
  }
  return nullptr;
}

// How an argument is named to the user: "--pid", or a positional's name in capitals ("AFTER").
std::string argument_name(const CLI::Option* option, const std::string& name) {
  if (option == nullptr || !option->get_positional() || option->nonpositional()) return name;
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

// `text` after `prefix`, when it starts with it.
std::optional<std::string> after(const std::string& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return std::nullopt;
  return text.substr(prefix.size());
}

}  // namespace

std::string usage_error_text(const CLI::ParseError& error, const CLI::App& command) {
  const std::string what = error.what();
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    // "after is required", "--format is required".
    if (const std::size_t at = what.rfind(" is required");
        at != std::string::npos && at + 12 == what.size()) {
      const std::string name = what.substr(0, at);
      const CLI::Option* option = option_named(command, name);
      std::string text = "missing " + argument_name(option, name);
      if (option != nullptr && !option->get_description().empty())
        text += " (" + option->get_description() + ")";
      return text;
    }
    return what;
  }
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    // "Could not convert: --pid = 1,live/": the values as given, joined by commas.
    if (const auto rest = after(what, "Could not convert: ")) {
      const std::size_t eq = rest->find(" = ");
      if (eq != std::string::npos) {
        const std::string name = rest->substr(0, eq);
        const CLI::Option* option = option_named(command, name);
        return argument_name(option, name) + ": expected " + expected_of(option) + ", got '" +
               rest->substr(eq + 3) + "'";
      }
    }
    return what;
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    // "--device: At Most 1 required but received 2".
    const std::size_t colon = what.find(": At Most ");
    if (colon != std::string::npos) {
      const std::string name = what.substr(0, colon);
      const std::size_t received = what.rfind(' ');
      const std::string count = what.substr(received + 1);
      return argument_name(option_named(command, name), name) + ": given " + count +
             " times; give it once";
    }
    // "--top: 1 required INT missing", "Expected exactly 1 arguments to --top, got 0".
    const std::size_t required = what.find(" required ");
    if (required != std::string::npos && what.ends_with(" missing")) {
      const std::string name = what.substr(0, what.find(':'));
      const CLI::Option* option = option_named(command, name);
      return argument_name(option, name) + ": needs " + expected_of(option);
    }
    if (const auto rest = after(what, "Expected exactly ")) {
      const std::size_t to = rest->find(" arguments to ");
      const std::size_t got = rest->rfind(", got ");
      if (to != std::string::npos && got != std::string::npos && got > to) {
        const std::string name = rest->substr(to + 14, got - to - 14);
        const CLI::Option* option = option_named(command, name);
        return argument_name(option, name) + ": needs " + expected_of(option);
      }
    }
    return what;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    // "The following argument was not expected: x" (several: "arguments were", in reverse).
    for (const std::string_view prefix : {"The following argument was not expected: ",
                                          "The following arguments were not expected: "}) {
      if (const auto rest = after(what, prefix))
        return std::string(prefix.find("arguments") != std::string_view::npos
                               ? "unexpected arguments: "
                               : "unexpected argument: ") +
               *rest;
    }
    return what;
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr) {
    // "--a excludes --b".
    const std::size_t at = what.find(" excludes ");
    if (at != std::string::npos)
      return what.substr(0, at) + " and " + what.substr(at + 10) + " cannot be given together";
  }
  return what;
}

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

CLI::Option* add_device_memory_option(CLI::App& command, std::optional<uint64_t>& memory,
                                      const std::string& help) {
  return command
      .add_option_function<std::string>(
          "--device-memory",
          [&memory](const std::string& text) {
            memory = format::parse_byte_size(text);
            if (!memory || *memory == 0)
              throw CLI::ValidationError(
                  "--device-memory",
                  "expected a size above 0 (40GiB, 80 GB, 81559MiB), got '" + text + "'");
          },
          help)
      ->type_name("SIZE");
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
