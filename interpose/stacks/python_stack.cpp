// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/python_stack.h"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <new>

#include "format/hot_path.h"
#include "interpose/common/instance_id.h"
#include "interpose/common/real_dlsym.h"
#include "interpose/stacks/python_code_deaths.h"

namespace gmt::interpose {
namespace {

void* find_in_process(const char* name) {
  DlsymFn lookup = real_dlsym();
  return lookup != nullptr ? lookup(RTLD_DEFAULT, name) : nullptr;
}

}  // namespace

// The frames a thread met last, by code object and instruction: CPython finds a line by reading
// the code's line table from its start (microseconds a frame deep in a long function, such as
// PyTorch's Module._call_impl), and an id takes the code table's lock. Each entry also holds the
// numbering its id belongs to and, for frames read in place, where its code object's names are.
// A code object freed since is forgotten (PythonCodeDeaths): a new one may have its address, and
// its names theirs; through the C API we hold a reference to each. Per thread, so that no lock
// guards it.
struct PythonStack::CachedFrame {
  ReleasedFrameReader::CodeKey key;
  uint64_t generation = 0;
  uint64_t frame = 0;  // code id << 32 | line
  bool in_place = false;
};

// A training step meets a few hundred frames in turn (each module's call, forward and
// functional layers, the optimizer's). Four to a set, by code object and instruction, whose
// tags fill one cache line: with one frame to a slot, two of them sharing a slot took turns to
// miss, each miss a line-table read, and which ones shared a slot changed with the addresses
// from run to run (the Python part of a stack took 100 to 1000 ns on one step).
struct PythonStack::FrameCache {
  static constexpr std::size_t kSets = 128;
  static constexpr std::size_t kWays = 4;
  struct Tag {
    const void* code = nullptr;
    const void* instr = nullptr;  // in place: the instruction's address; C API: its index
  };
  struct alignas(64) TagSet {
    Tag ways[kWays];
  };
  TagSet tags[kSets];
  CachedFrame frames[kSets][kWays];
  uint8_t next_way[kSets] = {};  // the way the set's next frame replaces
  uint64_t deaths_seen = 0;      // the code objects freed (PythonCodeDeaths::count) it knows of

  static std::size_t set_of(const void* code, const void* instr) {
    const auto bits = reinterpret_cast<uintptr_t>(instr) ^ reinterpret_cast<uintptr_t>(code);
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> 57) & (kSets - 1);
  }
  // The entry of (code, instr), or null.
  CachedFrame* find(const void* code, const void* instr) {
    const std::size_t set = set_of(code, instr);
    for (std::size_t way = 0; way < kWays; ++way) {
      const Tag& tag = tags[set].ways[way];
      if (tag.code == code && tag.instr == instr) return &frames[set][way];
    }
    return nullptr;
  }
  // Where (code, instr) is to be kept: its entry if it has one (its code object was replaced),
  // else the set's ways in turn.
  CachedFrame& place(const void* code, const void* instr) {
    if (CachedFrame* known = find(code, instr)) return *known;
    const std::size_t set = set_of(code, instr);
    const std::size_t way = next_way[set];
    next_way[set] = static_cast<uint8_t>((way + 1) % kWays);
    tags[set].ways[way] = {code, instr};
    return frames[set][way];
  }
  // Drops the frames of the `n` code objects in `codes`.
  void forget(const void* const* codes, std::size_t n) {
    for (TagSet& set : tags) {
      for (Tag& tag : set.ways) {
        if (std::find(codes, codes + n, tag.code) != codes + n) tag = {};
      }
    }
  }
  void forget_all() {
    for (TagSet& set : tags) set = {};
  }
};

namespace {

// On the heap, one per thread, freed when the thread ends: the static TLS block, where this
// library's initial-exec thread_locals put all of them, has too little room for the frames when
// the library is opened with dlopen.
thread_local void* my_frames __attribute__((tls_model("initial-exec"))) = nullptr;

// A frame as a stack holds it: code id << 32 | line (0 when there is none).
uint64_t packed_frame(uint32_t id, int line) {
  return static_cast<uint64_t>(id) << 32 | static_cast<uint32_t>(line > 0 ? line : 0);
}

}  // namespace

