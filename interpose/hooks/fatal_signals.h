// SPDX-License-Identifier: Apache-2.0
// Why a process died, in its trace: for each signal whose default action ends the process and
// that the process leaves at that default, a handler writes a Signal record (format 4.10) and
// lets the signal take its course, as if nothing had been there: the same death, the same
// status, the same core. A disposition the program set (a handler, or ignored) is never touched;
// one it sets later replaces ours.
#pragma once

namespace gmt::interpose {

// At load, before the program's code runs.
void install_fatal_signal_handlers();

}  // namespace gmt::interpose
