// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/frames/frame_text.h"

#include <algorithm>
#include <sstream>
#include <utility>

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

std::string site_frame_label(const SiteFrame& f) {
  if (f.file && f.line) return printable(basename_of(*f.file)) + ":" + std::to_string(*f.line);
  if (f.file) return printable(f.function) + " (" + printable(basename_of(*f.file)) + ")";
  if (f.module && !unsymbolized(f))
    return printable(f.function) + " (" + printable(basename_of(*f.module)) + ")";
  return printable(f.function);
}

namespace {

// A row's frames from its first user frame outward, as labels: the site, then its callers.
std::vector<std::string> caller_chain(const std::vector<SiteFrame>* frames) {
  std::vector<std::string> chain;
  if (frames == nullptr || frames->empty()) return chain;
  for (std::size_t i = first_user_frame(*frames).value_or(0); i < frames->size(); ++i) {
    if ((*frames)[i].kind == "attribution") continue;  // a mark, not a caller
    chain.push_back(site_frame_label((*frames)[i]));
  }
  return chain;
}

// Tells apart `rows` (indices into `chains`), which share their labels below `depth`: at the
// first depth where they part, each row gets its caller there, and those still alike go on.
void tell_apart(const std::vector<std::vector<std::string>>& chains, std::vector<std::size_t> rows,
                std::size_t depth, std::vector<std::vector<std::string>>& callers) {
  static const std::string kNone;
  if (rows.size() < 2) return;
  const auto at = [&](std::size_t r) -> const std::string& {
    return depth < chains[r].size() ? chains[r][depth] : kNone;
  };
  std::size_t longest = 0;
  for (std::size_t r : rows) longest = std::max(longest, chains[r].size());
  for (; depth < longest; ++depth) {
    if (std::any_of(rows.begin(), rows.end(), [&](std::size_t r) { return at(r) != at(rows[0]); }))
      break;
  }
  if (depth >= longest) return;                                         // alike all the way out
  std::vector<std::pair<std::string, std::vector<std::size_t>>> parts;  // in first-seen order
  for (std::size_t r : rows) {
    auto part =
        std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == at(r); });
    if (part == parts.end()) part = parts.insert(parts.end(), {at(r), {}});
    part->second.push_back(r);
  }
  for (auto& [label, members] : parts) {
    if (!label.empty()) {
      for (std::size_t r : members) callers[r].push_back(label);
    }
    tell_apart(chains, std::move(members), depth + 1, callers);
  }
}

}  // namespace

std::vector<std::string> site_labels(const std::vector<const std::vector<SiteFrame>*>& rows) {
  std::vector<std::vector<std::string>> chains;
  chains.reserve(rows.size());
  for (const std::vector<SiteFrame>* frames : rows) chains.push_back(caller_chain(frames));
  // Rows that share their site, in first-seen order.
  std::vector<std::pair<std::string, std::vector<std::size_t>>> by_site;
  for (std::size_t r = 0; r < chains.size(); ++r) {
    if (chains[r].empty()) continue;
    auto site = std::find_if(by_site.begin(), by_site.end(),
                             [&](const auto& s) { return s.first == chains[r][0]; });
    if (site == by_site.end()) site = by_site.insert(by_site.end(), {chains[r][0], {}});
    site->second.push_back(r);
  }
  std::vector<std::vector<std::string>> callers(rows.size());
  for (auto& [site, members] : by_site) tell_apart(chains, std::move(members), 1, callers);
  std::vector<std::string> labels(rows.size());
  for (std::size_t r = 0; r < chains.size(); ++r) {
    if (chains[r].empty()) continue;
    for (auto caller = callers[r].rbegin(); caller != callers[r].rend(); ++caller)
      labels[r] += *caller + " > ";
    labels[r] += chains[r][0];
  }
  return labels;
}

std::string site_label(const std::vector<SiteFrame>& frames) {
  return site_labels({&frames})[0];
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
