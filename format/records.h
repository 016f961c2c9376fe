// SPDX-License-Identifier: Apache-2.0
// Every record of the trace, defined once. Each record lists its fields in `fields()`, a template
// that the encoder and the decoder both walk, so writer and reader cannot disagree on a layout.
// The on-disk encoding of each field type is described in format/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "format/api.h"
#include "format/memory_kind.h"

namespace gmt::format {

// Values are part of the file format: append only, never renumber.
enum class RecordType : uint8_t {
  kProcessInfo = 1,
  kAlloc = 2,
  kFree = 3,
  kAllocFailed = 4,
  kEnd = 5,
  kContext = 6,
  kContextDestroyed = 7,
  kMap = 8,
  kUnmap = 9,
  kRetainHandle = 10,
  kStack = 11,
  kModule = 12,
  kPythonCode = 13,
  kThread = 14,
  kDevice = 15,
  kSample = 16,
  kName = 17,
  kPhase = 18,
  kNote = 19,
  kPool = 20,
  kBlock = 21,
  kCheckpoint = 22,
  kCarried = 23,
  kCarriedBlock = 24,
  kCarriedVmm = 25,
  kCarriedPhase = 26,
  kAllocatorSettings = 27,
  // Not an alternative of Record: the reader gives it as the Block record it completes (4.7).
  kBlockFreedAtOnce = 28,
  kScope = 29,
  kTag = 30,
  kSignal = 31,
};

// The most payload bytes a record of integer fields can take: every field as a 10-byte varint.
// A record with strings or lists has no such bound (no overload here) and declares kMaxBytes.
struct FieldBound {
  std::size_t bytes = 0;
  template <class T>
  constexpr void u64(const char*, const T&) {
    bytes += 10;
  }
  template <class T>
  constexpr void u32(const char*, const T&) {
    bytes += 10;
  }
  template <class T>
  constexpr void i32(const char*, const T&) {
    bytes += 10;
  }
  template <class T>
  constexpr void time(const char*, const T&) {
    bytes += 10;
  }
  template <class T>
  constexpr void address(const char*, const T&) {
    bytes += 10;
  }
  template <class T>
  constexpr void kind(const char*, const T&) {
    bytes += 10;
  }
  template <class T>
  constexpr void api(const char*, const T&) {
    bytes += 10;
  }
  template <class T>
  constexpr void public_api(const char*, const T&) {
    bytes += 10;
  }
};

// The type and length varints in front of every record's payload, at most.
inline constexpr std::size_t kMaxFrameHeaderBytes = 2 * 10;

// The most payload bytes a record of integer fields can take.
template <class R>
constexpr std::size_t max_payload_bytes() {
  R record{};
  FieldBound bound;
  R::fields(record, bound);
  return bound.bytes;
}

// The most bytes a framed record can take: its declared kMaxBytes, else its frame header and
// the bound of its fields. The writer encodes into that much room, so an encoding can never
// be cut short.
template <class R>
constexpr std::size_t max_record_bytes() {
  if constexpr (requires { R::kMaxBytes; }) {
    return R::kMaxBytes;
  } else {
    return kMaxFrameHeaderBytes + max_payload_bytes<R>();
  }
}

// Written once, first, when the process starts being traced.
struct ProcessInfoRecord {
  static constexpr RecordType kType = RecordType::kProcessInfo;
  // The most bytes of the command line it holds: a record must fit one chunk, and a longer
  // command line is shortened (its last argument says by how much), never the trace lost.
  static constexpr std::size_t kArgvBytes = 16384;
  uint64_t pid = 0;
  uint64_t ppid = 0;
  uint64_t wall_start_ns = 0;  // Unix time when tracing started.
  uint64_t mono_start_ns = 0;  // CLOCK_MONOTONIC then; event times count from here.
  std::string host;
  std::vector<std::string> argv;
  // "NAME=value" for the variables that place the process in a multi-process job (RANK,
  // LOCAL_RANK, WORLD_SIZE, ..., CUDA_VISIBLE_DEVICES), those that are set.
  std::vector<std::string> env;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.u64("pid", r.pid);
    v.u64("ppid", r.ppid);
    v.u64("wall_start_ns", r.wall_start_ns);
    v.u64("mono_start_ns", r.mono_start_ns);
    v.str("host", r.host);
    v.str_list("argv", r.argv);
    v.str_list("env", r.env);
  }
};

