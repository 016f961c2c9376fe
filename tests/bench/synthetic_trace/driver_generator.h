// SPDX-License-Identifier: Apache-2.0
// The default trace (no --framework-blocks): driver allocations as the recorder writes them, from
// --threads threads on --devices devices. What it models is a caching allocator's steady state:
// after a ramp up to L (--live) live allocations, allocations and frees alternate around L,
// addresses come back from per-size free lists, every allocation names one of S (--stacks)
// stacks (defined, as the recorder does, by the thread that first uses it, just before), and a
// few VMM cycles, failed allocations and periodic view samples (from a sampler thread of its own)
// are mixed in. --events N: until at least N events.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "tests/bench/synthetic_trace/options.h"
#include "tests/bench/synthetic_trace/rng.h"
#include "tests/bench/synthetic_trace/trace_writer.h"

namespace gmt::bench {

// An allocation in use; freed, its address goes back to its device's free list of its size class.
struct Live {
  uint64_t address;
  int device;
  uint8_t size_class;
};

// A VMM cycle in progress: reservation, physical handle, mapping.
struct VmmBlock {
  uint64_t reservation;
  uint64_t handle;
  uint64_t size;
  int device;
};

// Writes the trace of the file's comment to the options' output.
class Generator {
 public:
  explicit Generator(const Options& o);

  void run();

  uint64_t file_size() const { return file_.size(); }
  uint64_t events() const { return events_; }

 private:
  Writer& thread() { return writers_[rng_.below(o_.threads)]; }
  Writer& sampler() { return writers_.back(); }
  Writer& stamp(Writer& w);
  void advance_clock() { now_ += 200 + rng_.below(1800); }

  void prologue();
  void epilogue();
  void phase();
  bool wants_alloc();
  uint8_t pick_size_class();
  uint32_t pick_stack(Writer& w);
  void allocate();
  void free_one();
  void failed_allocation();
  void vmm_step();
  void sample();

  const Options o_;
  Rng rng_;
  TraceFile file_;
  std::vector<Writer> writers_;
  std::vector<Live> live_;
  std::vector<std::vector<uint64_t>> free_lists_;  // by device and size class
  std::vector<uint64_t> next_address_;             // by device
  std::vector<bool> stack_defined_;
  std::deque<VmmBlock> vmm_;
  uint64_t vmm_serial_ = 0;
  bool phase_open_ = false;
  uint64_t weight_total_ = 0;
  uint64_t now_ = 1000;
  uint64_t events_ = 0;
};

}  // namespace gmt::bench
