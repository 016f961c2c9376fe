// SPDX-License-Identifier: Apache-2.0
// The model of one trace after replay: what every report prints, and nothing about how.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "analyzer/model/allocator/decode_ahead.h"
#include "analyzer/model/input/process_liveness.h"
#include "analyzer/model/roles/role.h"
#include "analyzer/model/views/views_model.h"
#include "format/api.h"
#include "format/memory_kind.h"
#include "format/records.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {

// Bytes of one kind of memory: live now (at the end of the trace, once replayed) and the most
// that were ever live at once.
struct KindUsage {
  uint64_t live_bytes = 0;
  uint64_t peak_bytes = 0;
};

// Allocations live at a device's peak that were made at one call stack.
struct PeakSite {
  uint32_t stack = 0;  // StackRecord id; 0 for allocations recorded without a stack
  uint64_t bytes = 0;
  uint64_t count = 0;
  // A caching allocator's (format::BlockAllocator) rows, where its block events replace its
  // segments: its users' live blocks by the stack of their allocation, or (`cache`, stack 0,
  // count its segments) what it held free then; -1 for driver allocations by the stack that
  // made them.
  int allocator = -1;
  bool cache = false;
  // A cache row of the segments taken while a CUDA graph was captured: its private pool's,
  // free to the allocator's count but only for the graph's replays.
  bool graph = false;
};

// One frame of a symbolized stack.
struct SiteFrame {
  std::string function;
  std::optional<std::string> file;
  std::optional<int> line;
  std::optional<std::string> module;
  // "native" | "python" | "attribution": the mark before Python frames taken from the thread
  // that called backward() (BackwardAttribution)
  std::string kind = "native";

  bool operator==(const SiteFrame&) const = default;
};

// A peak site with its stack symbolized.
struct ResolvedSite {
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::vector<SiteFrame> frames;  // leaf first; empty when the allocation had no stack
  int allocator = -1;             // as PeakSite's
  bool cache = false;
  bool graph = false;
  // Its bytes by role at the peak (RoleTracker's blocks of its stack, the cache, or an outside
  // allocation's owner); all 0 where the trace recorded no roles.
  std::array<uint64_t, kRoleCount> roles{};
};

// A framework's pool that the trace sees only from outside (hidden_pool.h): XLA's.
struct HiddenPool {
  std::string framework;            // "jax"
  uint64_t bytes = 0;               // the pool's share of the device's peak
  uint64_t allocations = 0;         // the driver allocations that hold it then
  bool preallocated = false;        // taken at once (XLA_PYTHON_CLIENT_PREALLOCATE not false)
  uint64_t device_total_bytes = 0;  // the device's memory, 0 when the sampler did not say
};

