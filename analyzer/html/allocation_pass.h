// SPDX-License-Identifier: Apache-2.0
// Every allocation of each device over time, for the page's allocation view, and the caching
// allocators' segments at a few moments, read in two more passes over the trace's records.
//
// An allocation is a caching allocator's block where one reported its blocks (its segments are
// then drawn as the blocks in them, and its cache as one band), else a driver allocation of a
// device-resident kind. The page stays bounded whatever the trace's length: the first pass
// counts allocations by size, so that at most `bands` of the largest are kept one by one (each
// with its whole life); the smaller ones are added up per site into series of `resolution_ns`
// buckets (the most each site's small allocations held during each bucket).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/model/roles/role.h"
#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

struct AllocationLimits {
  std::size_t bands = 20'000;          // allocations kept one by one, per trace
  std::size_t sites = 2'000;           // sites named per trace; the rest share kOtherSite
  std::size_t series = 60;             // per-site series of small allocations per device
  std::size_t moments = 24;            // evenly spaced segment snapshots per device
  std::size_t failures = 100;          // segment snapshots at failures per trace
  std::size_t segments = 400;          // per snapshot
  std::size_t pieces = 6'000;          // blocks and free pieces per snapshot
  std::size_t peak_retakes = 64;       // peak snapshots retaken on its plateau, per device
  std::size_t segment_spans = 50'000;  // segment lifetimes per device
  std::size_t steps = 5'000;           // optimizer steps and root forwards per trace
};

struct AllocationSite {
  uint32_t stack = 0;
  int allocator = -1;  // format::BlockAllocator of a block's site; -1 a driver allocation's
};

// One allocation kept whole. end_ns is kLive for one live when the trace ended.
struct AllocationBand {
  static constexpr uint64_t kLive = UINT64_MAX;
  uint64_t start_ns = 0;
  uint64_t end_ns = kLive;
  uint64_t size = 0;
  uint64_t address = 0;
  uint32_t site = 0;  // index in AllocationPass::sites
  Role role = Role::kUnknown;
  // The innermost module whose forward was running on its thread when it was made (index in
  // AllocationPass::modules; 0: none), as the framework's hooks reported the forwards.
  uint32_t module = 0;
};

// A segment of a caching allocator at a moment: its blocks and the free pieces between them.
struct SegmentPiece {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool free = true;
  uint32_t site = 0;  // a block's
  Role role = Role::kUnknown;
};
struct SegmentState {
  uint64_t address = 0;
  uint64_t size = 0;
  int allocator = 0;
  bool expandable = false;  // pages mapped into a reserved range (kSegmentMap)
  // Taken while a CUDA graph was being captured on its thread (the hooks' capture scope): the
  // graph's private pool, whose blocks only its replays use.
  bool graph_pool = false;
  std::vector<SegmentPiece> pieces;
};
struct SegmentSnapshot {
  // "peak", "highest_allocated" (the caching allocators handed out the most), "failure" or
  // "moment"
  std::string kind;
  uint64_t time_ns = 0;
  uint64_t request_bytes = 0;  // at a failure: what the allocator (else the driver) was asked
  uint64_t largest_free_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t segments_left_out = 0;
  uint64_t pieces_left_out = 0;
  std::vector<SegmentState> segments;
};

struct DeviceAllocations {
  uint64_t first_alloc_ns = 0;        // when the device's first allocation was made
  std::vector<AllocationBand> bands;  // by start
  uint64_t small_count = 0;           // allocations added up in the series
  // Per bucket, the time of its moment: when the device held the most during it (the latest
  // such). The series are what was live then, so that at that moment the stack adds up.
  std::vector<uint64_t> moments;
  // Per site (index in sites) what its small allocations held at each bucket's moment; the last
  // two gather the sites past the `series` largest (kOtherSite): their blocks, their driver
  // allocations.
  std::vector<std::pair<uint32_t, std::vector<uint64_t>>> series;
  std::vector<Role> series_roles;   // the role of each series' last allocation
  std::vector<bool> series_blocks;  // whether a series holds caching allocators' blocks
  // The caching allocators' segments over time (start, end: kLive when live at the end, size),
  // so that their free cache at any moment is what they reserve less their live blocks; past
  // `segment_spans` of them, `cache` says the most the cache held in each bucket instead.
  // Each: start, end, size, address, allocator (format::BlockAllocator), expandable (1: pages
  // mapped into a reserved range), graph_pool (1: a CUDA graph's private pool, SegmentState's).
  std::vector<std::array<uint64_t, 7>> segment_spans;
  bool segment_spans_complete = true;
  // Every block of the device is kept whole (none in a series): with the segments' lifetimes,
  // the segments at any moment follow from the data.
  bool blocks_whole = true;
  std::vector<uint64_t> cache;
  std::vector<SegmentSnapshot> snapshots;  // in time order
};

// A run of what a framework's hooks report as a step: an optimizer's step(), or a root module's
// forward (one not inside another module's on its thread).
struct StepRun {
  std::string name;  // "optimizer step (Adam)", "forward of model"
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct AllocationPass {
  static constexpr uint32_t kOtherSite = 0;  // sites[0]: the sites not named one by one
  uint64_t resolution_ns = 0;
  uint64_t buckets = 0;
  // Allocations this large or larger are kept whole (in the size class the limit falls in, the
  // first of them).
  uint64_t threshold_bytes = 0;
  std::vector<AllocationSite> sites;
  std::map<int, DeviceAllocations> devices;
  std::vector<StepRun> steps;            // in order of their end, at most AllocationLimits::steps
  std::vector<std::string> modules{""};  // the bands' modules; [0]: none
};

// Reads `trace.path` twice. Throws TraceError when the file cannot be read.
AllocationPass read_allocation_pass(const TraceSummary& trace, uint64_t resolution_ns,
                                    uint64_t buckets, const AllocationLimits& limits);

}  // namespace gmt::analyzer
