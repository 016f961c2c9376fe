// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/roles_report.h"

#include <algorithm>
#include <iomanip>
#include <optional>
#include <vector>

#include "analyzer/report/byte_size.h"

namespace gmt::analyzer {

namespace {

// "how" of a role with bytes: tagged, inferred from its life, inferred from the work running
// then, or several of these in part.
std::string how_known(Role role, const RoleFigure& f) {
  const char* running = running_basis(role);
  if (f.running_bytes == f.bytes && running != nullptr) return running;
  const uint64_t settled = f.bytes - f.running_bytes;
  std::string how;
  if (f.tagged_bytes == 0) {
    how = role_basis(role, false);
  } else if (f.tagged_bytes == settled) {
    how = role_basis(role, true);
  } else {
    how = std::string(role_basis(role, true)) + " (" + human_bytes(f.tagged_bytes) + "), else " +
          role_basis(role, false);
  }
  if (f.running_bytes == 0 || running == nullptr) return how;
  return how + "; " + human_bytes(f.running_bytes) + " " + running;
}

}  // namespace

void write_roles_text(const RoleBreakdown& roles, bool recorded, std::size_t modules,
                      const std::string& when, const std::string& indent, std::ostream& out) {
  std::vector<Role> shown;
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    if (roles.roles[i].bytes > 0) shown.push_back(static_cast<Role>(i));
  }
  std::stable_sort(shown.begin(), shown.end(),
                   [&](Role a, Role b) { return roles[a].bytes > roles[b].bytes; });
  out << indent << "by role" << when << "\n";
  for (Role role : shown) {
    const RoleFigure& f = roles[role];
    out << indent << "  " << std::setw(10) << human_bytes(f.bytes) << "  " << std::left
        << std::setw(16) << role_name(role) << std::right << " " << how_known(role, f) << "\n";
  }
  if (!recorded) {
    out << indent
        << "  (no roles recorded: the trace has no scopes or tags from the framework's hooks; "
           "they need PyTorch with its block events on, in a Python process)\n";
  }
  if (roles.modules.empty() || modules == 0) return;
  out << indent << "by module" << when << " (bytes made in its forward or held by its tensors)\n";
  for (std::size_t m = 0; m < roles.modules.size() && m < modules; ++m) {
    const ModuleRoles& row = roles.modules[m];
    out << indent << "  " << std::setw(10) << human_bytes(row.total) << "  " << row.module;
    std::string parts;
    for (std::size_t i = 0; i < kRoleCount; ++i) {
      if (row.bytes[i] == 0) continue;
      parts += (parts.empty() ? "" : ", ") + std::string(role_name(static_cast<Role>(i))) + " " +
               human_bytes(row.bytes[i]);
    }
    out << "  (" << parts << ")\n";
  }
  if (roles.modules.size() > modules) {
    out << indent << "  ... " << roles.modules.size() - modules << " more modules\n";
  }
}

nlohmann::ordered_json role_rows_json(const RoleBreakdown& roles) {
  nlohmann::ordered_json by_role = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    const Role role = static_cast<Role>(i);
    const RoleFigure& f = roles[role];
    by_role.push_back({{"role", role_name(role)},
                       {"bytes", f.bytes},
                       {"count", f.count},
                       {"tagged_bytes", f.tagged_bytes},
                       {"inferred_bytes", f.bytes - f.tagged_bytes},
                       {"running_bytes", f.running_bytes},
                       {"how", f.bytes == 0 ? std::string() : how_known(role, f)}});
  }
  return by_role;
}

nlohmann::ordered_json module_rows_json(const RoleBreakdown& roles, std::size_t modules) {
  nlohmann::ordered_json by_module = nlohmann::ordered_json::array();
  for (std::size_t m = 0; m < roles.modules.size() && m < modules; ++m) {
    const ModuleRoles& row = roles.modules[m];
    by_module.push_back(
        {{"module", row.module}, {"bytes", row.total}, {"by_role", role_bytes_json(row.bytes)}});
  }
  return by_module;
}

nlohmann::ordered_json roles_json(const RoleBreakdown& roles, std::size_t modules) {
  return {{"time_ns", roles.time_ns},
          {"at_program_end", roles.at_program_end},
          {"by_role", role_rows_json(roles)},
          {"by_module", module_rows_json(roles, modules)}};
}

std::array<uint64_t, kRoleCount> leak_roles(const TraceSummary& trace, const LeakGroup& group) {
  std::array<uint64_t, kRoleCount> none{};
  if (group.allocator < 0 || !trace.roles_recorded) return none;
  if (group.stack == 0 && group.leak_class == LeakClass::kCached) {
    none[static_cast<std::size_t>(Role::kAllocatorCache)] = group.bytes;
    return none;
  }
  const auto device = trace.devices.find(group.device);
  if (device == trace.devices.end() || !device->second.roles_at_exit) return none;
  const auto& stacks = device->second.roles_at_exit->block_stacks;
  const auto it = std::lower_bound(
      stacks.begin(), stacks.end(), group.stack,
      [](const RoleBreakdown::StackRoles& s, uint32_t stack) { return s.stack < stack; });
  return it != stacks.end() && it->stack == group.stack ? it->bytes : none;
}

std::optional<std::string> leak_role(const TraceSummary& trace, const LeakGroup& group) {
  return role_label(leak_roles(trace, group));
}

std::optional<std::string> role_label(const std::array<uint64_t, kRoleCount>& bytes) {
  std::size_t most = 0;
  int roles = 0;
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    if (bytes[i] == 0) continue;
    ++roles;
    if (bytes[i] > bytes[most] || bytes[most] == 0) most = i;
  }
  if (roles == 0) return std::nullopt;
  const std::string name = role_name(static_cast<Role>(most));
  return roles == 1 ? name : "mostly " + name;
}

nlohmann::ordered_json role_bytes_json(const std::array<uint64_t, kRoleCount>& bytes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    if (bytes[i] > 0) out[role_name(static_cast<Role>(i))] = bytes[i];
  }
  return out;
}

}  // namespace gmt::analyzer