struct DeviceSummary {
  int device = -1;
  uint64_t peak_bytes = 0;  // high-water mark of device-resident bytes live on this device
  uint64_t peak_time_ns = 0;
  uint64_t live_bytes = 0;  // device-resident bytes live at the end of the trace
  uint64_t live_count = 0;  // allocations of any kind live at the end of the trace
  uint64_t alloc_count = 0;
  uint64_t free_count = 0;           // allocations ended by a free call
  uint64_t teardown_free_count = 0;  // allocations ended by their context's destruction
  uint64_t failed_alloc_count = 0;   // failed requests: a retry of one is not another
  std::map<format::MemoryKind, KindUsage> by_kind;  // every kind seen on this device
  uint64_t peak_record = 0;  // index of the record that first reached the peak
  // Device-resident bytes live at the peak, by stack, largest first; the largest, symbolized.
  std::vector<PeakSite> peak_sites;
  // The same bytes where a caching allocator reported its blocks at the peak: its segments'
  // rows give way to its live blocks by site and one row for its free cache (the rows still
  // add up to peak_bytes); empty when no allocator reported blocks on the device then.
  std::vector<PeakSite> peak_block_sites;
  std::vector<ResolvedSite> top_sites;  // of shown_peak_sites()
  // What the reports show at the peak: the blocks' rows where there are, else peak_sites.
  const std::vector<PeakSite>& shown_peak_sites() const {
    return peak_block_sites.empty() ? peak_sites : peak_block_sites;
  }
  // What the sampler said about the device: which GPU it is, and the views at the peak and at
  // the end; the phases open when the peak was first reached ("a > b", "" when none).
  DeviceIdentity identity;
  std::optional<ViewValues> views_at_peak;
  std::optional<ViewValues> views_at_exit;
  std::string peak_phase;
  // The device's bytes by role and module (RoleTracker) at the peak and at the end, where a
  // caching allocator reported its blocks; split_outside() has told the driver allocations
  // outside it apart (library or unknown).
  std::optional<RoleBreakdown> roles_at_peak;
  std::optional<RoleBreakdown> roles_at_exit;
  // Read from a summary, which keeps no stacks to work it out from: its trace's hidden pool.
  std::optional<HiddenPool> kept_hidden_pool;
  // A decode loop whose cache grows (the hooks' reports at exit): its last step run forward
  // through the allocator's model (allocator/decode_ahead.h), or why it was not.
  std::optional<allocator::DecodeAhead> decode_ahead;
  std::string decode_ahead_why_not;
  // The decode steps that ran out of memory (FailedAllocation::decode_ran_out()), in order: the
  // cache then, and the request that failed.
  struct DecodeRanOut {
    KvCacheLength cache;
    uint64_t request_bytes = 0;
  };
  std::vector<DecodeRanOut> decode_ran_out;
};

// An allocation freed this soon after it was made, by a free call, is a temporary: scratch
// space that a caching allocator or a pool could have reused.
inline constexpr uint64_t kTemporaryNs = 1'000'000;

// Size classes of a site's allocations: bucket b > 0 holds sizes in [2^(b-1), 2^b), bucket 0
// zero-byte allocations.
inline constexpr std::size_t kSizeBuckets = 65;

// Everything allocated at one call stack on one device (-1: host memory, unknown device), over
// the whole trace. Memory grows with the number of sites, not of events.
struct SiteStats {
  int device = -1;
  uint32_t stack = 0;
  uint64_t live_bytes = 0;           // any kind, live at the end once replayed
  uint64_t live_resident_bytes = 0;  // of those, device-resident (what a device's peak counts)
  uint64_t live_count = 0;
  uint64_t live_resident_count = 0;
  uint64_t torn_down_bytes = 0;  // ended by their context's destruction, never freed
  uint64_t torn_down_count = 0;
  uint64_t torn_down_resident_bytes = 0;
  uint64_t allocations = 0;
  uint64_t temporaries = 0;  // freed within kTemporaryNs of being made
  std::array<uint64_t, kSizeBuckets> size_histogram{};
  std::vector<uint64_t> live_samples;        // live_bytes at each of TraceSummary::sample_times
  std::vector<uint64_t> live_count_samples;  // live_count at the same points
  // Of the allocations live at the end, those a caching allocator reported as its segments
  // (block events, format 4.2): their bytes are told by the allocator's blocks instead.
  uint64_t framework_segment_bytes = 0;
  uint64_t framework_segment_count = 0;
  bool framework_segments = false;  // the site ever made a segment an allocator reported
};

// The blocks of one site of a caching allocator, from its block events (format 4.2): what its
// user asked for (a tensor), inside the allocator's segments.
struct BlockSiteStats {
  uint32_t allocator = 0;  // format::BlockAllocator
  int device = -1;
  uint32_t stack = 0;
  uint64_t live_bytes = 0;  // handed out and not freed, at the end once replayed
  uint64_t live_count = 0;
  uint64_t allocations = 0;
  std::vector<uint64_t> live_samples;  // live_bytes at each of TraceSummary::sample_times
  std::vector<uint64_t> live_count_samples;
};