PythonStack::PythonStack(TraceWriter& writer, bool api_only)
    : writer_(writer), api_only_(api_only), ids_generation_(new_instance_id()) {
  have_frames_key_ = pthread_key_create(&frames_key_, &PythonStack::free_thread_frames) == 0;
}

PythonStack::~PythonStack() {
  if (have_frames_key_) pthread_key_delete(frames_key_);
}

void PythonStack::free_thread_frames(void* frames) {
  if (my_frames == frames) my_frames = nullptr;
  delete static_cast<FrameCache*>(frames);
}

// This thread's frames met last; null when there can be none.
GMT_HOT_PATH PythonStack::FrameCache* PythonStack::thread_frames() {
  if (my_frames != nullptr) [[likely]]
    return static_cast<FrameCache*>(my_frames);
  if (!have_frames_key_) return nullptr;
  auto* frames = new (std::nothrow) FrameCache;
  if (frames == nullptr) return nullptr;
  my_frames = frames;
  pthread_setspecific(frames_key_, frames);
  return frames;
}

bool PythonStack::resolve() {
  int expected = 0;
  if (!state_.compare_exchange_strong(expected, 1))
    return state_.load(std::memory_order_acquire) == 2;
  DlsymFn lookup = real_dlsym();
  auto find = [&](const char* name) {
    return lookup != nullptr ? lookup(RTLD_DEFAULT, name) : nullptr;
  };
  Api api;
  api.is_initialized = reinterpret_cast<int (*)()>(find("Py_IsInitialized"));
  api.gil_check = reinterpret_cast<int (*)()>(find("PyGILState_Check"));
  api.this_thread_state = reinterpret_cast<void* (*)()>(find("PyGILState_GetThisThreadState"));
  api.thread_frame = reinterpret_cast<void* (*)(void*)>(find("PyThreadState_GetFrame"));
  api.frame_back = reinterpret_cast<void* (*)(void*)>(find("PyFrame_GetBack"));
  api.frame_code = reinterpret_cast<void* (*)(void*)>(find("PyFrame_GetCode"));
  api.frame_line = reinterpret_cast<int (*)(void*)>(find("PyFrame_GetLineNumber"));
  api.frame_lasti = reinterpret_cast<int (*)(void*)>(find("PyFrame_GetLasti"));
  api.incref = reinterpret_cast<void (*)(void*)>(find("Py_IncRef"));
  api.decref = reinterpret_cast<void (*)(void*)>(find("Py_DecRef"));
  api.get_attr = reinterpret_cast<void* (*)(void*, const char*)>(find("PyObject_GetAttrString"));
  api.as_utf8 = reinterpret_cast<const char* (*)(void*)>(find("PyUnicode_AsUTF8"));
  api.clear_error = reinterpret_cast<void (*)()>(find("PyErr_Clear"));
  const bool complete = api.is_initialized && api.gil_check && api.this_thread_state &&
                        api.thread_frame && api.frame_back && api.frame_code && api.frame_line &&
                        api.incref && api.decref && api.get_attr && api.as_utf8 && api.clear_error;
  if (complete) {
    api_ = api;
    // Frames read in place name code objects by address: only where their deaths are known.
    released_ready_ =
        !api_only_ && released_.init(&find_in_process) && PythonCodeDeaths::watch(&find_in_process);
  }
  state_.store(complete ? 2 : 3, std::memory_order_release);
  return complete;
}

std::string PythonStack::code_attribute(void* code, const char* name) {
  void* value = api_.get_attr(code, name);
  if (value == nullptr) {
    api_.clear_error();
    return "";
  }
  const char* text = api_.as_utf8(value);
  std::string out = text != nullptr ? text : "";
  if (text == nullptr) api_.clear_error();
  api_.decref(value);
  return out;
}

