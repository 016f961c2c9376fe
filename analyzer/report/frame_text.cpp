// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/frame_text.h"

#include <optional>
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
  } else if (f.module) {
    text << "  (" << printable(basename_of(*f.module)) << ')';
  }
  return text.str();
}

namespace {

// The CUDA runtime's and driver's own libraries.
bool cuda_library(const std::optional<std::string>& module) {
  if (!module) return false;
  const std::string name = module->substr(module->rfind('/') + 1);
  return name.rfind("libcudart", 0) == 0 || name.rfind("libcuda.so", 0) == 0;
}

}  // namespace

void write_frames(const std::vector<SiteFrame>& frames, std::size_t shown,
                  const std::string& indent, std::ostream& out) {
  if (frames.empty()) out << indent << "(no stack recorded)\n";
  // A stack that went through the CUDA runtime starts with its internals: the text starts at
  // the runtime's entry point (the last of those frames, cudaMalloc), so that the frames shown
  // are the program's. The JSON keeps them all.
  std::size_t first = 0;
  while (first + 1 < frames.size() && cuda_library(frames[first].module) &&
         cuda_library(frames[first + 1].module)) {
    ++first;
  }
  // With Python frames further down, they are what the user wrote: the native frames between
  // the entry point and them are summed up in one line.
  std::size_t python = first;
  while (python < frames.size() && frames[python].kind != "python") ++python;
  if (python < frames.size() && python > first + 1 && python >= first + shown && shown > 1) {
    out << indent << frame_text(frames[first]) << "\n";
    out << indent << "... " << python - first - 1 << " native frames\n";
    first = python;
    shown -= 1;
  }
  for (std::size_t i = first; i < frames.size() && i < first + shown; ++i) {
    out << indent << frame_text(frames[i]) << "\n";
  }
  if (frames.size() > first + shown) {
    out << indent << "... " << frames.size() - first - shown << " more frames\n";
  }
}

}  // namespace gmt::analyzer
