// SPDX-License-Identifier: Apache-2.0
// The driver allocations outside a caching allocator, in a role table: `library` where their
// stacks lie in a library (cuBLAS's workspaces, NCCL's buffers...), else `unknown` (the
// program's own cudaMalloc, or no stack recorded). Needs the symbolized owners, so it runs once
// the replay is done.
#pragma once

#include <string_view>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

void split_outside_roles(TraceSummary& trace);

// The role of a driver allocation outside a caching allocator whose stack's owner is `owner`
// (owner_library.h's name): library, or unknown for the program's own.
Role outside_role(std::string_view owner);

}  // namespace gmt::analyzer
