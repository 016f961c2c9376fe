// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace dump TRACE`: every record as one JSON object per line, for scripts and for
// checking the trace against another tool's view, record by record.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

namespace gmt::analyzer {

// Returns the exit status: 0, or 1 when the file is not a readable trace. A trace cut short is
// dumped up to where it ends, and a last line says where and why.
// The name of a record type as `dump` writes it: "alloc", "free", ... by the index of its
// alternative in format::Record.
const char* record_type_name(std::size_t index);

int dump_trace(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace gmt::analyzer
