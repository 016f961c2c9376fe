// SPDX-License-Identifier: Apache-2.0
// PyTorch's allocator settings, for the note that says the block events are on: what differs
// from the defaults, in PYTORCH_CUDA_ALLOC_CONF's words, so that a reader of the report sees
// which rules its blocks were rebuilt by.
#pragma once

#include <string>

#include "format/records.h"

namespace gmt::interpose {

// "max_split_size_mb:32,roundup_power2_divisions:4"; divisions that differ by size as a list,
// one per interval from 1 MiB ("roundup_power2_divisions:[1 1 4 ...]"); "" when all are the
// defaults.
std::string torch_settings_text(const format::AllocatorSettingsRecord& settings);

}  // namespace gmt::interpose
