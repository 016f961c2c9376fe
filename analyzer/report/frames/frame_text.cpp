// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/frames/frame_text.h"

#include <sstream>

namespace gmt::analyzer {

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      const auto c1 = static_cast<unsigned char>(text[++i]);
      out += "\\u00";
      out += kHex[c1 >> 4];
      out += kHex[c1 & 0xf];
    } else if (c == '\\' && i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'u')) {
      out += "\\\\";
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string device_name(int device) {
  return device >= 0 ? "device " + std::to_string(device) : std::string("device unknown");
}

namespace {
std::string basename_of(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}
}  // namespace

std::string frame_text(const SiteFrame& f) {
  // An ostream: GCC 12 warns falsely (-Wrestrict) on chained string concatenation at -O3.
  std::ostringstream text;
  text << printable(f.function);
  if (f.file) {
    text << "  " << printable(basename_of(*f.file));
    if (f.line) text << ':' << *f.line;
  } else if (f.module && !unsymbolized(f)) {
    text << "  (" << printable(basename_of(*f.module)) << ')';
  }
  return text.str();
}

void write_frames(const std::vector<SiteFrame>& frames, std::size_t shown,
                  const std::string& indent, std::ostream& out, FrameMode mode) {
  if (frames.empty()) {
    out << indent << "(no stack recorded)\n";
    return;
  }
  const ShownStack stack = shown_stack(frames, mode);
  if (mode == FrameMode::kAll) shown = stack.frames.size();
  for (std::size_t i = 0; i < stack.frames.size() && i < shown; ++i) {
    out << indent << frame_text(stack.frames[i]) << "\n";
    if (i == 0 && !stack.via.empty()) out << indent << "  " << printable(stack.via) << "\n";
  }
  if (stack.frames.size() > shown) {
    out << indent << "... " << stack.frames.size() - shown << " more frames\n";
  }
}

}  // namespace gmt::analyzer
