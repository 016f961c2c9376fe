// SPDX-License-Identifier: Apache-2.0
#include "analyzer/export/pickle_writer.h"

#include <stdexcept>
#include <string>

namespace gmt::analyzer {
namespace {

// Opcodes of pickle protocol 2 (Lib/pickletools.py documents each).
constexpr uint8_t kProto = 0x80, kStop = '.', kMark = '(', kNone = 'N', kNewTrue = 0x88,
                  kNewFalse = 0x89, kBinInt1 = 'K', kBinInt2 = 'M', kBinInt = 'J', kLong1 = 0x8a,
                  kBinUnicode = 'X', kEmptyDict = '}', kSetItems = 'u', kEmptyList = ']',
                  kAppends = 'e', kLongBinPut = 'r', kLongBinGet = 'j';

// The length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto c = static_cast<uint8_t>(s[i]);
  std::size_t n = 0;
  uint32_t code = 0;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    code = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    code = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    code = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    code = code << 6 | (b & 0x3f);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kLeast[n] || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return 0;
  return n;
}

}  // namespace

PickleWriter::PickleWriter(std::ostream& out) : out_(out) {
  op(kProto);
  op(2);
}

void PickleWriter::le(uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out_.put(static_cast<char>(value >> (8 * i) & 0xff));
}

void PickleWriter::item_written() {
  if (open_.empty()) return;
  Open& o = open_.back();
  // A dict's batch ends after a value, never between a key and its value.
  if (++o.in_batch < (o.dict ? 2 * kBatch : kBatch)) return;
  op(o.dict ? kSetItems : kAppends);
  op(kMark);
  o.in_batch = 0;
}

void PickleWriter::none() {
  op(kNone);
  item_written();
}

void PickleWriter::boolean(bool value) {
  op(value ? kNewTrue : kNewFalse);
  item_written();
}

void PickleWriter::integer(int64_t value) {
  if (value >= 0 && value <= 0xff) {
    op(kBinInt1);
    le(static_cast<uint64_t>(value), 1);
  } else if (value >= 0 && value <= 0xffff) {
    op(kBinInt2);
    le(static_cast<uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    op(kBinInt);
    le(static_cast<uint64_t>(value), 4);
  } else {
    // Two's complement, little-endian, in as few bytes as keep the sign.
    int bytes = 8;
    while (bytes > 1) {
      const int64_t top = value >> (8 * (bytes - 1) - 1);
      if (top != 0 && top != -1) break;
      --bytes;
    }
    op(kLong1);
    op(static_cast<uint8_t>(bytes));
    le(static_cast<uint64_t>(value), bytes);
  }
  item_written();
}

void PickleWriter::integer(uint64_t value) {
  if (value <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(value));
  // Nine bytes: the eighth has its high bit set, so a zero byte keeps the number positive.
  op(kLong1);
  op(9);
  le(value, 8);
  out_.put('\0');
  item_written();
}

void PickleWriter::string(std::string_view value) {
  std::string valid;
  valid.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const std::size_t n = utf8_sequence(value, i);
    if (n == 0) {
      valid += "\xef\xbf\xbd";
      ++i;
    } else {
      valid.append(value.substr(i, n));
      i += n;
    }
  }
  op(kBinUnicode);
  le(valid.size(), 4);
  out_.write(valid.data(), static_cast<std::streamsize>(valid.size()));
  item_written();
}

void PickleWriter::begin_dict() {
  op(kEmptyDict);
  op(kMark);
  open_.push_back({true});
}

void PickleWriter::begin_list() {
  op(kEmptyList);
  op(kMark);
  open_.push_back({false});
}

void PickleWriter::end_container() {
  if (open_.empty()) throw std::logic_error("pickle: nothing to end");
  if (open_.back().dict && open_.back().in_batch % 2 != 0)
    throw std::logic_error("pickle: a dict key without its value");
  op(open_.back().dict ? kSetItems : kAppends);
}

void PickleWriter::end_dict() {
  end_container();
  open_.pop_back();
  item_written();
}

void PickleWriter::end_list() {
  end_container();
  open_.pop_back();
  item_written();
}

void PickleWriter::end_list(uint32_t memo) {
  end_container();
  // Kept before item_written(): a batch it closes would move the list into its parent.
  op(kLongBinPut);
  le(memo, 4);
  open_.pop_back();
  item_written();
}

void PickleWriter::get(uint32_t memo) {
  op(kLongBinGet);
  le(memo, 4);
  item_written();
}

void PickleWriter::finish() {
  if (!open_.empty()) throw std::logic_error("pickle: a dict or list was not ended");
  op(kStop);
}

}  // namespace gmt::analyzer
