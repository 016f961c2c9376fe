// SPDX-License-Identifier: Apache-2.0
// What `gpumemtrace top` shows of a watched process now, from its live replay (live_trace.h):
// the state of the process, and per device the bytes by kind and by owning library, the sites
// holding the most, the framework's figures and the growth over the last minute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/live/live_trace.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// `starting` (no record yet), `running`, `exited` (its End record), `stopped` (recording
// stopped), `cut` (gone without an End record: `process_gone` says so, for a process of this
// host).
std::string live_state(const LiveTrace& trace, bool process_gone);

// A row of the live sites: a driver site, or a caching allocator's block site or free cache.
struct LiveSite {
  uint32_t stack = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  int allocator = -1;  // format::BlockAllocator of a block or cache row; -1 for a driver site
  bool cache = false;
};

// What `ordinal` holds now by site, largest first: the driver's sites, less the segments of the
// caching allocators that report their blocks, whose live blocks by site and free cache stand
// in their place (which line grew the cache is an accident of it).
std::vector<LiveSite> live_sites(const TraceSummary& summary, int ordinal);

// The stacks of every site holding memory now, of drivers and of blocks, each once, ascending.
std::vector<uint32_t> live_stacks(const TraceSummary& summary);

struct LiveDevice {
  std::vector<std::pair<std::string, uint64_t>> by_kind;     // kinds with live bytes
  std::vector<std::pair<std::string, uint64_t>> by_library;  // largest first
  // Live now minus live a minute before, in the process's time; empty when that moment is
  // before what the watch knows (a bounded trace's history begins later).
  std::optional<int64_t> growth_1m_bytes;
  // The framework's figures: its block events where it reports them, else its latest report.
  std::optional<uint64_t> framework_allocated_bytes;
  std::optional<uint64_t> framework_reserved_bytes;
};

LiveDevice live_device(const LiveTrace& trace, OwnerLibraryCache& owners, int ordinal,
                       uint64_t now_ns);

}  // namespace gmt::analyzer
