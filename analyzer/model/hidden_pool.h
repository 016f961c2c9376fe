// SPDX-License-Identifier: Apache-2.0
// A framework's memory pool that the trace sees only from outside: XLA's allocator (JAX's
// default) takes most of the device at its first operation, or grows regions as needed, and
// hands out JAX's arrays inside them without a call the profiler can see. The trace then holds
// one huge allocation at the first operation's line (`batched_device_put`) and nothing of what
// is in it. The setting that makes each array its own allocation is XLA's platform allocator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// The pool of `device` at its peak (HiddenPool, trace_summary.h), if a framework held its memory
// there in a pool whose contents the trace cannot show: JAX's allocations (OwnerLibraryCache) with
// XLA's allocator other than `platform` or `cuda_async` (XLA_PYTHON_CLIENT_ALLOCATOR in the trace's
// env). A summary's device keeps the one worked out from its trace
// (DeviceSummary::kept_hidden_pool).
std::optional<HiddenPool> hidden_pool(const TraceSummary& trace, const DeviceSummary& device);

}  // namespace gmt::analyzer
