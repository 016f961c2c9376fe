// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/segment_match.h"

namespace gmt::analyzer::allocator {

void SegmentMatch::recorded(const SegmentStep& step) {
  ++recorded_count_;
  if (!diverged()) recorded_.push_back(step);
}

void SegmentMatch::modelled(const SegmentStep& step, uint64_t request) {
  ++modelled_count_;
  claimed_ = 0;
  if (diverged()) return;
  modelled_.push_back(step);
  compare(request);
}

void SegmentMatch::compare(uint64_t request) {
  while (!recorded_.empty() && !modelled_.empty()) {
    const SegmentStep& r = recorded_.front();
    const SegmentStep& m = modelled_.front();
    if (r.map != m.map || r.size != m.size) {
      Divergence d;
      d.kind = Divergence::Kind::kSegment;
      d.segment = matched_;
      d.request = request;
      d.recorded = r;
      d.modelled = m;
      diverge(d);
      return;
    }
    ++matched_;
    recorded_.pop_front();
    modelled_.pop_front();
  }
}

void SegmentMatch::finish(uint64_t requests) {
  if (diverged() || (recorded_.empty() && modelled_.empty())) return;
  Divergence d;
  d.kind = Divergence::Kind::kSegment;
  d.segment = matched_;
  d.request = requests;
  if (!recorded_.empty()) d.recorded = recorded_.front();
  if (!modelled_.empty()) d.modelled = modelled_.front();
  diverge(d);
}

void SegmentMatch::diverge(Divergence d) {
  if (diverged()) return;
  divergence_ = std::move(d);
  recorded_.clear();
  modelled_.clear();
  claimed_ = 0;
}

std::optional<uint64_t> SegmentMatch::claim_address(bool expandable, uint64_t size) {
  if (diverged() || !modelled_.empty() || claimed_ >= recorded_.size()) return std::nullopt;
  const SegmentStep& r = recorded_[claimed_];
  // An expandable segment's address space starts where its first pages are mapped; its size
  // is the model's reservation, not the mapping's.
  if (r.map != expandable || (!expandable && r.size != size)) return std::nullopt;
  ++claimed_;
  return r.address;
}

}  // namespace gmt::analyzer::allocator
