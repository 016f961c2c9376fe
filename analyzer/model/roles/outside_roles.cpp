// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/roles/outside_roles.h"

#include <string_view>

#include "analyzer/model/owner_library.h"

namespace gmt::analyzer {

namespace {

// Owners that are the program itself or its glue, not a library that keeps memory of its own:
// an interpreter calling cudaMalloc through ctypes, or a stack that was not recorded.
bool program_owner(std::string_view owner) {
  return owner == "unknown" || owner.starts_with("libffi") || owner.starts_with("libpython") ||
         owner.starts_with("python") ||
         !(owner.starts_with("lib") || owner == "pytorch" || owner == "jax" || owner == "cupy");
}

void split(RoleBreakdown& table, OwnerLibraryCache& owners) {
  for (const RoleBreakdown::Outside& o : table.outside) {
    const Role role = outside_role(owners.of(o.stack));
    table[role].bytes += o.bytes;
    table[role].count += o.count;
  }
  table.outside.clear();
}

}  // namespace

Role outside_role(std::string_view owner) {
  return program_owner(owner) ? Role::kUnknown : Role::kLibrary;
}

void split_outside_roles(TraceSummary& trace) {
  OwnerLibraryCache owners(trace);
  for (auto& [ordinal, d] : trace.devices) {
    if (d.roles_at_peak) split(*d.roles_at_peak, owners);
    if (d.roles_at_exit) split(*d.roles_at_exit, owners);
  }
  for (FailedAllocation& f : trace.failures) {
    if (f.roles) split(*f.roles, owners);
  }
}

}  // namespace gmt::analyzer
