// SPDX-License-Identifier: Apache-2.0
// A Python pickle (protocol 2) written as it goes: dicts, lists, strings, integers, booleans and
// None, with memo slots so that a value written once (a stack's frames) is referred to again
// rather than repeated. Just what PyTorch's memory snapshot needs; Python's `pickle` and
// MemoryViz.js's unpickler both read it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace gmt::analyzer {

class PickleWriter {
 public:
  // Items per APPENDS or SETITEMS, as Python's own pickler batches them: MemoryViz.js appends a
  // batch with one spread call, and engines cap the number of arguments of a call.
  static constexpr std::size_t kBatch = 1000;

  explicit PickleWriter(std::ostream& out);

  void none();
  void boolean(bool value);
  void integer(int64_t value);
  void integer(uint64_t value);
  // Invalid UTF-8 (a path's stray byte) becomes U+FFFD: an unpickler rejects it otherwise.
  void string(std::string_view value);

  // A dict's items are written as key, value, key, value...
  void begin_dict();
  void end_dict();
  void begin_list();
  // `memo`: keep the list just ended in that memo slot, for get() to refer to it again.
  void end_list();
  void end_list(uint32_t memo);
  // The value kept in `memo` by end_list().
  void get(uint32_t memo);

  // The STOP opcode. Every dict and list must have been ended.
  void finish();

 private:
  struct Open {
    bool dict;
    std::size_t in_batch = 0;
  };
  void op(uint8_t code) { out_.put(static_cast<char>(code)); }
  void le(uint64_t value, int bytes);
  void item_written();
  void end_container();

  std::ostream& out_;
  std::vector<Open> open_;
};

}  // namespace gmt::analyzer
