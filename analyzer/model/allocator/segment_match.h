// SPDX-License-Identifier: Apache-2.0
// The recorded run's segments against the model's, as both come: each cudaMalloc (and, with
// expandable segments, each mapping of pages) in order, matched by kind and size, until the
// first that differs. Memory stays small: the two sides are never more than a request apart
// while they agree, and nothing is kept once they do not.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace gmt::analyzer::allocator {

struct SegmentStep {
  bool map = false;  // pages mapped into an expandable segment; else a cudaMalloc
  uint64_t size = 0;
  uint64_t address = 0;
};

// Where the model first did not do what the recording shows.
struct Divergence {
  enum class Kind : uint8_t {
    kSegment,        // the n-th segment differs (or one side has it and the other not)
    kRelease,        // the bytes given back to CUDA at a release differ
    kRequestFailed,  // the model failed a request the recording served
    kRequestServed,  // the model served a request the recording failed (OOM)
  };
  Kind kind = Kind::kSegment;
  uint64_t segment = 0;                 // the segments that matched before it
  uint64_t request = 0;                 // the requests replayed before it
  std::optional<SegmentStep> recorded;  // kSegment: each side's, where it had one
  std::optional<SegmentStep> modelled;
  uint64_t recorded_bytes = 0;  // kRelease, kRequest*: the bytes
  uint64_t modelled_bytes = 0;
};

class SegmentMatch {
 public:
  void recorded(const SegmentStep& step);
  void modelled(const SegmentStep& step, uint64_t request);
  // The end of the replay: a segment one side took and the other did not diverges.
  void finish(uint64_t requests);
  // Another kind of divergence, at `request`; the first one is kept.
  void diverge(Divergence d);

  // The address the model's next segment takes: the recorded one it would match, while the
  // two agree and that one is of the same kind (and, for a cudaMalloc, size); else none. Each
  // call claims one until the model's segments are given (modelled()).
  std::optional<uint64_t> claim_address(bool expandable, uint64_t size);

  bool diverged() const { return divergence_.has_value(); }
  const std::optional<Divergence>& divergence() const { return divergence_; }
  uint64_t recorded_count() const { return recorded_count_; }
  uint64_t modelled_count() const { return modelled_count_; }
  uint64_t matched() const { return matched_; }

 private:
  void compare(uint64_t request);

  std::deque<SegmentStep> recorded_;
  std::deque<SegmentStep> modelled_;
  std::size_t claimed_ = 0;
  uint64_t recorded_count_ = 0;
  uint64_t modelled_count_ = 0;
  uint64_t matched_ = 0;
  std::optional<Divergence> divergence_;
};

}  // namespace gmt::analyzer::allocator