// A successful allocation, stamped after the real call returned.
struct AllocRecord {
  static constexpr RecordType kType = RecordType::kAlloc;
  uint64_t time_ns = 0;  // since ProcessInfoRecord::mono_start_ns
  uint64_t thread = 0;   // kernel thread id: from the chunk the record is in, not encoded
  int32_t device = -1;   // CUDA ordinal in this process; -1 when unknown or host memory
  MemoryKind kind = MemoryKind::kDevice;
  Api api = Api::kUnknown;         // the driver entry point that ran
  Api public_api = Api::kUnknown;  // the runtime API the program called, when it was one (3.1)
  uint64_t address = 0;            // for kVmmPhysical the allocation handle, for kArray the CUarray
  uint64_t size = 0;
  uint32_t context = 0;  // ContextRecord id of the context it was made in; 0 when none
  uint32_t stack = 0;    // StackRecord id of where it was made; 0 when not recorded

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.kind("kind", r.kind);
    v.api("api", r.api);
    v.address("address", r.address);
    v.u64("size", r.size);
    v.u32("context", r.context);
    v.u32("stack", r.stack);
    v.public_api("public_api", r.public_api);
  }
};

// A free, stamped before the real call runs so that a concurrent allocation reusing the address
// always comes after it in the trace. The analyzer finds what is freed by address.
struct FreeRecord {
  static constexpr RecordType kType = RecordType::kFree;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  Api api = Api::kUnknown;         // the driver entry point that ran
  Api public_api = Api::kUnknown;  // the runtime API the program called, when it was one (3.1)
  uint64_t address = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.api("api", r.api);
    v.address("address", r.address);
    v.public_api("public_api", r.public_api);
  }
};

// An allocation the driver refused (out of memory above all), with what was asked for.
struct AllocFailedRecord {
  static constexpr RecordType kType = RecordType::kAllocFailed;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  int32_t device = -1;
  MemoryKind kind = MemoryKind::kDevice;
  Api api = Api::kUnknown;         // the driver entry point that ran
  Api public_api = Api::kUnknown;  // the runtime API the program called, when it was one (3.1)
  uint64_t size = 0;
  uint32_t error = 0;  // the CUresult the program saw
  uint32_t stack = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.kind("kind", r.kind);
    v.api("api", r.api);
    v.u64("size", r.size);
    v.u32("error", r.error);
    v.u32("stack", r.stack);
    v.public_api("public_api", r.public_api);
  }
};

// Written when the process exits normally. Records may still follow it (exit-time frees run
// after our finalizer); its absence means the process died or called _exit.
struct EndRecord {
  static constexpr RecordType kType = RecordType::kEnd;
  uint64_t time_ns = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
  }
};

// A context seen for the first time: allocations name it by `id`, a small number, rather than
// by its 8-byte handle. Ids are never reused within a trace, even when a handle is.
struct ContextRecord {
  static constexpr RecordType kType = RecordType::kContext;
  uint64_t time_ns = 0;
  uint32_t id = 0;
  uint64_t handle = 0;
  int32_t device = -1;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("id", r.id);
    v.u64("handle", r.handle);
    v.i32("device", r.device);
  }
};

// A context is being destroyed (cuCtxDestroy, a primary context reset or its last release):
// everything still allocated in it is freed at once. Stamped before the real call.
struct ContextDestroyedRecord {
  static constexpr RecordType kType = RecordType::kContextDestroyed;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  uint32_t id = 0;
  Api api = Api::kUnknown;         // the driver entry point that ran
  Api public_api = Api::kUnknown;  // the runtime API the program called, when it was one (3.1)

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("id", r.id);
    v.api("api", r.api);
    v.public_api("public_api", r.public_api);
  }
};

// cuMemMap: `size` bytes of the physical allocation `handle`, from `offset`, at `address`.
struct MapRecord {
  static constexpr RecordType kType = RecordType::kMap;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  int32_t device = -1;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
  uint64_t handle = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.address("address", r.address);
    v.u64("size", r.size);
    v.u64("offset", r.offset);
    v.u64("handle", r.handle);
  }
};

// cuMemUnmap of [address, address + size): every mapping inside the range ends. Stamped before.
struct UnmapRecord {
  static constexpr RecordType kType = RecordType::kUnmap;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  uint64_t address = 0;
  uint64_t size = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.address("address", r.address);
    v.u64("size", r.size);
  }
};

