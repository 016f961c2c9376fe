# SPDX-License-Identifier: Apache-2.0
# How long the project takes to build, on the two cores CI has, without changing what users run:
# measured per object file, three quarters of a build went to the tests' own code and the
# command-line files, each of which compiled CLI11 (header-only) anew. Included last by the
# top-level CMakeLists.txt, once every target exists.

# The command-line files, all in one translation unit: CLI11's inline code (8 s to parse and
# compile at -O2, 35 s under the sanitizers) is compiled once instead of once a command. Nothing
# in them is hot.
if(TARGET gmt_cli)
  set_target_properties(gmt_cli PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
endif()
# Not the reports' files: batched, or with nlohmann/json precompiled, GCC 12 gives false
# -Wrestrict and -Warray-bounds warnings inside std::string there.

# The tests' own code (not the product, nor the programs they trace, which keep the build's
# flags): unoptimized, line tables only, and gtest and nlohmann/json parsed once a target.
set(gmt_test_targets recorder_tests pipeline_tests unit_tests end_to_end_tests interception_tests
                     gmt_integration_support fakecuda_selftest symbolize_tests)
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

# The tests' own files, a few to a translation unit: at -O0 three quarters of a test file's code
# is the templates it instantiates (nlohmann/json, std::variant, gtest), compiled again in every
# file; a group of six compiles in half the time of its files one by one (a quarter under the
# sanitizers). The groups are explicit, so that a file added to a target is compiled alone until
# it is put in one, and no group holds two files that define the same name in an anonymous
# namespace (kMiB, kKindOps, a helper): such a file must go in another group, or be alone. Paths
# are relative to tests/; "|" ends a group.
function(gmt_unity_groups target)
  if(NOT TARGET ${target})
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  set(group 0)
  foreach(file IN LISTS ARGN)
    if(file STREQUAL "|")
      math(EXPR group "${group} + 1")
    else()
      set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/${file} TARGET_DIRECTORY ${target}
                                  PROPERTIES UNITY_GROUP ${target}_${group})
    endif()
  endforeach()
endfunction()

gmt_unity_groups(recorder_tests
  unit/format/block_record_test.cpp unit/format/chunk_crc_test.cpp
  unit/format/record_codec_test.cpp unit/format/record_fast_path_test.cpp
  unit/format/recording_end_test.cpp unit/format/size_text_test.cpp |
  unit/format/history_window_test.cpp unit/format/trace_file_test.cpp
  unit/format/trace_reader_test.cpp unit/format/varint_test.cpp unit/interpose/config_test.cpp
  unit/interpose/output_path_test.cpp |
  unit/interpose/torch_settings_text_test.cpp unit/interpose/record/bounded_trace_parts_test.cpp
  unit/interpose/record/live_blocks_test.cpp unit/interpose/record/live_folder_test.cpp
  unit/interpose/record/live_vmm_test.cpp unit/interpose/record/live_size_table_test.cpp |
  unit/interpose/record/recorder_concurrency_test.cpp
  unit/interpose/record/trace_writer_safety_test.cpp unit/interpose/record/freed_at_once_test.cpp
  unit/interpose/sampler/device_high_water_test.cpp
  unit/interpose/stacks/python_code_deaths_test.cpp unit/interpose/stacks/stack_table_test.cpp
  unit/interpose/stacks/stack_walker_test.cpp)
gmt_unity_groups(pipeline_tests
  unit/analyzer/model/record_pipeline_test.cpp unit/analyzer/model/worker_pool_test.cpp)
gmt_unity_groups(unit_tests
  unit/analyzer/export/export_encoders_test.cpp unit/analyzer/model/analysis_model_test.cpp
  unit/analyzer/model/block_extents_test.cpp unit/analyzer/model/backward_attribution_test.cpp
  unit/analyzer/model/caching_allocator_model_test.cpp unit/analyzer/model/flat_hash_map_test.cpp |
  unit/analyzer/model/block_replay_test.cpp unit/analyzer/model/fuzz_regressions_test.cpp
  unit/analyzer/model/huge_page_allocator_test.cpp unit/analyzer/model/live_trace_test.cpp
  unit/analyzer/model/owner_library_test.cpp unit/analyzer/model/progress_bar_test.cpp |
  unit/analyzer/model/leak_classes_test.cpp unit/analyzer/model/replay_test.cpp
  unit/analyzer/model/summary_record_count_test.cpp unit/analyzer/model/trace_replay_test.cpp
  unit/analyzer/report/byte_size_test.cpp unit/analyzer/report/frames/frame_policy_test.cpp |
  unit/analyzer/model/role_tracker_test.cpp unit/analyzer/report/frames/frame_text_test.cpp
  unit/analyzer/run/run_arguments_test.cpp unit/analyzer/symbolize/shared_modules_test.cpp)
gmt_unity_groups(end_to_end_tests
  integration/analysis/analysis_commands_test.cpp integration/analysis/bounded_blocks_test.cpp
  integration/analysis/cli_usage_test.cpp integration/analysis/end_to_end_test.cpp
  integration/analysis/export_formats_test.cpp integration/analysis/frame_policy_test.cpp |
  integration/analysis/bounded_trace_test.cpp integration/analysis/hidden_pool_test.cpp
  integration/analysis/framework_blocks_test.cpp integration/analysis/roles_test.cpp
  integration/analysis/job_report_test.cpp integration/analysis/promises_under_stress_test.cpp |
  integration/analysis/html_report_test.cpp integration/analysis/leak_classes_test.cpp
  integration/analysis/remedies_test.cpp integration/analysis/top_test.cpp
  integration/analysis/views_phases_test.cpp)
gmt_unity_groups(gmt_integration_support
  integration/process_runner.cpp integration/traced_run_fixture.cpp)
gmt_unity_groups(interception_tests
  integration/interception/crash_safety_test.cpp integration/interception/stacks_test.cpp
  integration/interception/allocation_kinds_test.cpp integration/interception/driver_paths_test.cpp
  integration/interception/environment_test.cpp
  integration/interception/failed_allocations_test.cpp |
  integration/interception/concurrent_allocations_test.cpp
  integration/interception/fork_traces_test.cpp integration/interception/program_unharmed_test.cpp
  integration/interception/rtld_next_test.cpp integration/interception/runtime_names_test.cpp
  integration/interception/kind_expectations.cpp)
gmt_unity_groups(fakecuda_selftest
  fakecuda/selftest/arrays_test.cpp fakecuda/selftest/contexts_test.cpp
  fakecuda/selftest/device_memory_test.cpp fakecuda/selftest/exported_symbols_test.cpp
  fakecuda/selftest/graphs_test.cpp fakecuda/selftest/ipc_test.cpp |
  fakecuda/selftest/nvml_test.cpp fakecuda/selftest/probes_test.cpp
  fakecuda/selftest/procaddress_test.cpp fakecuda/selftest/runtime_test.cpp
  fakecuda/selftest/stream_ordered_test.cpp fakecuda/selftest/vmm_test.cpp)
gmt_unity_groups(symbolize_tests symbolize/symbolizer_test.cpp symbolize/fixture_run.cpp)
