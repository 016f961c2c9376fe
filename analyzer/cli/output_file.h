// SPDX-License-Identifier: Apache-2.0
// Where a command writes what it made (`-o`): never over one of the files it reads, and every
// failure to write said.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gmt::analyzer {

// The input that `output` is (the same file, by device and inode: through a link or another
// spelling too), or a trace in an input directory that it is; none when it is none of them or
// does not exist yet.
std::optional<std::string> input_at_output(const std::string& output,
                                           const std::vector<std::string>& inputs);

// Refuses, on `err`, an output that is one of the inputs: the command would truncate the trace
// it is about to read. Exit status 2 (a usage error) when it refuses, else 0.
int refuse_output_over_input(const std::string& output, const std::vector<std::string>& inputs,
                             std::ostream& err);

// Writes through `write` to `output` ("-": `out`), saying on `err` why it could not. 0 or 1.
int write_output_file(const std::string& output, std::ostream& out, std::ostream& err,
                      const std::function<void(std::ostream&)>& write);

}  // namespace gmt::analyzer
