# SPDX-License-Identifier: Apache-2.0
# How long the project takes to build, on the two cores CI has, without changing what users run:
# measured per object file, three quarters of a build went to the tests' own code and the
# command-line files, each of which compiled CLI11 (header-only) anew. Included last by the
# top-level CMakeLists.txt, once every target exists.

# The command-line files and main(), all in one translation unit: CLI11's inline code (8 s to
# parse and compile at -O2, 35 s under the sanitizers) is compiled once instead of once a command
# (main.cpp alone took 11 s, 22 s under the sanitizers). Nothing in them is hot.
if(TARGET gmt_cli)
  set_target_properties(gmt_cli PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
endif()
# Not the reports' files: batched, or with nlohmann/json precompiled, GCC 12 gives false
# -Wrestrict and -Warray-bounds warnings inside std::string there.

# The tests' own code (not the product, nor the programs they trace, which keep the build's
# flags): unoptimized, line tables only, and gtest and nlohmann/json parsed once a target.
set(gmt_test_targets recorder_tests pipeline_tests unit_tests end_to_end_tests interception_tests
                     html_page_tests gmt_integration_support fakecuda_selftest symbolize_tests)
# One precompiled header for every test target with nlohmann/json, made once (5 to 7 s each, 15
# to 20 s under the sanitizers), by a target of its own: GCC uses a precompiled header only where
# every macro defined when it was made is defined alike (gtest's alone here; the test targets add
# their own). Not in ThreadSanitizer's build, which builds two test targets.
set(gmt_shared_pch "")
if(TARGET gmt_integration_support AND NOT GMT_TSAN)
  set(gmt_shared_pch gmt_test_pch)
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/gmt_test_pch.cpp
       CONTENT "// The test targets' precompiled header: cmake/build_speed.cmake.\n")
  add_library(gmt_test_pch OBJECT ${CMAKE_BINARY_DIR}/gmt_test_pch.cpp)
  find_package(GTest REQUIRED)  # its targets are tests/'s
  target_link_libraries(gmt_test_pch PRIVATE GTest::gtest nlohmann_json::nlohmann_json)
  list(APPEND gmt_test_targets gmt_test_pch)
endif()
foreach(target IN LISTS gmt_test_targets)
  if(NOT TARGET ${target})
    continue()
  endif()
  target_compile_options(${target} PRIVATE -O0 -g1)
  get_target_property(libraries ${target} LINK_LIBRARIES)
  if(gmt_shared_pch AND NOT target STREQUAL gmt_shared_pch
     AND libraries MATCHES "nlohmann_json|gmt_analyzer|gmt_model")
    target_precompile_headers(${target} REUSE_FROM ${gmt_shared_pch})
    continue()
  endif()
  target_precompile_headers(${target} PRIVATE <gtest/gtest.h> <map> <string> <vector>)
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
# are relative to DIR (tests/ for gmt_unity_groups); "|" ends a group. A file with compile
# definitions or options of its own is never grouped (CMake's rule): a target's are used instead.
function(gmt_unity_groups_in dir target)
  if(NOT TARGET ${target})
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  set(group 0)
  foreach(file IN LISTS ARGN)
    if(file STREQUAL "|")
      math(EXPR group "${group} + 1")
    else()
      set_source_files_properties(${PROJECT_SOURCE_DIR}/${dir}/${file} TARGET_DIRECTORY ${target}
                                  PROPERTIES UNITY_GROUP ${target}_${group})
    endif()
  endforeach()
endfunction()
function(gmt_unity_groups target)
  gmt_unity_groups_in(tests ${target} ${ARGN})
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
  integration/analysis/export_formats_test.cpp integration/analysis/frame_policy_test.cpp
  integration/analysis/whatif_test.cpp |
  integration/analysis/bounded_trace_test.cpp integration/analysis/hidden_pool_test.cpp
  integration/analysis/framework_blocks_test.cpp integration/analysis/roles_test.cpp
  integration/analysis/decode_ahead_test.cpp
  integration/analysis/job_report_test.cpp integration/analysis/promises_under_stress_test.cpp |
  integration/analysis/html_report_test.cpp integration/analysis/leak_classes_test.cpp
  integration/analysis/remedies_test.cpp integration/analysis/top_test.cpp
  integration/analysis/views_phases_test.cpp integration/analysis/html_browser_test.cpp)
gmt_unity_groups(html_page_tests
  integration/analysis/html_allocations_test.cpp integration/analysis/html_flame_groups_test.cpp
  integration/analysis/html_level_of_detail_test.cpp
  integration/analysis/html_run_comparison_test.cpp)
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