// cuMemRetainAllocationHandle: one more reference to a physical allocation, which then needs
// one more cuMemRelease before its memory can go.
struct RetainHandleRecord {
  static constexpr RecordType kType = RecordType::kRetainHandle;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  uint64_t handle = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u64("handle", r.handle);
  }
};

// A call stack seen for the first time: raw return addresses, innermost first (the first one is
// the caller of the CUDA entry point). Written before any record that names its id.
struct StackRecord {
  static constexpr RecordType kType = RecordType::kStack;
  static constexpr std::size_t kMaxBytes = 8192;
  static constexpr std::size_t kMaxFrames = 256;
  uint64_t time_ns = 0;
  uint32_t id = 0;
  std::vector<uint64_t> frames;
  // Python frames of the thread when it held the GIL, innermost first: PythonCodeRecord id in
  // the high 32 bits, line number in the low 32.
  std::vector<uint64_t> python;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("id", r.id);
    v.address_list("frames", r.frames);
    v.address_list("python", r.python);
  }
};

// A Python code object (a function) seen for the first time in a stack.
struct PythonCodeRecord {
  static constexpr RecordType kType = RecordType::kPythonCode;
  static constexpr std::size_t kMaxBytes = 8192;
  uint64_t time_ns = 0;
  uint32_t id = 0;
  std::string name;  // qualified name where Python has one (3.11+)
  std::string file;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("id", r.id);
    v.str("name", r.name);
    v.str("file", r.file);
  }
};

// A loaded module (the program, a shared library), for symbolizing addresses offline: where it
// was in memory and which file it was, by path and GNU build-id.
struct ModuleRecord {
  static constexpr RecordType kType = RecordType::kModule;
  static constexpr std::size_t kMaxBytes = 8192;
  uint64_t time_ns = 0;
  std::string path;
  uint64_t load_base = 0;  // what dl_iterate_phdr calls dlpi_addr
  uint64_t start = 0;      // [start, end): the module's loaded segments
  uint64_t end = 0;
  std::string build_id;  // lowercase hex, empty when the module has none

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.str("path", r.path);
    v.u64("load_base", r.load_base);
    v.u64("start", r.start);
    v.u64("end", r.end);
    v.str("build_id", r.build_id);
  }
};

// A thread that started writing: its kernel id and name (pthread_getname_np), at that moment.
struct ThreadRecord {
  static constexpr RecordType kType = RecordType::kThread;
  // Linux thread names are at most 15 bytes (TASK_COMM_LEN); the writer cuts longer ones.
  static constexpr std::size_t kMaxBytes = 128;
  uint64_t time_ns = 0;
  uint64_t tid = 0;
  std::string name;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u64("tid", r.tid);
    v.str("name", r.name);
  }
};

// A device the sampler looked at: which physical GPU a CUDA ordinal of this process is, so that
// traces of processes with different CUDA_VISIBLE_DEVICES can be matched, and how NVML names it.
struct DeviceRecord {
  static constexpr RecordType kType = RecordType::kDevice;
  static constexpr std::size_t kMaxBytes = 512;
  uint64_t time_ns = 0;
  int32_t device = -1;       // CUDA ordinal in this process
  std::string pci_bus_id;    // as the driver writes it, "0000:17:00.0"; empty if unknown
  int32_t nvml_index = -1;   // NVML's index of the same GPU; -1 when NVML does not know it
  std::string name;          // the product name, from NVML
  uint64_t total_bytes = 0;  // device memory, from the driver or NVML; 0 if unknown

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.str("pci_bus_id", r.pci_bus_id);
    v.i32("nvml_index", r.nvml_index);
    v.str("name", r.name);
    v.u64("total_bytes", r.total_bytes);
  }
};

// Which view a SampleRecord field belongs to; a bit set in `present` means the value was read.
enum SampleField : uint32_t {
  kNvmlDeviceUsed = 1u << 0,
  kNvmlDeviceTotal = 1u << 1,
  kNvmlDeviceReserved = 1u << 2,
  kNvmlProcessUsed = 1u << 3,
  kNvmlOtherProcesses = 1u << 4,
  kDriverFree = 1u << 5,
  kDriverTotal = 1u << 6,
  kPoolReserved = 1u << 7,
  kPoolUsed = 1u << 8,
  kGraphReserved = 1u << 9,
  kGraphUsed = 1u << 10,
  kFrameworkAllocated = 1u << 11,
  kFrameworkReserved = 1u << 12,
};