// What a caching allocator held on one device, from its block events.
struct AllocatorUsage {
  uint32_t allocator = 0;  // format::BlockAllocator
  int device = -1;
  uint64_t allocated_bytes = 0;  // live blocks, at the end
  uint64_t reserved_bytes = 0;   // its segments, at the end
  uint64_t live_blocks = 0;
  uint64_t live_segments = 0;  // and runs of mapped pages (expandable segments)
  uint64_t peak_allocated_bytes = 0;
  uint64_t peak_reserved_bytes = 0;
  uint64_t block_events = 0;
  uint64_t ooms = 0;
};

// The key of a block site in TraceSummary::block_sites.
inline uint64_t block_site_key(uint32_t allocator, int device, uint32_t stack) {
  return static_cast<uint64_t>(allocator & 0xff) << 56 |
         static_cast<uint64_t>(static_cast<uint32_t>(device) & 0xffffff) << 32 | stack;
}

// The key of a site in TraceSummary::sites.
inline uint64_t site_key(int device, uint32_t stack) {
  return static_cast<uint64_t>(static_cast<uint32_t>(device)) << 32 | stack;
}

enum class LeakClass {
  kTeardown,      // never freed, released only by the destruction of its context
  kCached,        // live at the end, made by a framework's caching allocator: kept on purpose
  kLibraryCache,  // live at the end, made by a library that keeps it on purpose (cuBLAS's and
                  // cuDNN's workspaces, NCCL's buffers, XLA's preallocation)
  kProbableLeak,  // the site's live bytes kept growing through the trace: live at the end, or
                  // freed only at exit (a Python program's module teardown frees what it kept)
  kUnfreed,       // live at the end, none of the above
};

// Allocations of one site that were never freed, in one class.
struct LeakGroup {
  int device = -1;
  uint32_t stack = 0;
  LeakClass leak_class = LeakClass::kUnfreed;
  uint64_t bytes = 0;           // any kind
  uint64_t resident_bytes = 0;  // of those, device-resident
  uint64_t count = 0;
  double growth_bytes_per_s = 0;  // probable leaks: how fast the site's live bytes grew
  // A caching allocator's blocks (format::BlockAllocator) rather than driver allocations: its
  // users' live blocks by site, or (stack 0, class kCached) what it holds free; -1 otherwise.
  int allocator = -1;
  // A probable leak whose memory was freed only in the trace's last stretch (at exit): bytes
  // and count are what it held just before.
  bool freed_at_exit = false;
};

// Address space reserved (cuMemAddressReserve) at one call stack and never given back: no
// memory (what is mapped into it is counted where it was created), so in no leak or peak.
struct ReservationGroup {
  int device = -1;  // of the memory mapped into it (a reservation names none); -1: none mapped
  uint32_t stack = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
};

// A later attempt of a failed request (the same call, size and thread, nothing allocated
// between): a caching allocator frees its cache and asks again (PyTorch asks up to three times).
struct FailedRetry {
  uint64_t time_ns = 0;
  uint64_t released_bytes =
      0;  // device-resident bytes freed on the device since the attempt before
  uint32_t error = 0;
};

