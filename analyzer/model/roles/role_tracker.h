// SPDX-License-Identifier: Apache-2.0
// Roles and modules of a caching allocator's blocks, from the framework's scopes and tags
// (format 4.8's Scope and Tag records) and the blocks' lifetimes: each block remembers where it
// was made (a module's forward, backward, an optimizer's step, or none of them) and how its life
// ended against that scope; a role is decided only once the whole trace is read, so that a
// block at the peak gets the role its whole life gives it. Memory grows with live blocks and the
// blocks held by the latest snapshot of each device, never with the events.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/model/containers/flat_hash_map.h"
#include "analyzer/model/roles/role.h"
#include "analyzer/model/trace_summary.h"
#include "format/records.h"

namespace gmt::analyzer {

class RoleTracker {
 public:
  void on(const format::NameRecord& r) { names_[r.id] = r.text; }
  void on(const format::ScopeRecord& r);
  void on(const format::TagRecord& r);
  // A block handed out (kAlloc) or freed (kFreeRequested), of any caching allocator.
  void on_block(const format::BlockRecord& r);

  // Whether the trace carried any scope or tag: without them every block's role is unknown.
  bool recorded() const { return recorded_; }
  uint64_t unmatched_tags() const { return unmatched_tags_; }
  // Whether a ScopeRecord of kind kProgramEnd has come: the moment "at exit" is taken at.
  bool program_ended() const { return program_ended_; }
  // Whether a CUDA graph's capture is open on `thread`: a segment its allocator takes now is
  // the capture's private pool's.
  bool capturing(uint64_t thread) const;
  // Whether the live block at `address` was made by a CUDA graph's capture (on its thread, or
  // for a backward begun inside it).
  bool captured(uint64_t address) const;

  // The blocks live now (address, size), to be resolved at the end: replaces the device's
  // snapshot `slot` (0: the peak) and keeps its blocks' facts until then. `rows` are the
  // device's rows now (BlockReplay::rows_on): their cache and driver rows join the table.
  struct Block {
    uint64_t address;
    uint64_t size;
    uint32_t stack;  // of its allocation (BlockRecord's, as its site has it)
  };
  void snapshot(int device, int slot, const std::vector<Block>& blocks,
                const std::vector<PeakSite>& rows);
  // The table of a snapshot, with every block's role as its whole life decided it.
  std::optional<RoleBreakdown> resolve(int device, int slot) const;

  // What decides a block's role, packed: its tag, where it was made (a CUDA graph's capture
  // before any other scope), how its life ended against
  // that scope, whether a root forward began while it lived, whether it is freed, and whether
  // the scope that made it was still running at the moment the class is of. A role is the
  // class's only once the whole trace is read (role_of_class()), so a timeline keeps classes.
  using RoleClass = uint32_t;
  // The class of the block the last block record ended (its free, or an allocation at its
  // address whose free was not recorded), until the next block record; none if it ended none.
  std::optional<RoleClass> last_ended() const { return last_ended_; }
  // The block the last allocation made: the module whose forward made it (Name id, as outline
  // forwards have it too; 0: no module's) and the root forward it was made in (its scope
  // instance plus one; 0: none). For what-ifs that act on a module's blocks (checkpointing).
  struct Made {
    uint32_t module = 0;
    uint32_t forward = 0;
  };
  Made last_made() const { return last_made_; }
  // A Name record's text; empty when none came.
  const std::string& name(uint32_t id) const;
  // Each live block's address and class now.
  template <class F>
  void for_each_live(F&& f) const {
    live_.for_each([&](uint64_t address, uint32_t i) { f(address, class_of(facts_[i])); });
  }
  // The role of a class, by what the trace has told so far (all of it, once it is read).
  Role role_of_class(RoleClass c) const;
  // The same by the block's life alone, whatever was running at the class's moment.
  Role settled_role(RoleClass c) const;

