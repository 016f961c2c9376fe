// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/trace_end_text.h"

#include <signal.h>

#include <cstdio>

#include "analyzer/report/frames/frame_text.h"

namespace gmt::analyzer {
namespace {

struct SignalNames {
  int number;
  const char* name;
  const char* what;
};

// The signals whose default action ends a process (those the preload records), by number.
constexpr SignalNames kSignals[] = {
    {SIGHUP, "SIGHUP", "hangup"},
    {SIGINT, "SIGINT", "interrupted"},
    {SIGQUIT, "SIGQUIT", "quit"},
    {SIGILL, "SIGILL", "illegal instruction"},
    {SIGTRAP, "SIGTRAP", "trace trap"},
    {SIGABRT, "SIGABRT", "aborted"},
    {SIGBUS, "SIGBUS", "bus error"},
    {SIGFPE, "SIGFPE", "arithmetic error"},
    {SIGKILL, "SIGKILL", "killed"},
    {SIGUSR1, "SIGUSR1", "user signal 1"},
    {SIGSEGV, "SIGSEGV", "segmentation fault"},
    {SIGUSR2, "SIGUSR2", "user signal 2"},
    {SIGPIPE, "SIGPIPE", "broken pipe"},
    {SIGALRM, "SIGALRM", "alarm clock"},
    {SIGTERM, "SIGTERM", "terminated"},
    {SIGXCPU, "SIGXCPU", "CPU time limit exceeded"},
    {SIGXFSZ, "SIGXFSZ", "file size limit exceeded"},
    {SIGSYS, "SIGSYS", "bad system call"},
};

const SignalNames* names_of(uint32_t number) {
  for (const SignalNames& s : kSignals) {
    if (static_cast<uint32_t>(s.number) == number) return &s;
  }
  return nullptr;
}

// Whether the signal is a fault of the thread's own instruction, whose address says where.
bool fault(const FatalSignal& s) {
  return s.code > 0 &&
         (s.number == SIGSEGV || s.number == SIGBUS || s.number == SIGILL || s.number == SIGFPE);
}

// The pytest plugin's test of a phase ("pytest NODEID #N"), or "".
std::string test_of(const std::string& phase) {
  constexpr std::string_view kPrefix = "pytest ";
  if (!phase.starts_with(kPrefix)) return "";
  std::string test = phase.substr(kPrefix.size());
  const std::size_t serial = test.rfind(" #");
  if (serial != std::string::npos) test.resize(serial);
  return test;
}

}  // namespace

std::string signal_name(uint32_t number) {
  const SignalNames* s = names_of(number);
  return s != nullptr ? s->name : "signal " + std::to_string(number);
}

std::string signal_text(const FatalSignal& signal, uint64_t own_pid) {
  const SignalNames* s = names_of(signal.number);
  std::string text = signal_name(signal.number) + " (" + (s != nullptr ? s->what : "a signal");
  if (fault(signal)) {
    char address[32];
    std::snprintf(address, sizeof address, "0x%llx",
                  static_cast<unsigned long long>(signal.address));
    text += std::string(" at address ") + address;
  } else if (signal.sender != 0 && signal.sender == own_pid) {
    text += ", raised by the process itself";
  } else if (signal.sender != 0) {
    text += ", sent by pid " + std::to_string(signal.sender);
  }
  return text + ")";
}

bool died_of_signal(const TraceSummary& t) {
  return t.signal && t.end != TraceEnd::kExited && t.end != TraceEnd::kExec &&
         t.end != TraceEnd::kRunning;
}

std::string open_at_end_text(const TraceSummary& t) {
  std::string text;
  for (const OpenAtEnd& open : t.open_at_end) {
    if (!text.empty()) text += ", ";
    const std::string test = test_of(open.name);
    text += test.empty() ? "phase '" + printable(open.name) + "'" : "test " + printable(test);
  }
  return text;
}

nlohmann::ordered_json signal_json(const std::optional<FatalSignal>& signal) {
  if (!signal) return nullptr;
  return {{"number", signal->number}, {"name", signal_name(signal->number)},
          {"code", signal->code},     {"address", signal->address},
          {"sender", signal->sender}, {"time_ns", signal->time_ns},
          {"thread", signal->thread}};
}

nlohmann::ordered_json open_at_end_json(const std::vector<OpenAtEnd>& open) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const OpenAtEnd& phase : open) {
    const std::string test = test_of(phase.name);
    out.push_back(
        {{"name", phase.name},
         {"thread", phase.thread},
         {"start_ns", phase.start_ns},
         {"test", test.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(test)}});
  }
  return out;
}

}  // namespace gmt::analyzer
