// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/frame_rules.h"

#include <link.h>

#include <cstring>

namespace gmt::interpose {
namespace {

// DWARF's x86-64 register numbers.
constexpr uint64_t kRbp = 6;
constexpr uint64_t kRsp = 7;

// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kOmit = 0xff;
constexpr uint8_t kPcRel = 0x10;
constexpr uint8_t kDataRel = 0x30;
constexpr uint8_t kIndirect = 0x80;

// A bounded reader of the little-endian DWARF data of a mapped module.
class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool ok() const { return ok_; }
  const uint8_t* at() const { return p_; }
  bool more() const { return ok_ && p_ < end_; }

  template <typename T>
  T fixed() {
    T v{};
    if (!ok_ || end_ - p_ < static_cast<long>(sizeof(T))) return fail<T>();
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto b = fixed<uint8_t>();
      if (!ok_) return 0;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return fail<uint64_t>();
  }
  int64_t sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      b = fixed<uint8_t>();
      if (!ok_ || shift >= 64) return fail<int64_t>();
      v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(int64_t{1} << shift);
    return v;
  }
  // A pointer in `encoding`; `data_base` is what datarel is relative to (.eh_frame_hdr).
  uint64_t pointer(uint8_t encoding, uint64_t data_base = 0) {
    if (encoding == kOmit) return 0;
    const auto here = reinterpret_cast<uint64_t>(p_);
    uint64_t v = 0;
    switch (encoding & 0x0f) {
      case 0x00:
        v = fixed<uint64_t>();
        break;
      case 0x01:
        v = uleb();
        break;
      case 0x02:
        v = fixed<uint16_t>();
        break;
      case 0x03:
        v = fixed<uint32_t>();
        break;
      case 0x04:
        v = fixed<uint64_t>();
        break;
      case 0x09:
        v = static_cast<uint64_t>(sleb());
        break;
      case 0x0a:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int16_t>()));
        break;
      case 0x0b:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int32_t>()));
        break;
      case 0x0c:
        v = fixed<uint64_t>();
        break;
      default:
        return fail<uint64_t>();
    }
    switch (encoding & 0x70) {
      case 0x00:
        break;
      case kPcRel:
        v += here;
        break;
      case kDataRel:
        v += data_base;
        break;
      default:
        return fail<uint64_t>();  // textrel, funcrel, aligned: not produced for x86-64
    }
    // An indirect pointer (personality routines) is only skipped here, never followed.
    return v;
  }
  void skip(uint64_t n) {
    if (!ok_ || static_cast<uint64_t>(end_ - p_) < n) {
      ok_ = false;
      return;
    }
    p_ += n;
  }

 private:
  template <typename T>
  T fail() {
    ok_ = false;
    return T{};
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// The register rules the CFA program tracks: the CFA, rbp and the return address.
struct RegisterRules {
  enum class Saved : uint8_t { kSame, kAtOffset, kUnsupported, kUndefined };
  uint64_t cfa_register = kRsp;
  int64_t cfa_offset = 8;
  bool cfa_unsupported = false;
  // A rule for rsp itself (stack-switching code): the caller's rsp is not the CFA.
  bool rsp_ruled = false;
  Saved rbp = Saved::kSame;
  int64_t rbp_offset = 0;
  Saved ra = Saved::kSame;
  int64_t ra_offset = 0;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_register = 16;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

// A CIE or FDE's bounds: its length word, then its body.
bool entry_bounds(const uint8_t* entry, const uint8_t** body, const uint8_t** end) {
  uint32_t length32 = 0;
  std::memcpy(&length32, entry, 4);
  if (length32 == 0) return false;
  if (length32 == 0xffffffffu) {
    uint64_t length64 = 0;
    std::memcpy(&length64, entry + 4, 8);
    *body = entry + 12;
    *end = *body + length64;
  } else {
    *body = entry + 4;
    *end = *body + length32;
  }
  return true;
}

bool parse_cie(const uint8_t* entry, Cie* cie) {
  const uint8_t* body = nullptr;
  const uint8_t* end = nullptr;
  if (!entry_bounds(entry, &body, &end)) return false;
  Reader r(body, end);
  if (r.fixed<uint32_t>() != 0) return false;  // a CIE's id in .eh_frame
  const auto version = r.fixed<uint8_t>();
  if (version != 1 && version != 3) return false;
  const char* augmentation = reinterpret_cast<const char*>(r.at());
  const std::size_t aug_length = strnlen(augmentation, static_cast<std::size_t>(end - r.at()));
  r.skip(aug_length + 1);
  cie->code_align = r.uleb();
  cie->data_align = r.sleb();
  cie->ra_register = version == 1 ? r.fixed<uint8_t>() : r.uleb();
  if (aug_length > 0 && augmentation[0] == 'z') {
    cie->has_augmentation_data = true;
    const uint64_t data_length = r.uleb();
    const uint8_t* data_end = r.at() + data_length;
    for (std::size_t i = 1; i < aug_length && r.ok(); ++i) {
      switch (augmentation[i]) {
        case 'R':
          cie->fde_encoding = r.fixed<uint8_t>();
          break;
        case 'L':
          r.fixed<uint8_t>();
          break;
        case 'P':
          r.pointer(r.fixed<uint8_t>() & ~kIndirect);
          break;
        case 'S':
          break;  // below
        default:
          i = aug_length;
          break;  // unknown: the data length lets us skip the rest
      }
    }
    // Wherever it stands, even after a letter this does not know.
    cie->signal_frame = std::memchr(augmentation, 'S', aug_length) != nullptr;
    if (!r.ok() || r.at() > data_end) return false;
    r = Reader(data_end, end);
  } else if (aug_length > 0) {
    return false;  // an augmentation without 'z' cannot be skipped safely
  }
  cie->instructions = r.at();
  cie->end = end;
  return r.ok();
}

// Runs a CFA program over `rules` while its location is at most `pc`. `initial` is what
// DW_CFA_restore returns to (the CIE's rules); false on an instruction we cannot follow.
bool run_cfa_program(Reader r, const Cie& cie, uint64_t location, uint64_t pc,
                     const RegisterRules& initial, RegisterRules* rules) {
  constexpr int kMaxRemembered = 16;
  RegisterRules remembered[kMaxRemembered];
  int depth = 0;
  auto set_offset = [&](uint64_t reg, int64_t offset) {
    if (reg == kRsp) {
      rules->rsp_ruled = true;
    } else if (reg == kRbp) {
      rules->rbp = RegisterRules::Saved::kAtOffset;
      rules->rbp_offset = offset;
    } else if (reg == cie.ra_register) {
      rules->ra = RegisterRules::Saved::kAtOffset;
      rules->ra_offset = offset;
    }
  };
  auto set_saved = [&](uint64_t reg, RegisterRules::Saved how) {
    if (reg == kRsp)
      rules->rsp_ruled = true;
    else if (reg == kRbp)
      rules->rbp = how;
    else if (reg == cie.ra_register)
      rules->ra = how;
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kRsp) {
      rules->rsp_ruled = initial.rsp_ruled;
    } else if (reg == kRbp) {
      rules->rbp = initial.rbp;
      rules->rbp_offset = initial.rbp_offset;
    } else if (reg == cie.ra_register) {
      rules->ra = initial.ra;
      rules->ra_offset = initial.ra_offset;
    }
  };
  while (r.more()) {
    const auto op = r.fixed<uint8_t>();
    const uint8_t high = op & 0xc0;
    const uint8_t low = op & 0x3f;
    uint64_t advance = 0;
    if (high == 0x40) {
      advance = low;
    } else if (high == 0x80) {
      set_offset(low, static_cast<int64_t>(r.uleb()) * cie.data_align);
    } else if (high == 0xc0) {
      restore(low);
    } else {
      switch (op) {
        case 0x00:
          break;  // nop
        case 0x01:
          return false;  // set_loc: not produced here
        case 0x02:
          advance = r.fixed<uint8_t>();
          break;  // advance_loc1
        case 0x03:
          advance = r.fixed<uint16_t>();
          break;  // advance_loc2
        case 0x04:
          advance = r.fixed<uint32_t>();
          break;      // advance_loc4
        case 0x05: {  // offset_extended
          const uint64_t reg = r.uleb();
          set_offset(reg, static_cast<int64_t>(r.uleb()) * cie.data_align);
          break;
        }
        case 0x06:
          restore(r.uleb());
          break;  // restore_extended
        case 0x07:
          set_saved(r.uleb(), RegisterRules::Saved::kUndefined);
          break;
        case 0x08:
          set_saved(r.uleb(), RegisterRules::Saved::kSame);
          break;
        case 0x09: {  // register: saved in another
          const uint64_t reg = r.uleb();
          r.uleb();
          set_saved(reg, RegisterRules::Saved::kUnsupported);
          break;
        }
        case 0x0a:  // remember_state
          if (depth == kMaxRemembered) return false;
          remembered[depth++] = *rules;
          break;
        case 0x0b:  // restore_state
          if (depth == 0) return false;
          *rules = remembered[--depth];
          break;
        case 0x0c:  // def_cfa
          rules->cfa_register = r.uleb();
          rules->cfa_offset = static_cast<int64_t>(r.uleb());
          rules->cfa_unsupported = false;
          break;
        case 0x0d:
          rules->cfa_register = r.uleb();
          break;  // def_cfa_register
        case 0x0e:
          rules->cfa_offset = static_cast<int64_t>(r.uleb());
          break;
        case 0x0f:  // def_cfa_expression
          r.skip(r.uleb());
          rules->cfa_unsupported = true;
          break;
        case 0x10:    // expression
        case 0x16: {  // val_expression
          const uint64_t reg = r.uleb();
          r.skip(r.uleb());
          set_saved(reg, RegisterRules::Saved::kUnsupported);
          break;
        }
        case 0x11: {  // offset_extended_sf
          const uint64_t reg = r.uleb();
          set_offset(reg, r.sleb() * cie.data_align);
          break;
        }
        case 0x12:  // def_cfa_sf
          rules->cfa_register = r.uleb();
          rules->cfa_offset = r.sleb() * cie.data_align;
          rules->cfa_unsupported = false;
          break;
        case 0x13:
          rules->cfa_offset = r.sleb() * cie.data_align;
          break;
        case 0x14:    // val_offset
        case 0x15: {  // val_offset_sf
          const uint64_t reg = r.uleb();
          if (op == 0x14)
            r.uleb();
          else
            r.sleb();
          set_saved(reg, RegisterRules::Saved::kUnsupported);
          break;
        }
        case 0x2e:
          r.uleb();
          break;      // GNU_args_size
        case 0x2f: {  // GNU_negative_offset_extended
          const uint64_t reg = r.uleb();
          set_offset(reg, -static_cast<int64_t>(r.uleb()) * cie.data_align);
          break;
        }
        default:
          return false;
      }
    }
    if (advance != 0) {
      location += advance * cie.code_align;
      if (location > pc) return r.ok();
    }
  }
  return r.ok();
}

FrameRule rule_of(const RegisterRules& rules) {
  FrameRule rule;
  if (rules.ra == RegisterRules::Saved::kUndefined) {
    rule.kind = FrameRule::Kind::kOutermost;
    return rule;
  }
  if (rules.cfa_unsupported || rules.rsp_ruled ||
      (rules.cfa_register != kRsp && rules.cfa_register != kRbp) ||
      rules.ra != RegisterRules::Saved::kAtOffset || rules.ra_offset != -8 ||
      rules.rbp == RegisterRules::Saved::kUnsupported ||
      rules.rbp == RegisterRules::Saved::kUndefined || rules.cfa_offset < INT32_MIN ||
      rules.cfa_offset > INT32_MAX || rules.rbp_offset < INT16_MIN || rules.rbp_offset > INT16_MAX)
    return rule;
  if (rules.rbp == RegisterRules::Saved::kAtOffset && rules.rbp_offset == 0) return rule;
  rule.kind = FrameRule::Kind::kStep;
  rule.cfa_is_rbp = rules.cfa_register == kRbp;
  rule.cfa_offset = static_cast<int32_t>(rules.cfa_offset);
  rule.rbp_offset = rules.rbp == RegisterRules::Saved::kAtOffset
                        ? static_cast<int16_t>(rules.rbp_offset)
                        : int16_t{0};
  return rule;
}

// The FDE that covers `pc`, by the binary search table of .eh_frame_hdr; null when none.
const uint8_t* find_fde(const uint8_t* hdr, uint64_t pc) {
  if (hdr[0] != 1) return nullptr;
  const uint8_t eh_frame_encoding = hdr[1];
  const uint8_t count_encoding = hdr[2];
  const uint8_t table_encoding = hdr[3];
  // The search table is pairs of datarel sdata4 (every x86-64 linker writes it so).
  if (table_encoding != (kDataRel | 0x0b) || count_encoding == kOmit) return nullptr;
  const auto base = reinterpret_cast<uint64_t>(hdr);
  Reader r(hdr + 4, hdr + 4 + 32);
  r.pointer(eh_frame_encoding, base);
  const uint64_t count = r.pointer(count_encoding, base);
  if (!r.ok() || count == 0) return nullptr;
  const auto* table = reinterpret_cast<const int32_t*>(r.at());
  uint64_t lo = 0, hi = count;  // the last entry whose start is at most pc
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    int32_t start = 0;
    std::memcpy(&start, &table[2 * mid], 4);
    if (base + static_cast<int64_t>(start) <= pc)
      lo = mid;
    else
      hi = mid;
  }
  int32_t start = 0, fde = 0;
  std::memcpy(&start, &table[2 * lo], 4);
  std::memcpy(&fde, &table[2 * lo + 1], 4);
  if (base + static_cast<int64_t>(start) > pc) return nullptr;
  return reinterpret_cast<const uint8_t*>(base + static_cast<int64_t>(fde));
}