 private:
  enum class Where : uint8_t { kNone, kForward, kBackward, kOptimizer, kCudaGraph };
  enum class End : uint8_t { kLive, kInside, kByBackward, kAfter };
  // The work a block belongs to, still running at a moment (a failure, the peak, the trace's
  // end): what its life so far says of it when its end is not known or tells nothing (the
  // forward was cut short by the failure, the program died in it).
  enum class Running : uint8_t {
    kNo,
    kForwardRecording,  // made in a root forward still running, autograd recording
    kForwardNoGrad,     // made in a root forward still running under no_grad or inference_mode
    kKeptForBackward,   // made in a forward, not yet released while a backward runs
    kBackward,          // made in a backward still running
  };
  static constexpr uint8_t kUntagged = 0xFF;
  struct Facts {
    Where where = Where::kNone;
    End end = End::kLive;
    uint8_t tag = kUntagged;      // format::TagRole
    uint32_t instance = 0;        // the outermost scope of its kind it was made in
    uint32_t module = 0;          // Name id of the innermost module; for tags, the tensor's name
    uint64_t forward_epoch = 0;   // root forwards begun before it was made
    bool forward_during = false;  // a root forward began while it lived (set when it ended)
    // Made in a root forward: that root (Name id) and its forwards begun when it was made;
    // whether another forward of the same root began while it lived (set when it ended).
    uint32_t root = 0;
    uint32_t root_epoch = 0;
    uint32_t backwards = 0;  // backwards begun before it was made
    bool root_forward_during = false;
    bool output = false;  // a root forward returned it (TagRole::kOutput)
    uint64_t site = 0;    // made in a root forward: its stack << 32 | its order at that stack
    uint32_t pins = 0;    // snapshots holding it
    bool freed = false;
    uint64_t size = 0;
    // PyTorch's cuBLAS or cuBLASLt workspace by its size and place (workspace_sized()), not
    // freed before the program's end.
    bool workspace = false;
  };
  struct Open {
    Where where;
    uint32_t name;
    uint32_t instance;  // its outermost scope of the same kind on the thread
  };
  // A root module's forward: its blocks in order, by stack, and the module that made each. A
  // forward reported whole leaves them to its root's next forwards reported in outline
  // (ScopeAction::kEnterOutline), whose blocks are told by the same (stack, order).
  struct RootForward {
    uint32_t root = 0;  // Name id
    bool outline = false;
    uint64_t ordinal = 0;                            // root forwards begun before it, and it
    std::unordered_map<uint32_t, uint32_t> made;     // stack -> blocks made so far
    std::unordered_map<uint64_t, uint32_t> modules;  // stack << 32 | order -> module
  };
  // The module of a block made in `forward` at `stack`.
  uint32_t module_in(RootForward& forward, uint32_t stack, uint32_t innermost);
  struct Snapshot {
    struct Held {
      uint32_t facts;
      uint64_t bytes;
      uint32_t stack;
    };
    std::vector<Held> blocks;
    std::vector<Running> running;  // each block's, at the snapshot's moment
    uint64_t unknown_blocks = 0;   // blocks with no facts (made before)
    uint64_t unknown_count = 0;
    uint64_t cache_bytes = 0;
    uint64_t cache_count = 0;
    uint64_t graph_cache_bytes = 0;  // free in CUDA graphs' private pools: the graphs'
    uint64_t graph_cache_count = 0;
    std::vector<RoleBreakdown::Outside> outside;
    std::optional<KvCacheLength> kv_cache;
    std::optional<uint64_t> step_bytes;
    bool in_decode_step = false;  // decode_step_open() then
  };

