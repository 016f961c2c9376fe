// SPDX-License-Identifier: Apache-2.0
// A batch scale fitted from two runs of the same program at two batches (whatif --batch-from):
// each request of the first is matched to the same request of the second (the same module and
// role, in order; where one run made a request the other did not, such as a workspace another
// algorithm needed at the other batch, the order is picked up again at the nearest pair whose
// sizes can be the same request's: the second's between the first's and the first's times the
// batches' ratio), and its size taken to be affine in the batch through the two sizes: a request
// that does not grow with the batch (a workspace of fixed size, a constant mask) stays, one that
// grows less than in proportion grows as it did. What is not matched scales by its role, as
// --batch-scale has it. The second run's batch over the first's is told by their inputs (role
// `input`: made outside the model, live while its forward ran).
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/model/allocator/block_roles.h"
#include "analyzer/model/allocator/replay_events.h"

namespace gmt::analyzer::allocator {

struct BatchFit {
  // By request ordinal of the first run: the bytes a request adds per 1.0 of batch scale (its
  // size at scale K is its size plus slope x (K - 1)); NaN where not matched.
  std::vector<float> slopes;
  double ratio = 0;  // the second run's batch over the first's
  uint64_t requests = 0;
  uint64_t matched = 0;
};

// `first` and `second` with their roles (read_block_roles(..., modules = true)). Throws
// WhatIfError when the two runs cannot be fitted: no input matched, or the inputs are of the
// same size (not another batch).
BatchFit fit_batch(const ReplayEvents& first, const BlockRoles& first_roles,
                   const ReplayEvents& second, const BlockRoles& second_roles);

}  // namespace gmt::analyzer::allocator
