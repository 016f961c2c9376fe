// SPDX-License-Identifier: Apache-2.0
// Device-resident bytes over time, split by owning library: what the HTML report stacks. Read in
// one more pass over the trace's records through the same replay as the model, so that each
// bucket's total is the model's timeline (the most that was live during the bucket, so the peak
// is never smoothed away) and its split is the one at the moment that total was reached: the
// layers of a bucket add up to its total exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/model/roles/role.h"
#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

struct LibraryTimeline {
  uint64_t resolution_ns = 0;
  struct Device {
    std::vector<uint64_t> resident;  // per bucket, the most device-resident bytes live during it
    // The libraries that held the most at any moment, largest first, then "other" for the rest
    // when there is a rest; `bytes[i][b]` is what library i held when resident[b] was reached.
    std::vector<std::string> libraries;
    std::vector<std::vector<uint64_t>> bytes;
    // Where the trace recorded roles (RoleTracker): the same buckets split by role at the same
    // moments, the roles that held bytes in some bucket, in Role order; they add up to
    // `resident` in every bucket. A caching allocator's blocks by their roles, its cache (its
    // segments less its blocks), and the rest (resident less the segments) as library or
    // unknown by owner (outside_roles.h).
    std::vector<std::pair<Role, std::vector<uint64_t>>> roles;
  };
  std::map<int, Device> devices;
};

// The name of the layer that gathers the libraries past the top ones.
inline constexpr const char* kOtherLibraries = "other";

// Reads `trace.path` again with buckets of `resolution_ns` (not 0), keeping `top_libraries`
// layers per device before "other". Owners are named as the model names them
// (owner_library.h). Memory grows with the buckets, the sites and the libraries, never with the
// number of records. Throws TraceError when the file cannot be read.
LibraryTimeline read_library_timeline(const TraceSummary& trace, uint64_t resolution_ns,
                                      std::size_t top_libraries);

}  // namespace gmt::analyzer
