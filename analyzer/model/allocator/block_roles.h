// SPDX-License-Identifier: Apache-2.0
// The role of each PyTorch block request of a trace, in request order, for the what-if replays
// that change requests by role (a batch scale: activations, temporaries and inputs; a shard:
// optimizer state, gradients, parameters; a dtype). A block's role is known only once the whole
// trace is read (RoleTracker), so this is a pass of its own before the replays: each request
// (a kAlloc, or a kOom that the recording failed) is numbered as TraceReplay numbers them, and
// gets the role its block's whole life gives it; a failed request, the role a block made at that
// moment would have (made in a forward that is running: an activation where autograd records).
// One byte per request.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analyzer/model/roles/role.h"
#include "format/trace_reader.h"

namespace gmt::analyzer::allocator {

struct BlockRoles {
  std::vector<uint8_t> roles;  // by request ordinal: a Role
  bool recorded = false;       // the trace carried roles (scopes or tags); else all unknown
  // With modules asked for (read_block_roles' `modules`), by request ordinal: the module whose
  // forward made it (an id of module_names; 0: none) and the root forward it was made in (0:
  // none), as RoleTracker::last_made() tells them.
  std::vector<uint32_t> modules;
  std::vector<uint32_t> forwards;
  std::vector<std::string> module_names;  // by id; 0 is ""

  Role of(uint64_t request) const {
    return request < roles.size() ? static_cast<Role>(roles[request]) : Role::kUnknown;
  }
  // Whether any request has the role.
  bool any(Role role) const;
};

// Throws TraceError when the trace is not readable at all.
BlockRoles read_block_roles(std::span<const uint8_t> bytes, const std::string& name,
                            format::PageAccess pages = {}, bool modules = false);

}  // namespace gmt::analyzer::allocator
