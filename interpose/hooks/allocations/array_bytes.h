// SPDX-License-Identifier: Apache-2.0
// How many bytes of device memory a CUDA array takes: the driver does not say, so it is
// computed from the descriptor (dimensions × channels × element size; mipmap levels summed).
#pragma once

#include <cstdint>

namespace gmt::interpose {

// `format` is a CUarray_format value. Unknown formats count 4 bytes per channel.
uint64_t array_element_bytes(unsigned int format);

// Dimensions of 0 count as 1 (a 1D array has height 0).
uint64_t array_bytes(uint64_t width, uint64_t height, uint64_t depth, unsigned int channels,
                     unsigned int format);

uint64_t mipmapped_array_bytes(uint64_t width, uint64_t height, uint64_t depth,
                               unsigned int channels, unsigned int format, unsigned int levels);

}  // namespace gmt::interpose
