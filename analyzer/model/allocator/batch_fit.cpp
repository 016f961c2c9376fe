// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/batch_fit.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "analyzer/model/allocator/whatif_prediction.h"

namespace gmt::analyzer::allocator {
namespace {

// A request's place in its run: its module (by name: ids are per trace), its role, and how many
// requests of the same module and role came before it.
using Place = std::tuple<std::string, uint8_t, uint64_t>;

std::vector<Place> places(const BlockRoles& roles, std::size_t requests) {
  std::vector<Place> out(requests);
  std::map<std::pair<std::string, uint8_t>, uint64_t> seen;
  for (std::size_t i = 0; i < requests; ++i) {
    const uint32_t module = i < roles.modules.size() ? roles.modules[i] : 0;
    std::string name = module < roles.module_names.size() ? roles.module_names[module] : "";
    const uint8_t role = static_cast<uint8_t>(roles.of(i));
    const uint64_t n = seen[{name, role}]++;
    out[i] = {std::move(name), role, n};
  }
  return out;
}

}  // namespace

BatchFit fit_batch(const ReplayEvents& first, const BlockRoles& first_roles,
                   const ReplayEvents& second, const BlockRoles& second_roles) {
  const std::vector<uint64_t> a = first.request_sizes();
  const std::vector<uint64_t> b = second.request_sizes();
  std::map<Place, uint64_t> second_sizes;
  {
    std::vector<Place> p = places(second_roles, b.size());
    for (std::size_t i = 0; i < b.size(); ++i) second_sizes.emplace(std::move(p[i]), b[i]);
  }
  BatchFit fit;
  fit.requests = a.size();
  // Each request's size in the second run, where matched (0: not).
  std::vector<uint64_t> matched(a.size(), 0);
  double inputs_a = 0;
  double inputs_b = 0;
  const std::vector<Place> p = places(first_roles, a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto it = second_sizes.find(p[i]);
    if (it == second_sizes.end() || a[i] == 0) continue;
    matched[i] = it->second;
    ++fit.matched;
    if (first_roles.of(i) == Role::kInput) {
      inputs_a += static_cast<double>(a[i]);
      inputs_b += static_cast<double>(it->second);
    }
  }
  if (inputs_a == 0)
    throw WhatIfError(
        "--batch-from: no input of the first run (a block made outside the model, live while "
        "its forward ran) has its match in the second: their batches' ratio is not known");
  fit.ratio = inputs_b / inputs_a;
  if (std::abs(fit.ratio - 1.0) < 1e-6) {
    throw WhatIfError(
        "--batch-from: the two runs' inputs are of the same size: not the same program at "
        "another batch");
  }
  fit.slopes.assign(a.size(), std::numeric_limits<float>::quiet_NaN());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (matched[i] == 0) continue;
    fit.slopes[i] = static_cast<float>(
        (static_cast<double>(matched[i]) - static_cast<double>(a[i])) / (fit.ratio - 1.0));
  }
  return fit;
}

}  // namespace gmt::analyzer::allocator
