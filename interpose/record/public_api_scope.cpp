// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/public_api_scope.h"

#include "format/hot_path.h"

namespace gmt::interpose {
namespace {

// initial-exec: hooks run during dlopen, where __tls_get_addr may allocate. Reached through
// these out-of-line functions only (GCC's UBSan misreads initial-exec TLS that the linker
// relaxed in an executable, as the unit tests are).
thread_local format::Api t_current __attribute__((tls_model("initial-exec"))) =
    format::Api::kUnknown;

}  // namespace

PublicApiScope::PublicApiScope(format::Api api) : outermost_(t_current == format::Api::kUnknown) {
  if (outermost_) t_current = api;
}

PublicApiScope::~PublicApiScope() {
  if (outermost_) t_current = format::Api::kUnknown;
}

GMT_HOT_PATH format::Api PublicApiScope::current() {
  return t_current;
}

}  // namespace gmt::interpose
