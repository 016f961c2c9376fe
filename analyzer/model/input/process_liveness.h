// SPDX-License-Identifier: Apache-2.0
// Whether the process that wrote a trace is still running: a trace without its End record is
// one being written while that process lives, and a cut one once it has died. The process is
// told by its pid and its start, as the trace records them (ProcessInfoRecord: the host, the pid,
// the clocks when tracing began), never by its pid alone: a pid reused by a later process belongs
// to a process that began after the traced one ended, so after the trace began.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gmt::analyzer {

struct ProcessIdentity {
  std::string host;
  uint64_t pid = 0;
  uint64_t mono_start_ns = 0;  // CLOCK_MONOTONIC when tracing began; 0 when not known
  uint64_t wall_start_ns = 0;  // Unix time when tracing began; 0 when not known
};

// When process `pid` of this host began, as /proc/PID/stat says (clock ticks since boot, in
// nanoseconds of CLOCK_BOOTTIME); none when there is no such process or it has ended (a zombie
// has).
std::optional<uint64_t> process_start_boottime_ns(uint64_t pid);

// Whether the process `who` names runs now on this host: one with its pid that began no later
// than its trace did (by both clocks the trace records, with a clock tick's and a second's
// leeway). False for a process of another host, whose state this host cannot see.
bool still_running(const ProcessIdentity& who);

// This host's name, as the traces record it.
std::string host_name();

}  // namespace gmt::analyzer