// Why a sample was taken.
enum class SampleReason : uint8_t {
  kPeriodic = 0,
  kHighWater = 1,    // just after the process's tracked device bytes reached a new high
  kFailedAlloc = 2,  // just after an allocation failed
  kFramework = 3,    // the framework view, pushed by the program (gpumemtrace_framework_sample)
  kFirst = 4,        // when sampling started
  kLast = 5,         // when sampling stopped (normal exit)
};

// What the other views said about one device at one moment. Fields whose bit is not set in
// `present` could not be read (no NVML, an old driver, a failed call) and are 0.
struct SampleRecord {
  static constexpr RecordType kType = RecordType::kSample;
  uint64_t time_ns = 0;
  int32_t device = -1;   // CUDA ordinal in this process
  uint32_t reason = 0;   // SampleReason
  uint32_t present = 0;  // SampleField bits
  // How long reading took: the values are from somewhere in [time_ns - read_ns, time_ns].
  uint64_t read_ns = 0;
  uint64_t nvml_device_used = 0;  // nvmlDeviceGetMemoryInfo: used by every process
  uint64_t nvml_device_total = 0;
  uint64_t nvml_device_reserved = 0;  // by the driver and firmware (nvmlDeviceGetMemoryInfo_v2)
  uint64_t nvml_process_used = 0;     // this process, from the running compute processes
  uint64_t nvml_other_processes = 0;  // the other processes listed on the device
  uint64_t driver_free = 0;           // cuMemGetInfo
  uint64_t driver_total = 0;
  uint64_t pool_reserved = 0;  // the device's current stream-ordered pool
  uint64_t pool_used = 0;
  uint64_t graph_reserved = 0;  // graph memory (cuDeviceGetGraphMemAttribute)
  uint64_t graph_used = 0;
  uint64_t framework_allocated = 0;  // e.g. torch.cuda.memory_allocated
  uint64_t framework_reserved = 0;   // e.g. torch.cuda.memory_reserved

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.u32("reason", r.reason);
    v.u32("present", r.present);
    v.u64("read_ns", r.read_ns);
    v.u64("nvml_device_used", r.nvml_device_used);
    v.u64("nvml_device_total", r.nvml_device_total);
    v.u64("nvml_device_reserved", r.nvml_device_reserved);
    v.u64("nvml_process_used", r.nvml_process_used);
    v.u64("nvml_other_processes", r.nvml_other_processes);
    v.u64("driver_free", r.driver_free);
    v.u64("driver_total", r.driver_total);
    v.u64("pool_reserved", r.pool_reserved);
    v.u64("pool_used", r.pool_used);
    v.u64("graph_reserved", r.graph_reserved);
    v.u64("graph_used", r.graph_used);
    v.u64("framework_allocated", r.framework_allocated);
    v.u64("framework_reserved", r.framework_reserved);
  }
};

// A string seen for the first time (a phase or domain name): records name it by `id`.
struct NameRecord {
  static constexpr RecordType kType = RecordType::kName;
  static constexpr std::size_t kMaxBytes = 4096;
  static constexpr std::size_t kMaxLength = 1024;  // longer names are cut
  uint64_t time_ns = 0;
  uint32_t id = 0;
  std::string text;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("id", r.id);
    v.str("text", r.text);
  }
};

enum class PhaseAction : uint8_t {
  kPush = 0,   // a nested range opens on `thread` (nvtxRangePush, gpumemtrace_phase_push)
  kPop = 1,    // the innermost range of `thread` in `domain` closes
  kStart = 2,  // a range that may end on another thread opens (nvtxRangeStart), named `range`
  kEnd = 3,    // range `range` closes
  kMark = 4,   // an instant
};

// A phase boundary: an NVTX range or mark, or one from gpumemtrace.h. The thread is encoded,
// not taken from the chunk: ranges opened before tracing started are written later by
// another thread.
struct PhaseRecord {
  static constexpr RecordType kType = RecordType::kPhase;
  uint64_t time_ns = 0;
  uint64_t tid = 0;     // not `thread`: that one the reader fills from the chunk
  uint32_t action = 0;  // PhaseAction
  uint32_t domain = 0;  // NameRecord id of the NVTX domain; 0 for the default domain
  uint32_t name = 0;    // NameRecord id; 0 for kPop and kEnd
  uint64_t range = 0;   // kStart/kEnd: the range's id

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u64("tid", r.tid);
    v.u32("action", r.action);
    v.u32("domain", r.domain);
    v.u32("name", r.name);
    v.u64("range", r.range);
  }
};

