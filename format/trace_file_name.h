// SPDX-License-Identifier: Apache-2.0
// The names the writer gives trace files, by which readers find them in a directory or among
// a process's open files.
#pragma once

#include <string_view>

namespace gmt::format {

// `*.gmt`, or `*.gmt.<digits>` (a name that was taken gets ".<pid>"); the name alone, no folder.
bool trace_file_name(std::string_view name);

}  // namespace gmt::format
