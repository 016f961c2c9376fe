// Every record of the trace, defined once. Each record lists its fields in `fields()`, a template
// that the encoder and the decoder both walk, so writer and reader cannot disagree on a layout.
// The on-disk encoding of each field type is described in format/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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
};

// Records are at most this many bytes unless they say otherwise (kMaxBytes): the writer encodes
// them in a buffer of that size on the stack.
template <class R>
constexpr std::size_t max_record_bytes() {
  if constexpr (requires { R::kMaxBytes; }) {
    return R::kMaxBytes;
  } else {
    return 128;
  }
}

// Written once, first, when the process starts being traced.
struct ProcessInfoRecord {
  static constexpr RecordType kType = RecordType::kProcessInfo;
  uint64_t pid = 0;
  uint64_t ppid = 0;
  uint64_t wall_start_ns = 0;  // Unix time when tracing started.
  uint64_t mono_start_ns = 0;  // CLOCK_MONOTONIC then; event times count from here.
  std::string host;
  std::vector<std::string> argv;

  template <class Self, class V>
  static void fields(Self& r, V& v) {
    v.u64("pid", r.pid);
    v.u64("ppid", r.ppid);
    v.u64("wall_start_ns", r.wall_start_ns);
    v.u64("mono_start_ns", r.mono_start_ns);
    v.str("host", r.host);
    v.str_list("argv", r.argv);
  }
};

// A successful allocation, stamped after the real call returned.
struct AllocRecord {
  static constexpr RecordType kType = RecordType::kAlloc;
  uint64_t time_ns = 0;  // since ProcessInfoRecord::mono_start_ns
  uint64_t thread = 0;   // kernel thread id: from the chunk the record is in, not encoded
  int32_t device = -1;   // CUDA ordinal in this process; -1 when unknown or host memory
  MemoryKind kind = MemoryKind::kDevice;
  Api api = Api::kUnknown;
  uint64_t address = 0;  // for kVmmPhysical the allocation handle, for kArray the CUarray
  uint64_t size = 0;
  uint32_t context = 0;  // ContextRecord id of the context it was made in; 0 when none
  uint32_t stack = 0;    // StackRecord id of where it was made; 0 when not recorded

  template <class Self, class V>
  static void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.kind("kind", r.kind);
    v.api("api", r.api);
    v.address("address", r.address);
    v.u64("size", r.size);
    v.u32("context", r.context);
    v.u32("stack", r.stack);
  }
};

// A free, stamped before the real call runs so that a concurrent allocation reusing the address
// always comes after it in the trace. The analyzer finds what is freed by address.
struct FreeRecord {
  static constexpr RecordType kType = RecordType::kFree;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  Api api = Api::kUnknown;
  uint64_t address = 0;

  template <class Self, class V>
  static void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.api("api", r.api);
    v.address("address", r.address);
  }
};

// An allocation the driver refused (out of memory above all), with what was asked for.
struct AllocFailedRecord {
  static constexpr RecordType kType = RecordType::kAllocFailed;
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  int32_t device = -1;
  MemoryKind kind = MemoryKind::kDevice;
  Api api = Api::kUnknown;
  uint64_t size = 0;
  uint32_t error = 0;  // the CUresult the program saw
  uint32_t stack = 0;

  template <class Self, class V>
  static void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.i32("device", r.device);
    v.kind("kind", r.kind);
    v.api("api", r.api);
    v.u64("size", r.size);
    v.u32("error", r.error);
    v.u32("stack", r.stack);
  }
};

// Written when the process exits normally. Records may still follow it (exit-time frees run
// after our finalizer); its absence means the process died or called _exit.
struct EndRecord {
  static constexpr RecordType kType = RecordType::kEnd;
  uint64_t time_ns = 0;

  template <class Self, class V>
  static void fields(Self& r, V& v) {
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
  static void fields(Self& r, V& v) {
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
  Api api = Api::kUnknown;

  template <class Self, class V>
  static void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u32("id", r.id);
    v.api("api", r.api);
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
  static void fields(Self& r, V& v) {
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
  static void fields(Self& r, V& v) {
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
  static void fields(Self& r, V& v) {
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
  static void fields(Self& r, V& v) {
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
  static void fields(Self& r, V& v) {
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
  static void fields(Self& r, V& v) {
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
  uint64_t time_ns = 0;
  uint64_t tid = 0;
  std::string name;

  template <class Self, class V>
  static void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.u64("tid", r.tid);
    v.str("name", r.name);
  }
};

using Record =
    std::variant<ProcessInfoRecord, AllocRecord, FreeRecord, AllocFailedRecord, EndRecord,
                 ContextRecord, ContextDestroyedRecord, MapRecord, UnmapRecord, RetainHandleRecord,
                 StackRecord, ModuleRecord, PythonCodeRecord, ThreadRecord>;

}  // namespace gmt::format
