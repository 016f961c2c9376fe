# SPDX-License-Identifier: Apache-2.0
# How long the project takes to build, on the two cores CI has, without changing what users run:
# measured per object file, three quarters of a build went to the tests' own code and the
# command-line files, each of which compiled CLI11 (header-only) anew. Included last by the
# top-level CMakeLists.txt, once every target exists.

# The command-line files, a few to a translation unit: CLI11's inline code is compiled once a
# batch instead of once a command. Nothing in them is hot.
if(TARGET gmt_cli)
  set_target_properties(gmt_cli PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 7)
endif()
# Not the reports' files: batched, or with nlohmann/json precompiled, GCC 12 gives false
# -Wrestrict and -Warray-bounds warnings inside std::string there.

# The tests' own code (not the product, nor the programs they trace, which keep the build's
# flags): unoptimized, line tables only, and gtest and nlohmann/json parsed once a target.
set(gmt_test_targets recorder_tests pipeline_tests unit_tests end_to_end_tests interception_tests
                     fakecuda_selftest symbolize_tests)
foreach(target IN LISTS gmt_test_targets)
  if(NOT TARGET ${target})
    continue()
  endif()
  target_compile_options(${target} PRIVATE -O0 -g1)
  target_precompile_headers(${target} PRIVATE <gtest/gtest.h> <map> <string> <vector>)
  get_target_property(libraries ${target} LINK_LIBRARIES)
  if(libraries MATCHES "nlohmann_json|gmt_analyzer|gmt_model")
    target_precompile_headers(${target} PRIVATE <nlohmann/json.hpp>)
  endif()
endforeach()