// Something the analyzer should tell the user about the recording itself: a view that could
// not be read and why ("nvml: libnvidia-ml.so.1 not found"), a limit that was hit.
struct NoteRecord {
  static constexpr RecordType kType = RecordType::kNote;
  static constexpr std::size_t kMaxBytes = 1024;
  uint64_t time_ns = 0;
  std::string text;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.str("text", r.text);
  }
};

// A stream-ordered memory pool created (after the call), destroyed (before it) or trimmed (after
// it, `bytes` = the minimum it was asked to keep). Pools hold freed stream-ordered memory for
// reuse; the sampler reads how much (pool_reserved/pool_used).
struct PoolRecord {
  static constexpr RecordType kType = RecordType::kPool;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  int32_t device = -1;             // the pool's device; -1 when not known (destroy, trim)
  Api api = Api::kUnknown;         // the driver entry point that ran
  Api public_api = Api::kUnknown;  // the runtime API the program called, when it was one (3.1)
  uint64_t pool = 0;               // the CUmemoryPool handle
  uint64_t bytes = 0;              // cuMemPoolTrimTo's minBytesToKeep

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.api("api", r.api);
    v.u64("pool", r.pool);
    v.u64("bytes", r.bytes);
    v.public_api("public_api", r.public_api);
  }
};

// What a caching allocator's block event says happened (`gpumemtrace.h`'s
// gpumemtrace_block_action; values are part of the file format).
enum class BlockAction : uint8_t {
  kAlloc = 0,          // a block handed out to the allocator's user
  kFreeRequested = 1,  // the user freed it; streams may still use it
  kFreeCompleted = 2,  // back in the allocator's cache, reusable
  kSegmentAlloc = 3,   // the allocator took a segment from CUDA
  kSegmentFree = 4,    // and gave it back
  kSegmentMap = 5,     // expandable segments: pages mapped
  kSegmentUnmap = 6,   // and unmapped
  kOom = 7,            // a request the allocator could not satisfy (`size`)
};

// Which allocator a BlockRecord comes from (`gpumemtrace.h`'s gpumemtrace_allocator).
enum class BlockAllocator : uint8_t {
  kOther = 0,
  kPytorch = 1,
  kCupy = 2,
};

// A caching allocator's block event (4.2), reported by the framework through
// gpumemtrace_framework_block(): a block inside the segments the allocator got from CUDA (which
// are AllocRecords of their own). Stamped when the call is made, on the calling thread; except a
// completed free that follows its own free request in the same chunk, with nothing between them
// and the same block (allocator, device, address, size, stream): that one may be written as a
// BlockFreedAtOnce record (4.7, type 28, no payload), which the reader gives as this record with
// action kFreeCompleted and the request's time (it is corrupt anywhere else).
struct BlockRecord {
  static constexpr RecordType kType = RecordType::kBlock;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  uint32_t allocator = 0;  // BlockAllocator
  uint32_t action = 0;     // BlockAction
  int32_t device = -1;     // CUDA ordinal; -1 when not known
  uint64_t address = 0;    // the block's (or segment's) first byte; 0 for kOom
  uint64_t size = 0;       // its bytes; for kOom what was asked for
  uint64_t stream = 0;     // the stream it was allocated for (the allocator's handle), 0 default
  uint32_t stack = 0;      // StackRecord id: for kAlloc, kSegmentAlloc, kSegmentMap and kOom

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("allocator", r.allocator);
    v.u32("action", r.action);
    v.i32("device", r.device);
    v.address("address", r.address);
    v.u64("size", r.size);
    v.u64("stream", r.stream);
    v.u32("stack", r.stack);
  }
};

