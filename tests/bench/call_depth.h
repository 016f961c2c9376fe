// SPDX-License-Identifier: Apache-2.0
// Runs an operation at the bottom of a chain of real calls. A native stack captured there has
// `depth` more frames than one captured at the top, and unwinding costs more per frame: the
// benchmark measures the stack mode with the stack deep enough to matter.
#pragma once

namespace gmt::bench {

using Operation = void (*)(void* arg);

// Calls `op(arg)` from `depth` nested calls below the caller (directly when depth <= 0).
void call_at_depth(int depth, Operation op, void* arg);

}  // namespace gmt::bench
