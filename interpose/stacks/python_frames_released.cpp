// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/python_frames_released.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace gmt::interpose {
namespace {

// Offsets from offsetof() on each version's headers (x86-64 and arm64 share them: LP64).
constexpr std::size_t kStrLength = 16;  // PyASCIIObject.length
constexpr std::size_t kStrState = 32;   // PyASCIIObject.state
constexpr uint32_t kStateCompact = 1u << 5;
constexpr uint32_t kStateAscii = 1u << 6;
constexpr std::size_t kMaxText = 4096;

}  // namespace

bool ReleasedFrameReader::init(Lookup lookup) {
  const auto* version = static_cast<const unsigned long*>(lookup("Py_Version"));  // 3.11+
  code_type_ = lookup("PyCode_Type");
  unicode_type_ = lookup("PyUnicode_Type");
  addr_to_line_ = reinterpret_cast<int (*)(void*, int)>(lookup("PyCode_Addr2Line"));
  if (version == nullptr || code_type_ == nullptr || unicode_type_ == nullptr ||
      addr_to_line_ == nullptr) {
    return false;
  }
  const unsigned long major_minor = (*version >> 16) & 0xffff;
  if (major_minor == 0x030b) {
    layout_ = {.tstate_cframe = 56,
               .cframe_current_frame = 8,
               .frame_code = 32,
               .frame_previous = 48,
               .frame_prev_instr = 56,
               .frame_owner = 69,
               .owner_generator = 1,
               .owner_cstack = -1,
               .code_filename = 112,
               .code_name = 120,
               .code_qualname = 128,
               .code_first_line = 72,
               .code_first_traceable = 168,
               .ascii_object_size = 48,
               .compact_utf8 = 56};
  } else if (major_minor == 0x030c) {
    layout_ = {.tstate_cframe = 56,
               .cframe_current_frame = 0,
               .frame_code = 0,
               .frame_previous = 8,
               .frame_prev_instr = 56,
               .frame_owner = 70,
               .owner_generator = 1,
               .owner_cstack = 3,
               .code_filename = 112,
               .code_name = 120,
               .code_qualname = 128,
               .code_first_line = 68,
               .code_first_traceable = 176,
               .ascii_object_size = 40,
               .compact_utf8 = 48};
  } else {
    return false;
  }
  // The bytecode follows the code object's fixed part: PyCode_Type's tp_basicsize (the
  // PyTypeObject field after ob_refcnt, ob_type, ob_size and tp_name).
  int64_t basicsize = 0;  // Py_ssize_t
  if (!read_value(at(code_type_, 32), &basicsize) || basicsize <= 0) return false;
  code_units_offset_ = static_cast<std::size_t>(basicsize);
  ready_ = true;
  return true;
}