// A failed request, with the device's state when it last failed: its retries are folded into it.
struct FailedAllocation {
  uint64_t time_ns = 0;
  int device = -1;
  format::MemoryKind kind = format::MemoryKind::kDevice;
  format::Api api = format::Api::kUnknown;         // what the program called (cudaMalloc)
  format::Api driver_api = format::Api::kUnknown;  // the driver entry point it became
  uint64_t requested_bytes = 0;
  uint32_t error = 0;
  uint32_t stack = 0;                // where the failed call was made
  uint64_t live_bytes = 0;           // device-resident bytes live on the device at the last attempt
  std::vector<PeakSite> holders;     // the largest sites live on the device then, largest first
  std::vector<FailedRetry> retries;  // after the first attempt (time_ns), in order
  uint64_t released_bytes() const {
    uint64_t total = 0;
    for (const FailedRetry& r : retries) total += r.released_bytes;
    return total;
  }
  // A caching allocator that reported the failure (an OOM block event, format 4.2): which
  // (format::BlockAllocator; -1 none), the size it was asked for, what its segments held free
  // then and the largest free range in any one of them. The holders are then its live blocks
  // by site and its cache (PeakSite::cache) in place of its segments. `fragmented`: the cache
  // held the request's bytes, but in no one free block.
  int allocator = -1;
  uint64_t allocator_requested_bytes = 0;
  uint64_t cache_free_bytes = 0;
  uint64_t largest_free_block_bytes = 0;
  bool fragmented = false;
  // The other views, from the first sample the sampler took after the failure (it samples at
  // once when an allocation fails); empty when it took none.
  std::optional<ViewValues> views;
  // What the device held then by role and module, where a caching allocator reported the failure
  // (RoleTracker, as at the peak).
  std::optional<RoleBreakdown> roles;

  // A decode step that ran out: the failure came from a caching allocator inside the decode
  // loop's next step (RoleBreakdown::in_decode_step) while a cache that grows was live; the
  // cache then and the allocator's request (the cudaMalloc is its segment). None otherwise.
  std::optional<DeviceSummary::DecodeRanOut> decode_ran_out() const {
    if (allocator < 0 || !roles || !roles->in_decode_step || !roles->kv_cache ||
        roles->kv_cache->capacity != 0 || (*roles)[Role::kKvCache].bytes == 0)
      return std::nullopt;
    return DeviceSummary::DecodeRanOut{*roles->kv_cache, allocator_requested_bytes > 0
                                                             ? allocator_requested_bytes
                                                             : requested_bytes};
  }
  // The driver's free memory (cuMemGetInfo) right after the failure, when it was sampled.
  std::optional<uint64_t> driver_free_bytes() const {
    if (!views || !views->driver_used_bytes || !views->driver_total_bytes) return std::nullopt;
    return *views->driver_total_bytes - *views->driver_used_bytes;
  }
  // What other processes held on the device then (NVML), when it was sampled.
  std::optional<uint64_t> other_processes_bytes() const {
    return views ? views->other_processes_bytes() : std::nullopt;
  }
};

// Live bytes per device over time, in buckets of `resolution_ns` from the trace's start: each
// bucket holds the most that was live during it, so that no peak is smoothed away.
struct DeviceTimeline {
  std::vector<uint64_t> resident;  // device-resident bytes (what the peak counts)
  std::map<format::MemoryKind, std::vector<uint64_t>> by_kind;
  // The caching allocators' figures from their block events (format 4.2), all allocators of the
  // device together: the most their users held (allocated) and the most their segments held
  // (reserved) during each bucket; empty when no allocator reported blocks on the device.
  std::vector<uint64_t> framework_allocated;
  std::vector<uint64_t> framework_reserved;
};
struct Timeline {
  uint64_t resolution_ns = 0;  // 0: no timeline was asked for
  std::map<int, DeviceTimeline> devices;
};

enum class TraceEnd {
  kExited,     // the End record was written: the process exited normally
  kCut,        // every record is complete, but the process never reached exit (killed, _exit)
  kTruncated,  // the file is cut short: the records of the chunks it cuts are left out
  kCorrupt,    // damaged chunks: their records are left out, all the others are read
  kStopped,    // the recorder stopped (full disk, file-size limit, descriptor taken): every
               // record up to then is here; stop_reason says why, stop_time_ns when
  kExec,       // the process replaced itself with exec (exec_program): every record is here
  kFailed,     // recording failed before its first record: the file holds only its header
  kRunning,    // no End record yet, and the process that writes it still runs (pid and start:
               // process_liveness.h): every record up to now is here. Never stored: a summary
               // says kCut, and whether it still runs is asked again when it is read
};

