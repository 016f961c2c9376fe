// SPDX-License-Identifier: Apache-2.0
// The bytes of each role over a device's timeline, each bucket at the moment its most was
// reached: what the page stacks and Perfetto counts. A block's role is known only once the whole
// trace is read (RoleTracker), so each block adds its bytes, by its role class, to the buckets
// whose moments fall in its life; the classes become roles at the end. A block is live at moment
// n (after the n-th record) when it began at a record <= n and ended at a record > n.
// Memory grows with live blocks, the blocks ended in the bucket being read, the buckets and the
// classes seen, never with the number of records.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "analyzer/model/roles/role.h"
#include "analyzer/model/roles/role_tracker.h"

namespace gmt::analyzer {

class RoleSeries {
 public:
  // A block of `bytes` on `device` handed out by record `ordinal`.
  void begin(uint64_t address, int device, uint64_t bytes, uint64_t ordinal);
  // The block at `address` ended by record `ordinal`, its class then.
  void end(uint64_t address, RoleTracker::RoleClass role_class, uint64_t ordinal);
  // `moments` are the device's buckets' moments (ascending), final but for the last one, which
  // is at least every ended block's end: places the blocks that ended since the last call.
  void place(int device, const std::vector<uint64_t>& moments);
  // Each role's bytes per bucket of `moments` (final), the blocks still live included, by the
  // roles `roles` gives their classes now.
  std::array<std::vector<uint64_t>, kRoleCount> finish(int device,
                                                       const std::vector<uint64_t>& moments,
                                                       const RoleTracker& roles);

 private:
  struct Live {
    int device;
    uint64_t bytes;
    uint64_t began;
  };
  struct Ended {
    RoleTracker::RoleClass role_class;
    uint64_t bytes;
    uint64_t began;
    uint64_t ended;
  };
  struct Device {
    std::vector<Ended> ended;  // since the last place()
    // By class: +bytes at the first bucket a block is live in, -bytes past its last.
    std::map<RoleTracker::RoleClass, std::vector<int64_t>> steps;
  };
  void add(Device& d, RoleTracker::RoleClass role_class, uint64_t bytes, uint64_t began,
           uint64_t ended, const std::vector<uint64_t>& moments);

  std::unordered_map<uint64_t, Live> live_;
  std::map<int, Device> devices_;
};

}  // namespace gmt::analyzer
