// SPDX-License-Identifier: Apache-2.0
#include "format/varint.h"

#include "format/hot_path.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gmt::format {
namespace {

bool detect_fast_pext() {
#if defined(__x86_64__)
  // __builtin_cpu_init first: this runs among the constructors, maybe before libgcc's own has
  // filled in what __builtin_cpu_supports reads.
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("bmi2")) return false;
  if (!__builtin_cpu_is("amd")) return true;
  // AMD: fast from family 19h (Zen 3) on.
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  const unsigned base_family = (eax >> 8) & 0xf;
  const unsigned family = base_family == 0xf ? base_family + ((eax >> 20) & 0xff) : base_family;
  return family >= 0x19;
#else
  return false;
#endif
}

}  // namespace

const bool kFastPext = detect_fast_pext();

GMT_HOT_PATH std::size_t put_varints(uint8_t* out, const uint64_t* values, std::size_t count) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += put_varint(out + n, values[i]);
  return n;
}

}  // namespace gmt::format
