// SPDX-License-Identifier: Apache-2.0
// GPUMEMTRACE_DEBUG=1: one line on stderr per driver function handed to the program, saying
// whether we wrapped it. This is how a path into the driver that we miss gets found.
#pragma once

namespace gmt::interpose {

void log_driver_lookup(const char* via, const char* symbol, int cuda_version,
                       unsigned long long flags, const void* driver_function,
                       const void* handed_out);

}  // namespace gmt::interpose
