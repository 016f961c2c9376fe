// SPDX-License-Identifier: Apache-2.0
// How a trace says that its recording ended before the process did: the recorder stopped (the
// disk filled, the file-size limit was reached, the program took the trace's descriptor) or the
// process replaced itself with exec. Said twice: by a Note record at the moment it happened
// (format/README.md, "Notes the reader acts on"), and, for a stop, in the header page, which is
// there even when no chunk could be written (a trace that holds only its header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gmt::format {

// Note texts: the prefix, then what happened.
inline constexpr std::string_view kStoppedNote = "recording stopped: ";  // then the reason
inline constexpr std::string_view kExecNote = "exec: ";                  // then the program
inline constexpr std::string_view kExecFailedNote = "exec failed: ";     // then the error
inline constexpr std::string_view kDroppedNote = "dropped records: ";    // then count and why

// The header page's stop reason: UTF-8 text from byte 64, padded with zeros to byte 4095.
// Zero in a trace whose recording never stopped (and in every trace before this field).
inline constexpr std::size_t kStopReasonOffset = 64;
inline constexpr std::size_t kStopReasonEnd = 4096;

// The reason at its place in `file` ("" when none, or when the file is shorter than a page).
std::string read_stop_reason(std::span<const uint8_t> file);

// The bytes to write at kStopReasonOffset: the reason, cut to fit, and its terminating zero.
std::string stop_reason_bytes(std::string_view reason);

}  // namespace gmt::format
