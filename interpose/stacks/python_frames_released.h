// SPDX-License-Identifier: Apache-2.0
// The calling thread's own Python frames while it has released the GIL: PyTorch, ctypes.CDLL
// and most extensions release it around the C++ call that ends up allocating. The public API
// cannot be used then (it may allocate frame objects), and taking the GIL inside an allocation
// hook could deadlock (the thread holding it may be waiting for the allocator's lock we are
// under). But a thread's frame stack only changes when that thread runs Python, so while it is
// inside our hook its frames are stable and can be read in place, from CPython's internal
// layout. That layout is version-specific: 3.11 and 3.12 are known (measured with offsetof on
// their headers); other versions get no frames this way. Every code and string pointer is
// checked against its type object before use, and the first walks read through
// process_vm_readv, which fails cleanly instead of faulting: a layout that does not match
// turns this off for the process.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace gmt::interpose {

class ReleasedFrameReader {
 public:
  using Lookup = void* (*)(const char* name);

  // No default member initializers: an array of them is filled by walk(), and zeroing it first
  // cost every stack about as many instructions as the walk itself.
  struct Frame {
    const void* code;
    const void* prev_instr;  // the instruction it is at: line_of() gives its line
  };
  // Where a code object's names are, and its first line: checked again at each use, which
  // catches a layout gone wrong but not a new code object at a freed one's address (its name and
  // file may have taken theirs too); PythonCodeDeaths tells those apart.
  struct CodeKey {
    const void* filename = nullptr;
    const void* name = nullptr;
    int first_line = 0;
    bool operator==(const CodeKey&) const = default;
  };

  // Finds the interpreter's version and symbols; false when this Python is not one we know.
  bool init(Lookup lookup);

  // Up to `max` frames of the thread whose PyThreadState is `tstate` (the caller's own),
  // innermost first. 0 when there are none or the layout turned out not to match.
  int walk(const void* tstate, Frame* out, int max);

  // Once the first walks have checked the layout, frames are read in place in one pass:
  // walk_trusted hands each Python frame to `visit(code, prev_instr, owner)`, which returns the
  // frame as a stack holds it (0 to leave it out, kNotAFrame when check() found the layout does
  // not match), and puts up to `max` of them in `out`. A frame met before is then a few loads
  // and compares (still()); only one met anew takes check(). Inline: a call per frame and per
  // field cost more than the reads.
  static constexpr uint64_t kNotAFrame = ~uint64_t{0};
  bool trusted() const {
    return unvalidated_walks_.load(std::memory_order_relaxed) <= 0 &&
           !broken_.load(std::memory_order_relaxed);
  }
  template <class Visit>
  int walk_trusted(const void* tstate, uint64_t* out, int max, Visit visit) {
    const void* cframe = load<const void*>(tstate, layout_.tstate_cframe);
    if (cframe == nullptr) return 0;
    const void* frame = load<const void*>(cframe, layout_.cframe_current_frame);
    int n = 0;
    for (int steps = 0; frame != nullptr && n < max; ++steps) {
      if (steps == kMaxWalk) [[unlikely]] {
        broken_.store(true, std::memory_order_relaxed);
        return 0;
      }
      const char owner = load<char>(frame, layout_.frame_owner);
      if (owner != layout_.owner_cstack) {  // the C stack's shim frames run no Python code
        const void* code = load<const void*>(frame, layout_.frame_code);
        if (code == nullptr) [[unlikely]] {
          broken_.store(true, std::memory_order_relaxed);
          return 0;
        }
        const uint64_t entry =
            visit(code, load<const void*>(frame, layout_.frame_prev_instr), owner);
        if (entry == kNotAFrame) [[unlikely]]
          return 0;
        if (entry != 0) out[n++] = entry;
      }
      frame = load<const void*>(frame, layout_.frame_previous);
    }
    return n;
  }
  // Whether `code` is still the code object that `key` was read from (trusted layout only).
  bool still(const void* code, const CodeKey& key) const {
    return load<const void*>(code, kObjectType) == code_type_ &&
           load<const void*>(code, layout_.code_filename) == key.filename &&
           load<const void*>(code, layout_.code_qualname) == key.name &&
           load<int>(code, layout_.code_first_line) == key.first_line;
  }
  // A frame met anew in a trusted walk, read with the checks walk() makes: kNew with its code's
  // key, kIncomplete for a frame with no line yet, kBroken (and off for the process) when the
  // layout does not match.
  enum class Check { kNew, kIncomplete, kBroken };
  Check check(const void* code, const void* prev_instr, char owner, CodeKey* key);

  // What identifies a code object; false if it does not look like one of this layout.
  bool key_of(const void* code, CodeKey* key);
  // The line of a frame walk() gave: CPython reads the code's line table from its start.
  int line_of(const void* code, const void* prev_instr) const;
  // Its file and qualified name, from the key key_of gave ("" for what cannot be read).
  void describe(const void* code, const CodeKey& key, std::string* file, std::string* name);

 private:
  struct Layout {
    std::size_t tstate_cframe;
    std::size_t cframe_current_frame;
    std::size_t frame_code;
    std::size_t frame_previous;
    std::size_t frame_prev_instr;
    std::size_t frame_owner;
    int owner_generator;
    int owner_cstack;  // -1: no such frames in this version
    std::size_t code_filename;
    std::size_t code_name;
    std::size_t code_qualname;
    std::size_t code_first_line;
    std::size_t code_first_traceable;
    std::size_t ascii_object_size;  // sizeof(PyASCIIObject): where compact ASCII text starts
    std::size_t compact_utf8;       // PyCompactUnicodeObject.utf8: a cached UTF-8 copy
  };

  // Reads `n` bytes at `address` into `out`: directly once the layout has been validated,
  // through process_vm_readv until then.
  bool read(const void* address, void* out, std::size_t n) const;
  // Inline once the layout is trusted: a word copied in place, where a call to read() and to
  // memcpy for each field cost a stack more than half its Python walk.
  template <class T>
  bool read_value(const void* address, T* out) const {
    if (address != nullptr && unvalidated_walks_.load(std::memory_order_relaxed) <= 0) {
      std::memcpy(out, address, sizeof(T));
      return true;
    }
    return read(address, out, sizeof(T));
  }
  const void* at(const void* base, std::size_t offset) const {
    return static_cast<const char*>(base) + offset;
  }
  template <class T>
  static T load(const void* base, std::size_t offset) {
    T value;
    std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof(T));
    return value;
  }
  // Whether a frame (not the C stack's) is still setting up: before its first traceable
  // instruction it has no line yet.
  bool incomplete(const void* code, const void* prev_instr, char owner, int first_traceable) const;
  static constexpr std::size_t kObjectType = 8;  // PyObject.ob_type
  static constexpr int kMaxWalk = 4096;  // frames followed at most: a cycle would mean a bad layout
  bool is_code(const void* object) const;
  bool text_of(const void* str, std::string* out) const;

  Layout layout_{};
  const void* code_type_ = nullptr;
  const void* unicode_type_ = nullptr;
  std::size_t code_units_offset_ = 0;  // PyCode_Type.tp_basicsize: where the bytecode starts
  int (*addr_to_line_)(void*, int) = nullptr;
  bool ready_ = false;
  // Walks still read through the safe path; at 0 the layout is trusted.
  std::atomic<int> unvalidated_walks_{16};
  std::atomic<bool> broken_{false};
};

}  // namespace gmt::interpose