struct HeaderSearch {
  uint64_t pc;
  const uint8_t* hdr = nullptr;
};

int find_eh_frame_hdr(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<HeaderSearch*>(data);
  bool inside = false;
  const uint8_t* hdr = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && search->pc >= start && search->pc < start + ph.p_memsz)
      inside = true;
    if (ph.p_type == PT_GNU_EH_FRAME) hdr = reinterpret_cast<const uint8_t*>(start);
  }
  if (!inside) return 0;
  search->hdr = hdr;
  return 1;
}

}  // namespace

FrameRule frame_rule_in(const uint8_t* hdr, uint64_t pc) {
  const uint8_t* fde = find_fde(hdr, pc);
  if (fde == nullptr) return {};
  const uint8_t* body = nullptr;
  const uint8_t* end = nullptr;
  if (!entry_bounds(fde, &body, &end)) return {};
  Reader r(body, end);
  const auto cie_pointer = r.fixed<uint32_t>();
  if (!r.ok() || cie_pointer == 0) return {};  // 0 would make this entry a CIE
  Cie cie;
  if (!parse_cie(body - cie_pointer, &cie) || cie.signal_frame) return {};
  const uint64_t start = r.pointer(cie.fde_encoding);
  const uint64_t range = r.pointer(cie.fde_encoding & 0x0f);
  if (!r.ok() || pc < start || pc - start >= range) return {};
  if (cie.has_augmentation_data) r.skip(r.uleb());
  if (!r.ok()) return {};
  RegisterRules rules;
  if (!run_cfa_program(Reader(cie.instructions, cie.end), cie, 0, UINT64_MAX, rules, &rules))
    return {};
  const RegisterRules initial = rules;
  if (!run_cfa_program(r, cie, start, pc, initial, &rules)) return {};
  return rule_of(rules);
}

FrameRule find_frame_rule(uint64_t pc) {
  HeaderSearch search{pc};
  dl_iterate_phdr(find_eh_frame_hdr, &search);
  return search.hdr != nullptr ? frame_rule_in(search.hdr, pc) : FrameRule{};
}

}  // namespace gmt::interpose