// A bounded trace's checkpoint of the live set (4.3): a begin, the Carried records of every
// allocation live at its time, an end that counts them. A checkpoint is whole only when its end
// is in the file with as many Carried records of its id as the end says.
enum class CheckpointAction : uint8_t { kBegin = 0, kEnd = 1 };
struct CheckpointRecord {
  static constexpr RecordType kType = RecordType::kCheckpoint;
  uint64_t time_ns = 0;  // the moment the live set is taken at (begin); when it was written (end)
  uint32_t id = 0;       // from 1, in the order checkpoints are taken
  uint32_t action = 0;   // CheckpointAction
  uint64_t items = 0;    // end: the Carried records written for it

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("id", r.id);
    v.u32("action", r.action);
    v.u64("items", r.items);
  }
};

// An allocation live at a checkpoint (4.3): its Alloc record's fields, with the time it was made
// in `alloc_time_ns`; `time_ns` is the checkpoint's, which orders it in the trace.
struct CarriedRecord {
  static constexpr RecordType kType = RecordType::kCarried;
  uint64_t time_ns = 0;
  uint64_t thread = 0;  // from the chunk, as for every record (the checkpoint's writer: 0)
  uint32_t checkpoint = 0;
  uint64_t alloc_time_ns = 0;
  int32_t device = -1;
  MemoryKind kind = MemoryKind::kDevice;
  Api api = Api::kUnknown;
  Api public_api = Api::kUnknown;
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t context = 0;
  uint32_t stack = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("checkpoint", r.checkpoint);
    v.u64("alloc_time_ns", r.alloc_time_ns);
    v.i32("device", r.device);
    v.kind("kind", r.kind);
    v.api("api", r.api);
    v.address("address", r.address);
    v.u64("size", r.size);
    v.u32("context", r.context);
    v.u32("stack", r.stack);
    v.public_api("public_api", r.public_api);
  }
};

// A caching allocator's block or segment live at a checkpoint (4.3): its Block record's fields,
// with the time it was made in `block_time_ns`. kAlloc for a live block (followed by a
// kFreeRequested when its free was requested and not completed), kSegmentAlloc for a segment,
// kSegmentMap for a mapped range (what is left of it where part was unmapped).
struct CarriedBlockRecord {
  static constexpr RecordType kType = RecordType::kCarriedBlock;
  uint64_t time_ns = 0;
  uint64_t thread = 0;  // from the chunk (the checkpoint's writer: 0)
  uint32_t checkpoint = 0;
  uint64_t block_time_ns = 0;
  uint32_t allocator = 0;
  uint32_t action = 0;
  int32_t device = -1;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint32_t stack = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("checkpoint", r.checkpoint);
    v.u64("block_time_ns", r.block_time_ns);
    v.u32("allocator", r.allocator);
    v.u32("action", r.action);
    v.i32("device", r.device);
    v.address("address", r.address);
    v.u64("size", r.size);
    v.u64("stream", r.stream);
    v.u32("stack", r.stack);
  }
};

// What a CarriedVmm record carries.
enum class CarriedVmmAction : uint32_t {
  kMap = 0,      // a mapping live at the checkpoint: its Map record's fields
  kRetain = 1,   // one reference more to `handle` (cuMemRetainAllocationHandle) than its creation
  kRelease = 2,  // `handle` was released (cuMemRelease) and lives on through its mappings
};

// The VMM state live at a checkpoint (4.4) beside its physical allocations (Carried records):
// each mapping, then each handle's references beyond its creation, then each handle already
// released whose memory its mappings keep. `event_time_ns` is when the mapping was made (0 for
// the others); `time_ns` is the checkpoint's.
struct CarriedVmmRecord {
  static constexpr RecordType kType = RecordType::kCarriedVmm;
  uint64_t time_ns = 0;
  uint64_t thread = 0;  // from the chunk (the checkpoint's writer: 0)
  uint32_t checkpoint = 0;
  uint32_t action = 0;  // CarriedVmmAction
  uint64_t event_time_ns = 0;
  int32_t device = -1;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
  uint64_t handle = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("checkpoint", r.checkpoint);
    v.u32("action", r.action);
    v.u64("event_time_ns", r.event_time_ns);
    v.i32("device", r.device);
    v.address("address", r.address);
    v.u64("size", r.size);
    v.u64("offset", r.offset);
    v.u64("handle", r.handle);
  }
};

