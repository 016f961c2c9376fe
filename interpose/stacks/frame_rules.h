// SPDX-License-Identifier: Apache-2.0
// How to step from an x86-64 frame to its caller, read from the module's .eh_frame: where the
// frame's canonical frame address (CFA) is, and where the caller's rbp was saved. The return
// address is at CFA - 8 on x86-64; a frame whose rules say otherwise, or need a DWARF expression
// (signal trampolines, PLT stubs, hand-written assembly), is left to libunwind.
#pragma once

#include <cstdint>

namespace gmt::interpose {

struct FrameRule {
  enum class Kind : uint8_t {
    kStep,       // the CFA is rsp or rbp plus cfa_offset; the return address at CFA - 8
    kOutermost,  // the return address is undefined: the thread's first frame
    kUnknown,    // no rule we can follow (no FDE, an expression, a signal frame)
  };
  int32_t cfa_offset = 0;
  // Where the caller's rbp was saved, from the CFA; 0: rbp is not saved (it keeps its value).
  int16_t rbp_offset = 0;
  bool cfa_is_rbp = false;
  Kind kind = Kind::kUnknown;
};

// The rule at `pc` (an instruction inside a function: for a return address, the address before
// it), found through the loaded module's PT_GNU_EH_FRAME table. Takes the loader's lock
// (dl_iterate_phdr), so callers cache what it returns.
FrameRule find_frame_rule(uint64_t pc);

// The rule of `pc` given the module's .eh_frame_hdr, for tests and for find_frame_rule.
FrameRule frame_rule_in(const uint8_t* eh_frame_hdr, uint64_t pc);

}  // namespace gmt::interpose