// How the JSON outputs name a trace's end: "exited", "cut", "truncated", "corrupt", "stopped",
// "exec", "failed", "running".
inline const char* end_name(TraceEnd end) {
  switch (end) {
    case TraceEnd::kExited:
      return "exited";
    case TraceEnd::kCut:
      return "cut";
    case TraceEnd::kTruncated:
      return "truncated";
    case TraceEnd::kCorrupt:
      return "corrupt";
    case TraceEnd::kStopped:
      return "stopped";
    case TraceEnd::kExec:
      return "exec";
    case TraceEnd::kFailed:
      return "failed";
    case TraceEnd::kRunning:
      return "running";
  }
  return "unknown";
}

// A phase that `peak --phase` follows: its runs and what was live as it first opened. At
// namespace scope, not nested, so that std::optional sees its default constructor (clang).
struct PhaseWindow {
  std::string name;
  uint64_t runs = 0;
  uint64_t first_start_ns = 0;
  std::map<int, uint64_t> live_at_first_start;  // per device seen by then
  uint64_t live_at_start(int device) const {    // 0 for a device first seen later
    const auto live = live_at_first_start.find(device);
    return live == live_at_first_start.end() ? 0 : live->second;
  }
};

// The signal that ended the process, as the preload's handler recorded it (format 4.10).
struct FatalSignal {
  uint32_t number = 0;
  int32_t code = 0;      // si_code
  uint64_t address = 0;  // the faulting address (SIGSEGV, SIGBUS, SIGILL, SIGFPE)
  uint64_t sender = 0;   // the pid that sent it; 0 when none did (a fault)
  uint64_t time_ns = 0;
  uint64_t thread = 0;
};

struct TraceSummary {
  std::string path;
  uint16_t format_major = 0;  // the trace format version its header names
  uint16_t format_minor = 0;
  uint64_t pid = 0;
  uint64_t ppid = 0;
  std::string host;
  std::vector<std::string> argv;
  uint64_t wall_start_ns = 0;
  uint64_t mono_start_ns = 0;    // CLOCK_MONOTONIC when tracing began (0: not known)
  uint64_t duration_ns = 0;      // time of the last record
  uint64_t events = 0;           // allocation, free, failed-allocation, map and unmap records
  uint64_t unmatched_frees = 0;  // frees of addresses this trace never saw allocated
  uint64_t failed_host_alloc_count = 0;
  TraceEnd end = TraceEnd::kCut;
  uint64_t end_offset = 0;  // the first place something was left out (kTruncated, kCorrupt)
  std::string end_reason;   // also why recording stopped (kStopped) or failed (kFailed)
  // From the recording's own notes (format/recording_end.h): when and why it stopped, the
  // program an exec started (empty if none, or if the exec failed) and when, and how many
  // records signal handlers' hooks could not write.
  uint64_t stop_time_ns = 0;
  std::string stop_reason;
  std::string exec_program;
  uint64_t exec_time_ns = 0;
  uint64_t dropped_records = 0;
  // A bounded trace's kept history (format 4.3): from when it is complete, what was carried.
  format::HistoryWindow history;
  std::vector<std::string> problems;  // everything left out, where and why
  std::map<int, DeviceSummary> devices;
  // Memory that belongs to no device: pinned and registered host memory, address reservations.
  std::map<format::MemoryKind, KindUsage> process_kinds;
  // For symbolizing: the modules the process had loaded and the stacks it recorded.
  std::vector<format::ModuleRecord> modules;
  std::unordered_map<uint32_t, std::vector<uint64_t>> stacks;
  // How many ModuleRecords came before each StackRecord: a stack is symbolized with the modules
  // loaded when it was recorded, not with a library loaded later at the same addresses.
  std::unordered_map<uint32_t, std::size_t> stack_module_epoch;
  std::unordered_map<uint32_t, std::vector<uint64_t>> python_stacks;  // code id << 32 | line
  struct PythonCode {
    std::string name;
    std::string file;
  };
  std::unordered_map<uint32_t, PythonCode> python_code;
  // The code id of the frame that marks Python frames taken from another thread (a block of an
  // autograd thread's under the frames of the thread that called backward(), BackwardAttribution).
  static constexpr uint32_t kAttributionCode = 0xFFFFFFFF;
  std::vector<std::string> symbolization_warnings;
  std::map<uint64_t, std::string> threads;  // tid -> name, for the threads that recorded
  std::vector<std::string>
      env;                  // the job's variables, "NAME=value" (RANK, CUDA_VISIBLE_DEVICES...)
  std::optional<int> rank;  // from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID
  std::vector<std::string> notes;  // what the recording says about itself (a missing view...)
  uint64_t pools_created = 0;      // stream-ordered memory pools (cuMemPoolCreate)
  uint64_t pools_destroyed = 0;
  uint64_t pool_trims = 0;
  uint64_t view_samples = 0;       // the sampler's samples (framework reports not counted)
  bool from_summary = false;       // read from `summarize`'s file, which keeps no views
  std::vector<PhaseStats> phases;  // in order of first start
  // The last signal the preload's handler recorded (a signal that ends the process: it died of
  // it unless an End record came after), and the phases open at the trace's end.
  std::optional<FatalSignal> signal;
  std::vector<OpenAtEnd> open_at_end;
  // Among the traces read together (load_traces): how many execs of its process came before this
  // image, whose trace then began anew with the same pid (0: the process's first image, or one
  // whose earlier image was not read).
  uint32_t exec_image = 0;
  // The phase whose peak the devices' peaks are (Replay::peaks_in_phase()), once it was seen.
  std::optional<PhaseWindow> phase_window;
  // Whether the framework's hooks recorded scopes or tags (format 4.8): without them, roles are
  // unknown. Tags whose address was in no live block.
  bool roles_recorded = false;
  uint64_t role_tags_unmatched = 0;
  std::vector<PhaseMark> marks;

