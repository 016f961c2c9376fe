// SPDX-License-Identifier: Apache-2.0
// Which Python code objects the interpreter has freed, by address. Frames read in place name
// their code objects by address, and we cannot hold a reference to them (that needs the GIL): once
// one is freed, a new one may be made at its address, and its name and file strings, freed with
// it, at theirs, with the same first line. Nothing read from the new code object then tells the
// two apart (a CI run named `made_90` after `made_22`), so the interpreter has to tell us: its
// code type's dealloc is wrapped to log each address before the object is freed. A code object
// met at an address is the one met there before only if that address was not logged since.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmt::interpose {

class PythonCodeDeaths {
 public:
  using Lookup = void* (*)(const char* name);

  // How many addresses are kept: a reader that fell further behind forgets every code object.
  static constexpr std::size_t kKept = 256;

  // Wraps the dealloc of this process's PyCode_Type (once; again is a no-op); false where it
  // cannot be found or does not look as expected, and then nothing is changed.
  static bool watch(Lookup lookup);

  // How many code objects have been freed since watch(). A thread that reads its frames in
  // place got them from code objects made before it last ran Python, and so after every death
  // this counts (the GIL orders them).
  static uint64_t count();

  // Puts the addresses of the deaths numbered [from, to) (to <= count(), to - from <= kKept) in
  // `out`; false when some of them are no longer kept (then `out` is not to be used).
  static bool freed(uint64_t from, uint64_t to, const void** out);

  // Fork: no thread may be logging while the process is copied.
  static void before_fork();
  static void after_fork();
};

}  // namespace gmt::interpose
