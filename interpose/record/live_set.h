// SPDX-License-Identifier: Apache-2.0
// What a bounded trace's checkpoint carries: every allocation live now, with its Alloc record's
// fields. Kept only when the trace is bounded (GPUMEMTRACE_MAX_SIZE), by the writer, which
// applies each allocation, free and context teardown under the lock it writes the record in, so
// that a checkpoint's live set is exactly the records before its time.
#pragma once

#include <cstdint>

#include "format/records.h"
#include "interpose/record/live_size_table.h"

namespace gmt::interpose {

class LiveSet {
 public:
  void apply(const format::AllocRecord& r);
  void apply(const format::FreeRecord& r);
  void apply(const format::ContextDestroyedRecord& r);
  template <class R>
  void apply(const R&) {}  // nothing else changes what is live

  template <class Visit>
  void for_each(Visit visit) const {
    table_.for_each(visit);
  }
  std::size_t size() const { return table_.size(); }
  void clear() { table_.clear(); }

 private:
  LiveTable<format::AllocRecord> table_;
};

// Whether a record changes the live set: what the writer applies under its lock.
template <class R>
constexpr bool changes_live_set() {
  return std::is_same_v<R, format::AllocRecord> || std::is_same_v<R, format::FreeRecord> ||
         std::is_same_v<R, format::ContextDestroyedRecord>;
}

}  // namespace gmt::interpose
