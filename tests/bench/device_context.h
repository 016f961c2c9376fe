// SPDX-License-Identifier: Apache-2.0
// Gives the calling thread a current context, as a CUDA program has before it allocates: the
// benchmark's threads are new threads, and cuMemAlloc fails on a thread without one.
#pragma once

namespace gmt::bench {

// cuInit and the primary context of device 0 once per process; then makes that context current
// on the calling thread. Returns false when the driver refused any of it.
bool make_primary_context_current();

}  // namespace gmt::bench
