// SPDX-License-Identifier: Apache-2.0
// The gpumemtrace command line: the commands (commands.h), parsed and run. Every usage error
// (an unknown command or option, a value that does not parse) exits 2; --help and --version
// exit 0. Output that could not all be written exits 1, whatever the command.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <string_view>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"

#ifndef GMT_VERSION
#define GMT_VERSION "unknown"
#endif

namespace {

constexpr int kUsageError = 2;
constexpr int kOutputError = 1;

// Standard output written straight to descriptor 1, keeping the errno of the first write that
// failed: by the time a command returns, the reason (a full disk, a closed pipe) is gone from
// errno, and a stream's failbit alone cannot name it. Every command writes through std::cout,
// so this is the one place that sees every failed write.
class StdoutBuffer : public std::streambuf {
 public:
  StdoutBuffer() { setp(buffer_, buffer_ + sizeof buffer_); }
  StdoutBuffer(const StdoutBuffer&) = delete;
  StdoutBuffer& operator=(const StdoutBuffer&) = delete;

  // 0 while every byte was written; else the errno of the first write that failed.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
    return c;
  }

  std::streamsize xsputn(const char* data, std::streamsize size) override {
    // Large writes go out directly rather than through the buffer in pieces.
    if (size < static_cast<std::streamsize>(sizeof buffer_))
      return std::streambuf::xsputn(data, size);
    if (!drain() || !write_all(data, static_cast<std::size_t>(size))) return 0;
    return size;
  }

  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const std::size_t size = static_cast<std::size_t>(pptr() - pbase());
    setp(buffer_, buffer_ + sizeof buffer_);
    return write_all(buffer_, size);
  }

  bool write_all(const char* data, std::size_t size) {
    if (error_ != 0) return false;
    while (size > 0) {
      const ssize_t written = ::write(STDOUT_FILENO, data, size);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        error_ = written < 0 ? errno : EIO;
        return false;
      }
      data += written;
      size -= static_cast<std::size_t>(written);
    }
    return true;
  }

  char buffer_[64 * 1024];
  int error_ = 0;
};

// Flushes standard output and, when some of it could not be written, says so: a report cut
// short on a full disk must not pass for a whole one. The status becomes 1 unless it already
// says something went wrong.
int finish_output(int status, StdoutBuffer& buffer) {
  std::cout.flush();
  if (buffer.error() == 0 && std::cout.good()) return status;
  std::cerr << "gpumemtrace: cannot write the output: "
            << std::strerror(buffer.error() != 0 ? buffer.error() : EIO) << "\n";
  return status != 0 ? status : kOutputError;
}

void list_commands(const CLI::App& app, std::ostream& out) {
  out << "commands:\n";
  for (const CLI::App* command : app.get_subcommands({})) {
    out << "  " << command->get_name();
    for (std::size_t n = command->get_name().size(); n < 10; ++n) out << ' ';
    out << command->get_description() << "\n";
  }
  out << "Run 'gpumemtrace COMMAND --help' for a command's options.\n";
}

int run_cli(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "run") {
    return gmt::analyzer::run_command(argc - 2, argv + 2);
  }
  CLI::App app{"gpumemtrace: where did my GPU memory go?"};
  app.name("gpumemtrace");
  app.set_version_flag("--version", "gpumemtrace " GMT_VERSION);
  const std::vector<gmt::analyzer::Command> commands = gmt::analyzer::add_commands(app);
  if (argc < 2) {
    std::cerr << "gpumemtrace: a command is required\n";
    list_commands(app, std::cerr);
    return kUsageError;
  }
  if (const std::string_view first = argv[1]; !first.empty() && first[0] != '-') {
    bool known = false;
    for (const gmt::analyzer::Command& command : commands) {
      known = known || command.subcommand->get_name() == first;
    }
    if (!known) {
      std::cerr << "gpumemtrace: unknown command '" << first << "'\n";
      list_commands(app, std::cerr);
      return kUsageError;
    }
  }
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    std::cerr << "gpumemtrace: "
              << gmt::analyzer::usage_error_text(e, parsed.empty() ? app : *parsed.back()) << "\n";
    std::string command = "gpumemtrace";
    for (const CLI::App* sub : parsed) command += " " + sub->get_name();
    std::cerr << "Run '" << command << " --help' for the usage.\n";
    return kUsageError;
  }
  try {
    for (const gmt::analyzer::Command& command : commands) {
      if (command.subcommand->parsed()) return command.run();
    }
  } catch (const std::exception& e) {
    std::cerr << "gpumemtrace: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  static StdoutBuffer buffer;
  std::streambuf* const standard = std::cout.rdbuf(&buffer);
  const int status = finish_output(run_cli(argc, argv), buffer);
  std::cout.rdbuf(standard);
  return status;
}