  // Records read, by type (the index of format::Record's alternative).
  std::array<uint64_t, std::variant_size_v<format::Record>> record_counts{};
  std::array<uint64_t, format::kMemoryKindCount> allocs_by_kind{};
  std::array<uint64_t, format::kMemoryKindCount> failures_by_kind{};
  // By the API the program called: the runtime's name when it went through one, else the
  // driver's.
  std::array<uint64_t, static_cast<std::size_t>(format::Api::kCount)> allocs_by_api{};
  std::array<uint64_t, static_cast<std::size_t>(format::Api::kCount)> frees_by_api{};
  std::unordered_map<uint64_t, SiteStats> sites;  // by site_key(device, stack)
  std::vector<uint64_t> sample_times;             // when SiteStats::live_samples were taken
  // Caching allocators' blocks by site (key: block_site_key), and their figures per device.
  std::map<uint64_t, BlockSiteStats> block_sites;
  std::vector<AllocatorUsage> allocators;
  // The caching allocators' block events, of every allocator and device.
  uint64_t block_events() const {
    uint64_t n = 0;
    for (const AllocatorUsage& a : allocators) n += a.block_events;
    return n;
  }
  std::vector<LeakGroup> leaks;                // by classify_leaks(), largest first
  std::vector<ReservationGroup> reservations;  // live at the end, largest first
  // Failed allocations in time order; past kFailuresKept only counted.
  static constexpr std::size_t kFailuresKept = 1000;
  std::vector<FailedAllocation> failures;
  uint64_t failures_not_kept = 0;
  Timeline timeline;

  bool truncated() const { return end == TraceEnd::kTruncated || end == TraceEnd::kCorrupt; }
};

// The process that wrote the trace, as process_liveness.h tells it.
inline ProcessIdentity process_identity(const TraceSummary& t) {
  return {t.host, t.pid, t.mono_start_ns, t.wall_start_ns};
}

}  // namespace gmt::analyzer
