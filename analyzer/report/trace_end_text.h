// SPDX-License-Identifier: Apache-2.0
// How a trace that ends before its process exited normally says what ended it: the signal the
// preload recorded (format 4.10) and the phases, and the pytest plugin's tests, open at its end;
// in text (`info`, `report`) and JSON (`info --json`, `report --json`, the summary).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// "SIGSEGV", or "signal 42" for one without a name here.
std::string signal_name(uint32_t number);

// "SIGSEGV (segmentation fault at address 0x10)", "SIGTERM (terminated, sent by pid 1234)",
// "SIGABRT (aborted, raised by the process itself)".
std::string signal_text(const FatalSignal& signal, uint64_t own_pid);

// Whether the trace's signal says why its process ended: one was recorded and no End record
// came after it.
bool died_of_signal(const TraceSummary& t);

// The phases open at the trace's end, innermost last: "test tests/test_x.py::test_y" for the
// pytest plugin's (its phase "pytest NODEID #N"), "phase 'NAME'" for the others, joined by ", ";
// "" when none.
std::string open_at_end_text(const TraceSummary& t);

// {"number", "name", "code", "address", "sender", "time_ns", "thread"}, or null for none.
nlohmann::ordered_json signal_json(const std::optional<FatalSignal>& signal);
// [{"name", "thread", "start_ns", "test"}]: `test` the pytest node id of a plugin's test, else
// null.
nlohmann::ordered_json open_at_end_json(const std::vector<OpenAtEnd>& open);

}  // namespace gmt::analyzer