# The analyzer's libraries in every build: a group compiles in about half the time of its files
# one by one (the templates they share, nlohmann/json's above all, compiled once), and nothing
# in them runs in the traced process. Groups as the tests' above: a file not listed compiles
# alone, and no group holds two files defining one name in an anonymous namespace
# (replay_events.cpp's kNone and is_pytorch).
gmt_unity_groups_in(analyzer/model gmt_model
  live/live_trace.cpp live/live_device.cpp live/live_watch.cpp replay.cpp
  replay_view_records.cpp replay_block_records.cpp summarize_trace.cpp hidden_pool.cpp
  leak_classes.cpp owner_library.cpp |
  allocator/replay_events.cpp allocator/remedies.cpp allocator/whatif_prediction.cpp
  allocator/caching_allocator_model.cpp allocator/block_roles.cpp allocator/batch_fit.cpp
  allocator/allocator_settings.cpp allocator/segment_match.cpp allocator/request_size.cpp
  allocator/model_gaps.cpp |
  allocator/trace_replay.cpp allocator/gradients_set_to_none.cpp timeline/library_timeline.cpp
  timeline/timeline_builder.cpp roles/role_tracker.cpp roles/role_series.cpp
  roles/outside_roles.cpp roles/role.cpp backward_attribution.cpp views/views_replay.cpp |
  input/record_pipeline.cpp input/progress_bar.cpp input/process_liveness.cpp worker_pool.cpp
  blocks/block_replay.cpp blocks/block_extents.cpp blocks/extents_by_device.cpp)
gmt_unity_groups_in(analyzer/export gmt_export
  perfetto_export.cpp speedscope_export.cpp pprof_export.cpp folded_export.cpp gzip.cpp |
  jsonl_export.cpp memviz_export.cpp export_record_pass.cpp export_stacks.cpp pickle_writer.cpp)
gmt_unity_groups_in(analyzer/html gmt_html
  page_data.cpp html_page.cpp | allocation_pass.cpp run_comparison_data.cpp)

# The reports' and the recorder's libraries only in the builds that look for errors (the
# sanitizers', ThreadSanitizer's, the fuzzer's), where a group compiles in about half the time of
# its files one by one (the reports' 22 files: 77 s against 172 s under the sanitizers). The
# normal build keeps them one file to a translation unit: batched at -O2, GCC 12 gives false
# -Wrestrict and -Warray-bounds warnings in the reports, and the recorder's code, which runs in
# the traced process, stays as users build it. No group holds two files defining one name in an
# anonymous namespace (nvtx_injection.cpp's phases and id_of); whatif_report.cpp, whose json is
# ordered_json, compiles alone.
if(GMT_SANITIZE OR GMT_TSAN OR GMT_BUILD_FUZZERS)
  gmt_unity_groups_in(analyzer/report gmt_report
    json/trace_summary_json.cpp json/json_fields.cpp report_json.cpp hidden_pool_note.cpp |
    top/top_frame.cpp top/top_text.cpp report_input.cpp job_view.cpp views_report.cpp
    trace_end_text.cpp |
    remedies_report.cpp roles_report.cpp inference_report.cpp history_text.cpp report_text.cpp
    frames/frame_text.cpp frames/frame_policy.cpp frames/stack_frames.cpp peak_sites.cpp
    cuda_error_name.cpp terminal_colour.cpp byte_size.cpp)
  gmt_unity_groups_in(interpose gmt_interpose_core
    config.cpp output_path.cpp common/diagnostic.cpp common/instance_id.cpp common/real_dlsym.cpp
    frameworks/torch_settings_text.cpp record/event_recorder.cpp record/recorder_cost.cpp
    record/live_set.cpp record/live_folder.cpp record/live_size_table.cpp
    record/phase_recorder.cpp record/process_info.cpp record/public_api_scope.cpp
    record/trace_writer.cpp |
    sampler/device_high_water.cpp sampler/nvml_view.cpp sampler/sampler.cpp stacks/frame_rules.cpp
    stacks/module_table.cpp stacks/native_stack.cpp stacks/python_code_deaths.cpp
    stacks/python_frames_released.cpp stacks/python_stack.cpp stacks/stack_table.cpp
    stacks/stack_walker.cpp)
  gmt_unity_groups_in(interpose gpumemtrace_preload
    runtime.cpp hooks/nvtx_payload_extension.cpp hooks/allocations/array_bytes.cpp
    hooks/allocations/arrays.cpp hooks/allocations/driver_memory.cpp
    hooks/allocations/graph_memory.cpp hooks/allocations/host_memory.cpp hooks/allocations/ipc.cpp
    hooks/allocations/stream_ordered.cpp hooks/allocations/vmm.cpp frameworks/torch_shim_build.cpp
    frameworks/torch_tracker.cpp |
    hooks/contexts.cpp hooks/dlclose_hook.cpp hooks/dlsym_hook.cpp hooks/driver_views_of_driver.cpp
    hooks/entry_points.cpp hooks/exec.cpp hooks/fatal_signals.cpp hooks/hook.cpp
    hooks/lookup_log.cpp hooks/nvtx_injection.cpp hooks/procaddress.cpp hooks/public_api.cpp
    hooks/runtime_api.cpp)
endif()
