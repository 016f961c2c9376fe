// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/allocator_settings.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>

namespace gmt::analyzer::allocator {
namespace {

constexpr uint64_t kMB = 1ull << 20;

// AllocatorConfig.h: ConfigTokenizer: keys, values and each of `,:[]` as tokens; whitespace
// dropped.
std::vector<std::string> tokens_of(std::string_view conf) {
  std::vector<std::string> tokens;
  std::string word;
  for (const char c : conf) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!word.empty()) tokens.push_back(std::move(word));
      word.clear();
      tokens.emplace_back(1, c);
    } else if (std::isspace(static_cast<unsigned char>(c)) == 0) {
      word += c;
    }
  }
  if (!word.empty()) tokens.push_back(std::move(word));
  return tokens;
}

bool to_u64(const std::string& s, uint64_t& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool to_double(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

bool power_of_two_or_zero(uint64_t v) {
  return v == 0 || std::has_single_bit(v);
}

class Parser {
 public:
  Parser(std::string_view conf, AllocConf& out) : tokens_(tokens_of(conf)), out_(out) {}

  void run() {
    for (i_ = 0; i_ < tokens_.size() && out_.error.empty(); ++i_) {
      key(tokens_[i_]);
      if (!out_.error.empty()) return;
      if (i_ + 1 < tokens_.size() && !expect(",")) return;
    }
  }

 private:
  // The next token, which must be `t`.
  bool expect(const char* t) {
    if (++i_ < tokens_.size() && tokens_[i_] == t) return true;
    return fail(std::string("expected '") + t + "'");
  }
  bool fail(const std::string& why) {
    if (out_.error.empty()) out_.error = why;
    return false;
  }
  // The value after `key:`.
  const std::string* value() {
    if (!expect(":")) return nullptr;
    if (++i_ >= tokens_.size()) {
      fail("a value is missing");
      return nullptr;
    }
    return &tokens_[i_];
  }
  bool mb(uint64_t min_mb, bool strictly_above, uint64_t& out, const std::string& key) {
    const std::string* v = value();
    uint64_t n = 0;
    if (v == nullptr || !to_u64(*v, n)) return fail(key + " takes a number of MiB");
    if (strictly_above ? n <= min_mb : n < min_mb)
      return fail(key + " too small, must be " + (strictly_above ? "> " : ">= ") +
                  std::to_string(min_mb));
    out = std::min(n, std::numeric_limits<uint64_t>::max() / kMB) * kMB;
    return true;
  }
  bool boolean(bool& out, const std::string& key) {
    const std::string* v = value();
    if (v != nullptr && (*v == "True" || *v == "False")) {
      out = *v == "True";
      return true;
    }
    return fail(key + " takes True or False");
  }

  void key(const std::string& k) {
    AllocatorSettings& s = out_.settings;
    if (k == "max_split_size_mb") {
      // AllocatorConfig.cpp: parseMaxSplitSize: at least the large segment size.
      mb(s.large_segment_size / kMB, false, s.max_split_size, k);
    } else if (k == "max_non_split_rounding_mb") {
      mb(kLargeBuffer / kMB, false, s.max_non_split_rounding_size, k);
    } else if (k == "large_segment_size_mb") {
      // AllocatorConfig.cpp: parseLargeSegmentSize: above kMinLargeAlloc.
      mb(kMinLargeAlloc / kMB, true, s.large_segment_size, k);
    } else if (k == "garbage_collection_threshold") {
      const std::string* v = value();
      double t = 0;
      if (v == nullptr || !to_double(*v, t) || t <= 0 || t >= 1.0) {
        fail("garbage_collection_threshold must be in (0.0, 1.0)");
        return;
      }
      s.garbage_collection_threshold = t;
    } else if (k == "roundup_power2_divisions") {
      divisions(s.roundup_divisions);
    } else if (k == "expandable_segments") {
      boolean(s.expandable_segments, k);
    } else if (k == "per_process_memory_fraction") {
      const std::string* v = value();
      double f = 0;
      if (v == nullptr || !to_double(*v, f) || f < 0 || f > 1.0) {
        fail("per_process_memory_fraction must be in [0.0, 1.0]");
        return;
      }
      s.per_process_memory_fraction = f;
    } else if (k == "backend") {
      const std::string* v = value();
      if (v == nullptr) return;
      if (*v == "cudaMallocAsync") {
        out_.not_modelled.push_back(
            "backend:cudaMallocAsync (CUDA's own pool, not the caching "
            "allocator)");
      } else if (*v != "native") {
        fail("unknown allocator backend " + *v);
      }
    } else if (k == "graph_capture_record_stream_reuse") {
      bool on = false;
      if (boolean(on, k) && on) out_.not_modelled.push_back(k + ":True");
    } else if (k == "release_lock_on_cudamalloc" || k == "release_lock_on_hipmalloc" ||
               k == "pinned_use_cuda_host_register" || k == "pinned_use_hip_host_register" ||
               k == "pinned_num_register_threads" || k == "pinned_reserve_segment_size_mb" ||
               k == "pinned_use_background_threads") {
      // The replay is sequential and holds no pinned memory: these change nothing in it.
      if (value() != nullptr) out_.no_effect.push_back(k);
    } else {
      fail("unrecognized key '" + k + "'");
    }
  }

  // AllocatorConfig.cpp: parseRoundUpPower2Divisions: one number for every interval, or a list
  // of `MiB:divisions` (the interval a power of two names takes it, as do those below the
  // first one given) closed by an optional `>:divisions` for every interval after the last
  // one named.
  void divisions(RoundupDivisions& d) {
    if (!expect(":")) return;
    if (++i_ >= tokens_.size()) {
      fail("roundup_power2_divisions needs a value");
      return;
    }
    uint64_t n = 0;
    if (tokens_[i_] != "[") {
      if (!to_u64(tokens_[i_], n) || !std::has_single_bit(n)) {
        fail("roundup_power2_divisions must be a power of 2");
        return;
      }
      d.fill(n);
      return;
    }
    bool first = true;
    std::size_t last = 0;
    while (++i_ < tokens_.size() && tokens_[i_] != "]") {
      const std::string interval = tokens_[i_];
      if (!expect(":")) return;
      if (++i_ >= tokens_.size() || !to_u64(tokens_[i_], n) || !power_of_two_or_zero(n)) {
        fail("roundup_power2_divisions: divisions must be a power of 2 or 0");
        return;
      }
      if (interval == ">") {
        // Every interval after the last one named (older versions overwrote that one too).
        std::fill(d.begin() + static_cast<std::ptrdiff_t>(std::min(last + 1, d.size())), d.end(),
                  n);
      } else {
        uint64_t mib = 0;
        if (!to_u64(interval, mib) || !std::has_single_bit(mib)) {
          fail("roundup_power2_divisions: intervals must be powers of 2");
          return;
        }
        const std::size_t index =
            std::min(static_cast<std::size_t>(std::bit_width(mib) - 1), d.size() - 1);
        if (first) std::fill(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(index), n);
        first = false;
        d[index] = n;
        last = index;
      }
      if (i_ + 1 < tokens_.size() && tokens_[i_ + 1] != "]" && !expect(",")) return;
    }
    if (i_ >= tokens_.size()) fail("roundup_power2_divisions: ']' is missing");
  }

  std::vector<std::string> tokens_;
  AllocConf& out_;
  std::size_t i_ = 0;
};

}  // namespace

AllocatorSettings AllocatorSettings::of(const format::AllocatorSettingsRecord& r) {
  AllocatorSettings s;
  s.max_split_size = r.max_split_size;
  const std::size_t n = std::min(r.roundup_divisions.size(), s.roundup_divisions.size());
  std::copy_n(r.roundup_divisions.begin(), n, s.roundup_divisions.begin());
  return s;
}

AllocConf parse_alloc_conf(std::string_view conf, const AllocatorSettings& base) {
  AllocConf out;
  out.settings = base;
  // AllocatorConfig.cpp: parseArgs: these three go back to their defaults at every parse (a
  // later _set_allocator_settings that does not name them drops them); the others stay.
  const AllocatorSettings defaults;
  out.settings.max_split_size = defaults.max_split_size;
  out.settings.roundup_divisions = defaults.roundup_divisions;
  out.settings.garbage_collection_threshold = defaults.garbage_collection_threshold;
  Parser(conf, out).run();
  return out;
}

}  // namespace gmt::analyzer::allocator