// A phase open at a checkpoint (4.5): a range pushed and not yet popped, or started and not yet
// ended, with its Phase record's fields and the time it opened in `phase_time_ns`; each thread's
// pushed ranges outermost first, then the started ones. `time_ns` is the checkpoint's.
struct CarriedPhaseRecord {
  static constexpr RecordType kType = RecordType::kCarriedPhase;
  uint64_t time_ns = 0;
  uint64_t thread = 0;  // from the chunk (the checkpoint's writer: 0)
  uint32_t checkpoint = 0;
  uint64_t phase_time_ns = 0;
  uint64_t tid = 0;
  uint32_t action = 0;  // PhaseAction: kPush or kStart
  uint32_t domain = 0;
  uint32_t name = 0;
  uint64_t range = 0;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("checkpoint", r.checkpoint);
    v.u64("phase_time_ns", r.phase_time_ns);
    v.u64("tid", r.tid);
    v.u32("action", r.action);
    v.u32("domain", r.domain);
    v.u32("name", r.name);
    v.u64("range", r.range);
  }
};

// The settings of a caching allocator that shape its blocks' extents (4.6), for an allocator
// whose block events give the size asked for (PyTorch's), as the allocator itself read them
// (PYTORCH_CUDA_ALLOC_CONF): a request is rounded up to a power-of-two division before it
// takes a block, and a block of max_split_size bytes or more is never split. Written once,
// before the allocator's first block event.
struct AllocatorSettingsRecord {
  static constexpr RecordType kType = RecordType::kAllocatorSettings;
  static constexpr std::size_t kMaxBytes = 512;
  // roundup_divisions: one entry per request size interval, [1, 2) MiB (and below), [2, 4)
  // MiB, ..., [32 GiB, ...): at most this many.
  static constexpr std::size_t kIntervals = 16;
  uint64_t time_ns = 0;
  uint32_t allocator = 0;       // BlockAllocator
  uint64_t max_split_size = 0;  // blocks at least this large are not split; UINT64_MAX: all are
  // Into how many equal parts each power-of-two interval is divided for rounding; 0 or 1: none
  // (requests are rounded to 512 bytes).
  std::vector<uint64_t> roundup_divisions;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("allocator", r.allocator);
    v.u64("max_split_size", r.max_split_size);
    v.address_list("roundup_divisions", r.roundup_divisions);
  }
};

// Record type 28's place among Record's alternatives: the reader decodes a BlockFreedAtOnce into
// the Block record it completes, so no record of this type ever comes out of it.
struct BlockFreedAtOncePlaceholder {
  static constexpr RecordType kType = RecordType::kBlockFreedAtOnce;
  template <class Self, class V>
  static constexpr void fields(Self&, V&) {}
};

// Where in the framework's program a thread is (4.8): what the framework's hooks report
// (python/gpumemtrace_roles.py for PyTorch), for telling a block's role and module. Values are
// part of the file format.
enum class ScopeKind : uint8_t {
  kModule = 0,     // an nn.Module's forward; `name` is its qualified name (`layer3.2.conv1`)
  kBackward = 1,   // backward() (torch.autograd.backward) called on this thread
  kOptimizer = 2,  // an optimizer's step(); `name` is the optimizer's class
  // The program's own code is done and the interpreter begins its exit (atexit): an enter with
  // no exit. What is live then is what the program held at its end, before teardown frees it.
  kProgramEnd = 3,
  // A CUDA graph's capture (torch.cuda.graph) on this thread: the blocks made in it are the
  // graph's private pool's, kept for its replays. Readers that do not know it ignore it.
  kCudaGraph = 4,
  // Autograd records nothing (no_grad, inference_mode) in the root forward open on this thread:
  // entered just inside it, left just before it ends. What such a forward makes is no activation.
  // Readers that do not know it ignore it.
  kNoGrad = 5,
  // The length of a key-value cache the framework's model used in the root forward that just
  // ended on this thread (a Hugging Face Cache): an enter with no exit, whose name reads
  // "batch=B tokens=T capacity=C bytes_per_token=N layers=L" (capacity 0: the cache grows; N: the
  // bytes one more token takes per sequence, every layer's keys and values; L: the layers). Readers
  // that do not know it ignore it.
  kKvCacheLength = 6,
};
enum class ScopeAction : uint8_t {
  kEnter = 0,
  kExit = 1,
  // A root module's forward whose inner modules go unreported (the hooks report them in some
  // forwards only, for their cost): its blocks belong to the modules that made the same blocks
  // in the root's last reported forward.
  kEnterOutline = 2,
};

