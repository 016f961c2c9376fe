// SPDX-License-Identifier: Apache-2.0
// The settings of PyTorch's CUDA caching allocator that change which blocks and segments it
// makes: PYTORCH_CUDA_ALLOC_CONF (PYTORCH_ALLOC_CONF) as c10/core/AllocatorConfig.{h,cpp} and
// c10/cuda/CUDAAllocatorConfig.{h,cpp} read it, and the per-process memory fraction. Defaults
// are PyTorch's: every block may be split, no rounding beyond 512 bytes, no garbage collection,
// no expandable segments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/allocator/request_size.h"
#include "format/records.h"

namespace gmt::analyzer::allocator {

struct AllocatorSettings {
  // max_split_size_mb: blocks of at least this many bytes are never split, and a request below
  // it never takes one; UINT64_MAX (the default): no limit.
  uint64_t max_split_size = UINT64_MAX;
  // max_non_split_rounding_mb: how much larger than a request of max_split_size or more a cached
  // oversize block may be and still serve it (AllocatorConfig.h: default kLargeBuffer).
  uint64_t max_non_split_rounding_size = kLargeBuffer;
  // roundup_power2_divisions, by interval (request_size.h); 0 or 1: none.
  RoundupDivisions roundup_divisions{};
  // garbage_collection_threshold: a fraction in (0, 1) of the allowed memory; 0: off. Acts only
  // with a memory fraction below 1 (CUDACachingAllocator.cpp: malloc, allowed_memory_maximum).
  double garbage_collection_threshold = 0;
  bool expandable_segments = false;
  // large_segment_size_mb (newer PyTorch): the segment for requests of 1-10 MiB and the large
  // pool's expandable page; kLargeBuffer where the key does not exist.
  uint64_t large_segment_size = kLargeBuffer;
  // torch.cuda.set_per_process_memory_fraction or per_process_memory_fraction: the allocator
  // refuses to hold more than this share of the device's total memory.
  double per_process_memory_fraction = 1.0;

  // The settings a trace recorded (format's AllocatorSettingsRecord); the keys it does not
  // store keep their defaults.
  static AllocatorSettings of(const format::AllocatorSettingsRecord& r);
};

// What parse_alloc_conf() made of a PYTORCH_CUDA_ALLOC_CONF string.
struct AllocConf {
  AllocatorSettings settings;
  // Keys PyTorch knows that change nothing the model replays (pinned memory, the lock around
  // cudaMalloc).
  std::vector<std::string> no_effect;
  // Settings PyTorch would act on that the model does not follow (backend:cudaMallocAsync,
  // graph_capture_record_stream_reuse:True): a replay with them is not the recorded run's.
  std::vector<std::string> not_modelled;
  // Empty when the string parsed; else why PyTorch would refuse it.
  std::string error;
};

// Parses a PYTORCH_CUDA_ALLOC_CONF value (or _set_allocator_settings' argument) over `base`,
// the settings already in force, by AllocatorConfig.cpp's and CUDAAllocatorConfig.cpp's
// parseArgs: `key:value` pairs separated by commas, a list in brackets for
// roundup_power2_divisions. As there, max_split_size, roundup_divisions and
// garbage_collection_threshold return to their defaults unless the string names them.
AllocConf parse_alloc_conf(std::string_view conf, const AllocatorSettings& base = {});

}  // namespace gmt::analyzer::allocator