// Called with the GIL held, so the code object's attributes can be read safely.
uint32_t PythonStack::code_id(void* code) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = codes_.find(code); it != codes_.end()) return it->second;
  format::PythonCodeRecord rec;
  rec.id = next_id_++;
  rec.name = code_attribute(code, "co_qualname");  // 3.11+: Class.method
  if (rec.name.empty()) rec.name = code_attribute(code, "co_name");
  rec.file = code_attribute(code, "co_filename");
  writer_.record(rec);
  api_.incref(code);
  codes_.emplace(code, rec.id);
  return rec.id;
}

GMT_HOT_PATH int PythonStack::capture(uint64_t* frames, int max) {
  const int state = state_.load(std::memory_order_acquire);
  if (state == 3 || (state != 2 && !resolve())) return 0;
  // Only a thread that holds the GIL may look at its frames; a thread without one (a CUDA
  // callback, a C++ worker) simply has no Python stack. During interpreter start-up and
  // shutdown Py_IsInitialized is false.
  if (!api_.is_initialized()) return 0;
  // Where this Python's frames can be read in place (3.11, 3.12), they are whether or not the
  // thread holds the GIL: the C API below makes a frame object per frame and finds each line by
  // reading its code's line table from the start.
  if (released_ready_ || api_.gil_check() != 1) return capture_released(frames, max);
  void* tstate = api_.this_thread_state();
  if (tstate == nullptr) return 0;
  int n = 0;
  void* frame = api_.thread_frame(tstate);
  while (frame != nullptr && n < max) {
    void* code = api_.frame_code(frame);
    if (code != nullptr) {
      frames[n++] = api_frame(frame, code);
      api_.decref(code);
    }
    void* back = api_.frame_back(frame);
    api_.decref(frame);
    frame = back;
  }
  if (frame != nullptr) api_.decref(frame);
  return n;
}

GMT_HOT_PATH int PythonStack::capture_released(uint64_t* frames, int max) {
  if (!released_ready_) return 0;
  // A thread that ever ran Python keeps its thread state while it is in C code.
  const void* tstate = api_.this_thread_state();
  if (tstate == nullptr) return 0;
  FrameCache* cache = thread_frames();
  if (cache != nullptr) {
    const uint64_t deaths = PythonCodeDeaths::count();
    if (cache->deaths_seen != deaths) [[unlikely]]
      forget_freed(*cache, deaths);
  }
  if (cache != nullptr && released_.trusted()) [[likely]] {
    const uint64_t generation = ids_generation_.load(std::memory_order_relaxed);
    return released_.walk_trusted(
        tstate, frames, max, [&](const void* code, const void* prev_instr, char owner) {
          const CachedFrame* cached = cache->find(code, prev_instr);
          if (cached != nullptr && cached->in_place && cached->generation == generation &&
              released_.still(code, cached->key)) [[likely]] {
            return cached->frame;
          }
          return met_anew(*cache, code, prev_instr, owner, generation);
        });
  }
  constexpr int kMostFrames = 128;
  ReleasedFrameReader::Frame walked[kMostFrames];  // not initialized: walk() fills what it gives
  const int count = released_.walk(tstate, walked, max < kMostFrames ? max : kMostFrames);
  int n = 0;
  for (int i = 0; i < count; ++i) {
    if (const uint64_t frame = released_frame(walked[i])) frames[n++] = frame;
  }
  return n;
}

void PythonStack::forget_freed(FrameCache& frames, uint64_t deaths) {
  // Past a few, dropping every frame costs less than looking each one up.
  constexpr uint64_t kMostLookedUp = 16;
  const void* freed[kMostLookedUp];
  if (deaths - frames.deaths_seen <= kMostLookedUp &&
      PythonCodeDeaths::freed(frames.deaths_seen, deaths, freed)) {
    frames.forget(freed, deaths - frames.deaths_seen);
  } else {
    frames.forget_all();
  }
  frames.deaths_seen = deaths;
}

