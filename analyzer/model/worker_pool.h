// SPDX-License-Identifier: Apache-2.0
// A small pool of threads for work split into independent items (one trace each): each worker
// takes the next item until none is left. Results go where the caller's function puts them
// (by index), so their order never depends on the number of workers.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace gmt::analyzer {

// The number of workers to use: `requested` if not 0, else $GPUMEMTRACE_JOBS if it is a positive
// number, else usable_cpus() (record_pipeline.h:
// the CPUs of the process's affinity mask). Throws std::invalid_argument for a $GPUMEMTRACE_JOBS
// that is set but not a positive number.
unsigned worker_count(unsigned requested = 0);

// Calls `work(i)` for every i in [0, count), on min(workers, count) threads (on the caller's
// thread when that is 1). Returns when every call has returned. If calls throw, the other items
// still run and the exception of the lowest index is rethrown.
void for_each_index(std::size_t count, unsigned workers,
                    const std::function<void(std::size_t)>& work);

}  // namespace gmt::analyzer
