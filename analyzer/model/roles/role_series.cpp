// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/roles/role_series.h"

#include <algorithm>
#include <limits>

namespace gmt::analyzer {

void RoleSeries::begin(uint64_t address, int device, uint64_t bytes, uint64_t ordinal) {
  live_[address] = {device, bytes, ordinal};
}

void RoleSeries::end(uint64_t address, RoleTracker::RoleClass role_class, uint64_t ordinal) {
  const auto it = live_.find(address);
  if (it == live_.end()) return;
  devices_[it->second.device].ended.push_back(
      {role_class, it->second.bytes, it->second.began, ordinal});
  live_.erase(it);
}

void RoleSeries::add(Device& d, RoleTracker::RoleClass role_class, uint64_t bytes, uint64_t began,
                     uint64_t ended, const std::vector<uint64_t>& moments) {
  // The buckets whose moment m has began <= m < ended: moments ascend, so they are a run.
  const auto first = std::lower_bound(moments.begin(), moments.end(), began) - moments.begin();
  const auto past = std::lower_bound(moments.begin(), moments.end(), ended) - moments.begin();
  if (first >= past) return;  // made and released between two moments: in no bucket
  std::vector<int64_t>& steps = d.steps[role_class];
  if (steps.size() < moments.size() + 1) steps.resize(moments.size() + 1, 0);
  steps[first] += static_cast<int64_t>(bytes);
  steps[past] -= static_cast<int64_t>(bytes);
}

void RoleSeries::place(int device, const std::vector<uint64_t>& moments) {
  const auto it = devices_.find(device);
  if (it == devices_.end()) return;
  Device& d = it->second;
  for (const Ended& e : d.ended) add(d, e.role_class, e.bytes, e.began, e.ended, moments);
  d.ended.clear();
}

std::array<std::vector<uint64_t>, kRoleCount> RoleSeries::finish(
    int device, const std::vector<uint64_t>& moments, const RoleTracker& roles) {
  Device& d = devices_[device];
  for (const Ended& e : d.ended) add(d, e.role_class, e.bytes, e.began, e.ended, moments);
  d.ended.clear();
  roles.for_each_live([&](uint64_t address, RoleTracker::RoleClass role_class) {
    const auto it = live_.find(address);
    if (it == live_.end() || it->second.device != device) return;
    add(d, role_class, it->second.bytes, it->second.began, std::numeric_limits<uint64_t>::max(),
        moments);
  });
  std::array<std::vector<uint64_t>, kRoleCount> out;
  for (auto& series : out) series.assign(moments.size(), 0);
  for (const auto& [role_class, steps] : d.steps) {
    std::vector<uint64_t>& series = out[static_cast<std::size_t>(roles.role_of_class(role_class))];
    int64_t live = 0;
    for (std::size_t b = 0; b < moments.size(); ++b) {
      live += b < steps.size() ? steps[b] : 0;
      series[b] += static_cast<uint64_t>(live);
    }
  }
  return out;
}

}  // namespace gmt::analyzer
