// SPDX-License-Identifier: Apache-2.0
// A device's bytes by role and by module, as text and JSON: what `peak`, `report` and the other
// presentations lead with.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// Modules listed per device and moment in JSON (`report --json`, `jsonl`).
inline constexpr std::size_t kReportModules = 50;

// The role table (every role with bytes, largest first, with how it is known), then the
// `modules` largest modules with their bytes by role. `recorded`: whether the trace carried
// the framework's scopes and tags (if not, one line says why every block is unknown).
// `when` follows the titles ("" or " at the peak").
void write_roles_text(const RoleBreakdown& roles, bool recorded, std::size_t modules,
                      const std::string& when, const std::string& indent, std::ostream& out);

// {"by_role": [{role, bytes, count, tagged_bytes, inferred_bytes, how}], "by_module":
// [{module, bytes, by_role: {role: bytes}}]}: every role, zero or not, in a fixed order; the
// first `modules` modules.
nlohmann::ordered_json roles_json(const RoleBreakdown& roles, std::size_t modules);
// Its two parts: the roles' rows, and the first `modules` modules' rows.
nlohmann::ordered_json role_rows_json(const RoleBreakdown& roles);
nlohmann::ordered_json module_rows_json(const RoleBreakdown& roles, std::size_t modules);

// The role of a leak group of a caching allocator's blocks, by the roles of its stack's blocks at
// exit: the role that holds the most of them ("activation"), "mostly activation" when others
// hold some too; "allocator_cache" for its free cache; none for a driver allocation's group or
// a trace without roles.
std::optional<std::string> leak_role(const TraceSummary& trace, const LeakGroup& group);
// Its bytes by role at exit (all 0 where leak_role() has none).
std::array<uint64_t, kRoleCount> leak_roles(const TraceSummary& trace, const LeakGroup& group);

// The role that holds bytes of a split ("activation"), "mostly activation" when others hold some
// too; none when none does.
std::optional<std::string> role_label(const std::array<uint64_t, kRoleCount>& bytes);
// {role: bytes} of the roles that hold bytes.
nlohmann::ordered_json role_bytes_json(const std::array<uint64_t, kRoleCount>& bytes);

}  // namespace gmt::analyzer
