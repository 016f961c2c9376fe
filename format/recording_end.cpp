// SPDX-License-Identifier: Apache-2.0
#include "format/recording_end.h"

#include <cstring>

namespace gmt::format {

std::string read_stop_reason(std::span<const uint8_t> file) {
  if (file.size() < kStopReasonEnd) return {};
  const auto* begin = reinterpret_cast<const char*>(file.data() + kStopReasonOffset);
  const std::size_t room = kStopReasonEnd - kStopReasonOffset;
  const void* nul = std::memchr(begin, 0, room);
  const std::size_t length = nul != nullptr ? static_cast<const char*>(nul) - begin : room;
  return std::string(begin, length);
}

std::string stop_reason_bytes(std::string_view reason) {
  const std::size_t room = kStopReasonEnd - kStopReasonOffset - 1;
  std::string bytes(reason.substr(0, room));
  bytes.push_back('\0');
  return bytes;
}

}  // namespace gmt::format