bool ReleasedFrameReader::read(const void* address, void* out, std::size_t n) const {
  if (address == nullptr) return false;
  if (unvalidated_walks_.load(std::memory_order_relaxed) <= 0) {
    std::memcpy(out, address, n);
    return true;
  }
  iovec local{out, n};
  iovec remote{const_cast<void*>(address), n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

bool ReleasedFrameReader::is_code(const void* object) const {
  const void* type = nullptr;
  return read_value(at(object, kObjectType), &type) && type == code_type_;
}

bool ReleasedFrameReader::text_of(const void* str, std::string* out) const {
  const void* type = nullptr;
  uint32_t state = 0;
  int64_t length = 0;
  if (!read_value(at(str, kObjectType), &type) || type != unicode_type_ ||
      !read_value(at(str, kStrState), &state) || !read_value(at(str, kStrLength), &length)) {
    return false;
  }
  if ((state & kStateCompact) == 0) return false;
  const void* text = at(str, layout_.ascii_object_size);
  if ((state & kStateAscii) == 0) {
    // Not ASCII: only a UTF-8 copy the interpreter already made can be used.
    if (!read_value(at(str, layout_.compact_utf8), &text) || text == nullptr ||
        !read_value(at(str, layout_.compact_utf8 - 8), &length)) {
      return false;
    }
  }
  if (length < 0 || static_cast<std::size_t>(length) > kMaxText) return false;
  out->resize(static_cast<std::size_t>(length));
  return read(text, out->data(), out->size());
}

int ReleasedFrameReader::line_of(const void* code, const void* prev_instr) const {
  const char* units = static_cast<const char*>(code) + code_units_offset_;
  const auto offset = static_cast<const char*>(prev_instr) - units;
  // The interpreter's own function, reading only the code object's immutable line table.
  return addr_to_line_(const_cast<void*>(code), offset < 0 ? -1 : static_cast<int>(offset));
}

int ReleasedFrameReader::walk(const void* tstate, Frame* out, int max) {
  if (!ready_ || broken_.load(std::memory_order_relaxed)) return 0;
  const void* cframe = nullptr;
  const void* frame = nullptr;
  if (!read_value(at(tstate, layout_.tstate_cframe), &cframe) || cframe == nullptr ||
      !read_value(at(cframe, layout_.cframe_current_frame), &frame)) {
    return 0;
  }
  int n = 0;
  for (int steps = 0; frame != nullptr && n < max; ++steps) {
    const void* code = nullptr;
    const void* previous = nullptr;
    const void* prev_instr = nullptr;
    char owner = 0;
    int first_traceable = 0;
    if (steps == kMaxWalk || !read_value(at(frame, layout_.frame_code), &code) ||
        !read_value(at(frame, layout_.frame_previous), &previous) ||
        !read_value(at(frame, layout_.frame_prev_instr), &prev_instr) ||
        !read_value(at(frame, layout_.frame_owner), &owner)) {
      broken_.store(true, std::memory_order_relaxed);
      return 0;
    }
    if (owner != layout_.owner_cstack) {  // the C stack's shim frames run no Python code
      if (!is_code(code) || !read_value(at(code, layout_.code_first_traceable), &first_traceable)) {
        broken_.store(true, std::memory_order_relaxed);
        return 0;
      }
      if (!incomplete(code, prev_instr, owner, first_traceable)) out[n++] = {code, prev_instr};
    }
    frame = previous;
  }
  if (n > 0 && unvalidated_walks_.load(std::memory_order_relaxed) > 0) {
    unvalidated_walks_.fetch_sub(1, std::memory_order_relaxed);
  }
  return n;
}

bool ReleasedFrameReader::incomplete(const void* code, const void* prev_instr, char owner,
                                     int first_traceable) const {
  const char* units = static_cast<const char*>(code) + code_units_offset_;
  return owner != layout_.owner_generator &&
         static_cast<const char*>(prev_instr) < units + 2 * first_traceable;
}

ReleasedFrameReader::Check ReleasedFrameReader::check(const void* code, const void* prev_instr,
                                                      char owner, CodeKey* key) {
  int first_traceable = 0;
  if (!key_of(code, key) || !read_value(at(code, layout_.code_first_traceable), &first_traceable)) {
    broken_.store(true, std::memory_order_relaxed);
    return Check::kBroken;
  }
  return incomplete(code, prev_instr, owner, first_traceable) ? Check::kIncomplete : Check::kNew;
}

bool ReleasedFrameReader::key_of(const void* code, CodeKey* key) {
  return is_code(code) && read_value(at(code, layout_.code_filename), &key->filename) &&
         read_value(at(code, layout_.code_qualname), &key->name) &&
         read_value(at(code, layout_.code_first_line), &key->first_line);
}

void ReleasedFrameReader::describe(const void* code, const CodeKey& key, std::string* file,
                                   std::string* name) {
  if (!text_of(key.filename, file)) *file = "";
  if (!text_of(key.name, name)) {
    const void* plain = nullptr;
    if (!read_value(at(code, layout_.code_name), &plain) || !text_of(plain, name)) *name = "";
  }
}

}  // namespace gmt::interpose
