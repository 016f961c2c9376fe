// SPDX-License-Identifier: Apache-2.0
// `whatif`'s answer for people (text) and scripts (JSON, keys in docs/commands.md): per device,
// the recorded and predicted highest allocated and reserved bytes side by side, the bytes by
// role at the highest allocated, and whether the run would fit; the largest batch that fits;
// and the fidelity, whether the unchanged replay reproduced the recording and,
// where it did not, what first differed. No prediction is called exact unless it did.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "analyzer/model/allocator/whatif_prediction.h"

namespace gmt::analyzer {

struct WhatIfRequest {
  std::string path;
  allocator::WhatIfOptions options;
};
// The changes asked for, in words ("batch x2", "shard 8:zero2"); empty: none.
std::string changes_text(const allocator::WhatIfOptions& options);

nlohmann::ordered_json whatif_json(const WhatIfRequest& request,
                                   const allocator::WhatIfResult& result);
void write_whatif_text(const WhatIfRequest& request, const allocator::WhatIfResult& result,
                       std::ostream& out);

// One line: what first differed between the unchanged replay and the recording.
std::string divergence_text(const allocator::Divergence& d);
// The gap's name in JSON ("cross_stream_use").
const char* gap_name(allocator::Gap gap);

}  // namespace gmt::analyzer
