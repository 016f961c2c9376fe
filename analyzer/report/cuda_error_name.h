// SPDX-License-Identifier: Apache-2.0
// The names of the driver's error codes, as failed allocations record them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gmt::analyzer {

// "CUDA_ERROR_OUT_OF_MEMORY" for 2; a code cuda.h does not name is "error N".
std::string cuda_error_name(uint32_t code);

}  // namespace gmt::analyzer
