// SPDX-License-Identifier: Apache-2.0
// What workload_phases (tests/workloads/phases_nvtx.cpp) runs: each of its NVTX ranges and
// gpumemtrace.h phases by name, with how many times it runs. The exports of its trace must show
// exactly these.
#pragma once

#include <map>
#include <string>

namespace gmt::test {

inline const std::map<std::string, int> kPhasesWorkloadRuns = {
    {"init", 1},     {"trainer::step", 3},       {"forward", 3},
    {"backward", 3}, {"trainer::checkpoint", 1}, {"optimizer", 1},
    {"shutdown", 1}};

}  // namespace gmt::test
