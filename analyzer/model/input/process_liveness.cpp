// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/input/process_liveness.h"

#include <time.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gmt::analyzer {

namespace {

uint64_t clock_now_ns(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t tick_ns() {
  const long hz = ::sysconf(_SC_CLK_TCK);
  return hz > 0 ? 1'000'000'000ull / static_cast<uint64_t>(hz) : 10'000'000ull;
}

}  // namespace

std::optional<uint64_t> process_start_boottime_ns(uint64_t pid) {
  if (pid == 0 || pid > INT32_MAX) return std::nullopt;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(stat)), {});
  // "PID (COMM) STATE PPID ...": the command may hold spaces and parentheses, so the fields are
  // counted from the last ')'. The start time is the 22nd field, the 20th after it.
  const std::size_t paren = text.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(paren + 1));
  std::string state;
  fields >> state;
  if (state.empty() || state == "Z" || state == "X" || state == "x") return std::nullopt;
  std::string field;
  for (int i = 4; i < 22 && fields >> field; ++i) {
  }
  uint64_t ticks = 0;
  if (!(fields >> ticks)) return std::nullopt;
  return ticks * tick_ns();
}

bool still_running(const ProcessIdentity& who) {
  if (who.host.empty() || who.host != host_name()) return false;
  const std::optional<uint64_t> started = process_start_boottime_ns(who.pid);
  if (!started) return false;
  const uint64_t boot_now = clock_now_ns(CLOCK_BOOTTIME);
  // CLOCK_BOOTTIME counts the time suspended, CLOCK_MONOTONIC does not: the trace's monotonic
  // start on the boot clock.
  const uint64_t mono_now = clock_now_ns(CLOCK_MONOTONIC);
  const uint64_t suspended = boot_now > mono_now ? boot_now - mono_now : 0;
  const uint64_t leeway = tick_ns();
  if (who.mono_start_ns != 0 && *started > who.mono_start_ns + suspended + leeway) return false;
  // The wall clock tells a process of a later boot (whose monotonic clock began again) from the
  // traced one: it began after the trace ended.
  if (who.wall_start_ns != 0 && boot_now >= *started) {
    const uint64_t started_unix = clock_now_ns(CLOCK_REALTIME) - (boot_now - *started);
    if (started_unix > who.wall_start_ns + 1'000'000'000ull) return false;
  }
  return who.mono_start_ns != 0 || who.wall_start_ns != 0;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace gmt::analyzer