void PythonStack::forget_freed_codes() {
  const uint64_t deaths = PythonCodeDeaths::count();
  if (deaths == deaths_forgotten_) return;
  const void* freed[PythonCodeDeaths::kKept];
  if (PythonCodeDeaths::freed(deaths_forgotten_, deaths, freed)) {
    for (uint64_t i = 0; i < deaths - deaths_forgotten_; ++i) released_codes_.erase(freed[i]);
  } else {
    released_codes_.clear();  // those still alive get new ids when met again
  }
  deaths_forgotten_ = deaths;
}

uint64_t PythonStack::released_frame(const ReleasedFrameReader::Frame& frame) {
  ReleasedFrameReader::CodeKey key;
  if (!released_.key_of(frame.code, &key)) return 0;
  FrameCache* frames = thread_frames();
  if (frames == nullptr) {
    return packed_frame(released_code_id(frame.code, key),
                        released_.line_of(frame.code, frame.prev_instr));
  }
  const uint64_t generation = ids_generation_.load(std::memory_order_relaxed);
  const CachedFrame* cached = frames->find(frame.code, frame.prev_instr);
  if (cached != nullptr && cached->in_place && cached->key == key &&
      cached->generation == generation) {
    return cached->frame;
  }
  return remember_released(*frames, frame.code, frame.prev_instr, key, generation);
}

uint64_t PythonStack::met_anew(FrameCache& frames, const void* code, const void* prev_instr,
                               char owner, uint64_t generation) {
  ReleasedFrameReader::CodeKey key;
  switch (released_.check(code, prev_instr, owner, &key)) {
    case ReleasedFrameReader::Check::kBroken:
      return ReleasedFrameReader::kNotAFrame;
    case ReleasedFrameReader::Check::kIncomplete:
      return 0;
    case ReleasedFrameReader::Check::kNew:
      break;
  }
  return remember_released(frames, code, prev_instr, key, generation);
}

uint64_t PythonStack::remember_released(FrameCache& frames, const void* code,
                                        const void* prev_instr,
                                        const ReleasedFrameReader::CodeKey& key,
                                        uint64_t generation) {
  CachedFrame& slot = frames.place(code, prev_instr);
  slot = {key, generation,
          packed_frame(released_code_id(code, key), released_.line_of(code, prev_instr)), true};
  return slot.frame;
}

uint64_t PythonStack::api_frame(void* frame, void* code) {
  FrameCache* frames = api_.frame_lasti != nullptr ? thread_frames() : nullptr;
  if (frames == nullptr) {  // before 3.11 there is no instruction to know a frame by
    return packed_frame(code_id(code), api_.frame_line(frame));
  }
  const auto instr = reinterpret_cast<const void*>(static_cast<intptr_t>(api_.frame_lasti(frame)));
  const uint64_t generation = ids_generation_.load(std::memory_order_relaxed);
  const CachedFrame* cached = frames->find(code, instr);
  if (cached != nullptr && !cached->in_place && cached->generation == generation) {
    return cached->frame;
  }
  CachedFrame& slot = frames->place(code, instr);
  slot = {{}, generation, packed_frame(code_id(code), api_.frame_line(frame)), false};
  return slot.frame;
}

uint32_t PythonStack::released_code_id(const void* code, const ReleasedFrameReader::CodeKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  forget_freed_codes();
  if (auto it = released_codes_.find(code); it != released_codes_.end() && it->second.key == key) {
    return it->second.id;
  }
  format::PythonCodeRecord rec;
  released_.describe(code, key, &rec.file, &rec.name);
  rec.id = next_id_++;
  writer_.record(rec);
  released_codes_[code] = {key, rec.id};
  return rec.id;
}

void PythonStack::before_fork() {
  mutex_.lock();
  PythonCodeDeaths::before_fork();
}

void PythonStack::after_fork_in_parent() {
  PythonCodeDeaths::after_fork();
  mutex_.unlock();
}

void PythonStack::after_fork_in_child() {
  PythonCodeDeaths::after_fork();
  // Ids restart with the child's new trace; the references we hold stay (and keep ids unique).
  codes_.clear();
  released_codes_.clear();
  next_id_ = 1;
  ids_generation_.store(new_instance_id(), std::memory_order_relaxed);
  mutex_.unlock();
}

}  // namespace gmt::interpose
