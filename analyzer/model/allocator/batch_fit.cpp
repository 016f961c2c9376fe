// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/batch_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "analyzer/model/allocator/whatif_prediction.h"

namespace gmt::analyzer::allocator {
namespace {

// A request's group in its run: its module (by name: ids are per trace) and its role.
using Group = std::pair<std::string, uint8_t>;

// Each group's requests, by ordinal, in order.
std::map<Group, std::vector<std::size_t>> groups(const BlockRoles& roles, std::size_t requests) {
  std::map<Group, std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < requests; ++i) {
    const uint32_t module = i < roles.modules.size() ? roles.modules[i] : 0;
    std::string name = module < roles.module_names.size() ? roles.module_names[module] : "";
    out[{std::move(name), static_cast<uint8_t>(roles.of(i))}].push_back(i);
  }
  return out;
}

// Whether a request of `a` bytes in the first run can be one of `b` bytes in the second, whose
// batch is `ratio` times the first's: a size affine in the batch with no negative part (a fixed
// part and one in proportion) moves from a towards a x ratio, never past it nor the other way.
// The slack covers PyTorch's rounding of small requests.
bool compatible(uint64_t a, uint64_t b, double ratio) {
  if (a == 0 || b == 0) return false;
  constexpr double kSlack = 0.01;
  constexpr double kRoundingBytes = 512;
  const double low = std::min(1.0, ratio) * static_cast<double>(a) * (1 - kSlack) - kRoundingBytes;
  const double high = std::max(1.0, ratio) * static_cast<double>(a) * (1 + kSlack) + kRoundingBytes;
  return static_cast<double>(b) >= low && static_cast<double>(b) <= high;
}

// How far ahead a group's alignment looks for a request that one run made and the other did not
// (a workspace another algorithm needed at another batch, a temporary split in two).
constexpr std::size_t kLookahead = 16;

// Pairs `first` and `second` (one group's requests in each run, in order) in order, each pair
// compatible: where the next two are not, the nearest request ahead in either run that is
// compatible with the other's next is taken to be the next pair, and what is skipped is
// unmatched; with none within kLookahead, both are skipped. Sets matched[i] (by the first run's
// ordinal) to the second run's size.
void align(const std::vector<std::size_t>& first, const std::vector<uint64_t>& a,
           const std::vector<std::size_t>& second, const std::vector<uint64_t>& b, double ratio,
           std::vector<uint64_t>& matched) {
  std::size_t i = 0;
  std::size_t j = 0;
  const auto fits = [&](std::size_t x, std::size_t y) {
    return x < first.size() && y < second.size() && compatible(a[first[x]], b[second[y]], ratio);
  };
  while (i < first.size() && j < second.size()) {
    if (fits(i, j)) {
      matched[first[i++]] = b[second[j++]];
      continue;
    }
    std::size_t skip = 1;
    for (; skip <= kLookahead; ++skip) {
      if (fits(i + skip, j)) {
        i += skip;
        break;
      }
      if (fits(i, j + skip)) {
        j += skip;
        break;
      }
    }
    if (skip > kLookahead) {
      ++i;
      ++j;
    }
  }
}

}  // namespace

BatchFit fit_batch(const ReplayEvents& first, const BlockRoles& first_roles,
                   const ReplayEvents& second, const BlockRoles& second_roles) {
  const std::vector<uint64_t> a = first.request_sizes();
  const std::vector<uint64_t> b = second.request_sizes();
  const std::map<Group, std::vector<std::size_t>> first_groups = groups(first_roles, a.size());
  const std::map<Group, std::vector<std::size_t>> second_groups = groups(second_roles, b.size());
  BatchFit fit;
  fit.requests = a.size();
  // The batches' ratio, from the inputs taken in order (each group's k-th with the other's).
  double inputs_a = 0;
  double inputs_b = 0;
  for (const auto& [group, requests] : first_groups) {
    if (static_cast<Role>(group.second) != Role::kInput) continue;
    const auto other = second_groups.find(group);
    if (other == second_groups.end()) continue;
    for (std::size_t k = 0; k < requests.size() && k < other->second.size(); ++k) {
      if (a[requests[k]] == 0) continue;
      inputs_a += static_cast<double>(a[requests[k]]);
      inputs_b += static_cast<double>(b[other->second[k]]);
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
  // Each request's size in the second run, where matched (0: not).
  std::vector<uint64_t> matched(a.size(), 0);
  for (const auto& [group, requests] : first_groups) {
    const auto other = second_groups.find(group);
    if (other != second_groups.end()) align(requests, a, other->second, b, fit.ratio, matched);
  }
  fit.slopes.assign(a.size(), std::numeric_limits<float>::quiet_NaN());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (matched[i] == 0) continue;
    ++fit.matched;
    fit.slopes[i] = static_cast<float>(
        (static_cast<double>(matched[i]) - static_cast<double>(a[i])) / (fit.ratio - 1.0));
  }
  return fit;
}

}  // namespace gmt::analyzer::allocator