  Running running_now(const Facts& f) const;
  // Whether the next forward of the root that made it began while it lived, with no backward
  // between.
  bool root_forward_during(const Facts& f) const;
  RoleClass class_of(const Facts& f) const { return class_of(f, running_now(f)); }
  RoleClass class_of(const Facts& f, Running running) const;
  void mark_no_grad(const std::vector<Open>& open);
  // The innermost CUDA graph capture open among a thread's scopes; none where none is.
  static const Open* capture_in(const std::vector<Open>& open);
  uint32_t new_facts();
  void unpin(Snapshot& s);
  std::string module_of(const Facts& f, Role role) const;

  std::unordered_map<uint32_t, std::string> names_;
  std::unordered_map<uint64_t, std::vector<Open>> threads_;  // open scopes by thread
  std::vector<bool> instance_open_;                          // by instance id (from 0)
  // By instance id: a root forward that autograd does not record (ScopeKind::kNoGrad in it).
  std::vector<bool> instance_no_grad_;
  // The decode loop's next step: a root forward under no_grad, of the root whose forward ended
  // right before the last cache report, and the first begun since that report.
  bool decode_step_open() const;
  uint64_t root_forwards_begun_ = 0;
  uint32_t last_ended_root_ = 0;  // Name id of the root whose forward ended last
  uint32_t kv_report_root_ = 0;   // last_ended_root_ at the last cache report
  uint64_t kv_report_begun_ = 0;  // root_forwards_begun_ then
  std::unordered_map<uint32_t, RootForward> root_forwards_;  // open ones, by instance
  // By root (Name id): the modules of its last forward reported whole.
  std::unordered_map<uint32_t, std::unordered_map<uint64_t, uint32_t>> root_modules_;
  struct OpenBackward {
    uint32_t instance;
    // The CUDA graph capture open on its thread when it began: backward's work is captured on
    // the capture's stream, so the blocks the autograd engine's threads take for it are the
    // graph's private pool's.
    std::optional<uint32_t> capture;
  };
  std::vector<OpenBackward> open_backwards_;  // any thread
  uint64_t forward_epoch_ = 0;
  // By root (Name id), each of its forwards' (in order) backwards begun before it: how many
  // forwards it began, and whether a backward came between a block and the next forward (then
  // what lives across is no state of an inference).
  std::unordered_map<uint32_t, std::vector<uint32_t>> root_forward_backwards_;
  uint32_t backwards_ = 0;  // backwards begun
  // By root, the sites (Facts::site) of its forwards whose blocks its later forwards found kept
  // (state) or tagged as a key-value cache: a block made there and not yet kept into a later
  // forward (the last forward's, one still running) is the same, by where it was made.
  enum class SiteHint : uint8_t { kNone, kState, kKvCache };
  std::unordered_map<uint32_t, std::unordered_map<uint64_t, SiteHint>> site_hints_;
  SiteHint site_hint(const Facts& f) const;
  std::optional<KvCacheLength> kv_cache_;  // the hooks' latest report
  // While root forwards run (any thread): the bytes made less the bytes freed since the first
  // began, and the most of it; the last one's most once they all ended (RoleBreakdown's).
  int64_t step_net_ = 0;
  int64_t step_high_ = 0;
  std::optional<uint64_t> last_step_bytes_;
  std::vector<Facts> facts_;
  std::vector<uint32_t> free_facts_;
  FlatHashMap<uint64_t, uint32_t, AddressHash> live_;  // address -> facts index
  std::map<std::pair<int, int>, Snapshot> snapshots_;
  bool recorded_ = false;
  bool program_ended_ = false;
  // Whether the framework tagged any gradient: then a block that backward made and that outlived
  // it but was never tagged is no gradient (a library's workspace, a kept graph's buffer).
  bool gradients_tagged_ = false;
  uint64_t unmatched_tags_ = 0;
  std::optional<RoleClass> last_ended_;
  Made last_made_;
  // By thread that made a block of a cuBLAS workspace's size: the address of its block taken
  // for cuBLASLt's workspace, while it lives (0: none yet).
  std::unordered_map<uint64_t, uint64_t> cublas_lt_workspaces_;
};

}  // namespace gmt::analyzer
