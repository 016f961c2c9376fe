// SPDX-License-Identifier: Apache-2.0
// Who this process is, captured when its trace file is created.
#pragma once

#include "format/records.h"

namespace gmt::interpose {

format::ProcessInfoRecord capture_process_info(uint64_t mono_start_ns);

}  // namespace gmt::interpose