// A scope entered or left on the recording thread (4.8). Scopes nest per thread; an exit closes
// the innermost open scope of its kind on its thread.
struct ScopeRecord {
  static constexpr RecordType kType = RecordType::kScope;
  uint64_t time_ns = 0;
  uint64_t thread = 0;  // from the chunk
  uint32_t action = 0;  // ScopeAction
  uint32_t kind = 0;    // ScopeKind
  uint32_t name = 0;    // NameRecord id; 0 for an exit

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("action", r.action);
    v.u32("kind", r.kind);
    v.u32("name", r.name);
  }
};

// What the framework says a block of its allocator holds (4.8). Values are part of the format.
enum class TagRole : uint8_t {
  kParameter = 0,
  kBuffer = 1,
  kGradient = 2,        // a parameter's .grad
  kOptimizerState = 3,  // an optimizer's state tensor (Adam's exp_avg...)
  // A layer's keys or values in a key-value cache (a Hugging Face Cache object the model was
  // given or returned); named by the attention module that uses it (`layers.3.self_attn.keys`).
  kKvCache = 4,
  // A tensor a root forward returned: a hint, not a role. Whatever the block's life places it as
  // comes first (an output backward released is an activation); a block nothing else places is a
  // kept output. Readers that do not know these values place such blocks by their lives alone.
  kOutput = 5,
};

// The framework's word on the block that holds `address` at `time_ns` (4.8): the role of that
// block for the rest of its life, and the tensor's name (`layer1.0.conv1.weight`,
// `layer1.0.conv1.weight.exp_avg`).
struct TagRecord {
  static constexpr RecordType kType = RecordType::kTag;
  uint64_t time_ns = 0;
  uint64_t thread = 0;  // from the chunk
  uint32_t role = 0;    // TagRole
  uint64_t address = 0;
  uint32_t name = 0;  // NameRecord id; 0 when unnamed

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("role", r.role);
    v.address("address", r.address);
    v.u32("name", r.name);
  }
};

// A signal whose default action ends the process reached it, and nothing else handled it
// (4.10): the preload's handler writes this record on the thread the signal came to, then lets
// the signal take its course. A trace without an End record and with one of these tells why the
// process died; SIGKILL cannot be caught, and leaves none.
struct SignalRecord {
  static constexpr RecordType kType = RecordType::kSignal;
  uint64_t time_ns = 0;
  uint64_t thread = 0;   // from the chunk: the thread the signal was delivered to
  uint32_t signal = 0;   // its number (SIGSEGV is 11 on Linux)
  int32_t code = 0;      // siginfo's si_code: how it came (SI_USER from kill(), SEGV_MAPERR...)
  uint64_t address = 0;  // siginfo's si_addr for SIGSEGV, SIGBUS, SIGILL and SIGFPE; else 0
  uint64_t sender = 0;   // the pid that sent it (kill, sigqueue, tgkill); 0 when none did

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("signal", r.signal);
    v.i32("code", r.code);
    v.u64("address", r.address);
    v.u64("sender", r.sender);
  }
};

using Record =
    std::variant<ProcessInfoRecord, AllocRecord, FreeRecord, AllocFailedRecord, EndRecord,
                 ContextRecord, ContextDestroyedRecord, MapRecord, UnmapRecord, RetainHandleRecord,
                 StackRecord, ModuleRecord, PythonCodeRecord, ThreadRecord, DeviceRecord,
                 SampleRecord, NameRecord, PhaseRecord, NoteRecord, PoolRecord, BlockRecord,
                 CheckpointRecord, CarriedRecord, CarriedBlockRecord, CarriedVmmRecord,
                 CarriedPhaseRecord, AllocatorSettingsRecord, BlockFreedAtOncePlaceholder,
                 ScopeRecord, TagRecord, SignalRecord>;

// Records that define an id or describe the process rather than tell an event: a bounded trace
// keeps them whatever their age (the writer puts them in chunks it never reuses).
template <class R>
constexpr bool is_definition() {
  return std::is_same_v<R, ProcessInfoRecord> || std::is_same_v<R, ContextRecord> ||
         std::is_same_v<R, StackRecord> || std::is_same_v<R, ModuleRecord> ||
         std::is_same_v<R, PythonCodeRecord> || std::is_same_v<R, ThreadRecord> ||
         std::is_same_v<R, NameRecord> || std::is_same_v<R, DeviceRecord> ||
         std::is_same_v<R, AllocatorSettingsRecord>;
}

}  // namespace gmt::format
