// SPDX-License-Identifier: Apache-2.0
#include "format/api.h"

#include <array>

namespace gmt::format {
namespace {

#define GMT_API_NAME(id, name) name,
constexpr std::array<std::string_view, static_cast<std::size_t>(Api::kCount)> kApiNames = {
    GMT_API_LIST(GMT_API_NAME)};
#undef GMT_API_NAME

}  // namespace

std::string_view api_name(Api api) {
  const auto index = static_cast<std::size_t>(api);
  return index < kApiNames.size() ? kApiNames[index] : "unknown";
}

}  // namespace gmt::format
