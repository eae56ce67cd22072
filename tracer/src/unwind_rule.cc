// Call frame information read as the DWARF unwinder reads it (DWARF 5 section 6.4, and the .eh_frame
// form of the Linux Standard Base: a CIE id of 0, pointers encoded as its 'z' augmentation says), for the
// few rules stack.cc's steps need (unwind_rule.h).
#include "unwind_rule.h"

#include <unwind.h>

namespace lockstep::trace {
namespace {

// x86-64's DWARF register numbers.
constexpr uint64_t kBp = 6, kSp = 7, kRa = 16;

// Bytes read front to back; any read past `end` (when there is one) fails the whole rule.
struct Bytes {
  const uint8_t* p;
  const uint8_t* end;
  bool bad = false;

  bool has(size_t n) noexcept {
    if (end && (p > end || size_t(end - p) < n)) bad = true;
    return !bad;
  }
  uint64_t fixed(size_t n) noexcept {
    if (!has(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
    p += n;
    return v;
  }
  uint64_t uleb() noexcept {
    uint64_t v = 0;
    for (unsigned shift = 0; has(1); shift += 7) {
      const uint8_t b = *p++;
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return 0;
  }
  int64_t sleb() noexcept {
    uint64_t v = 0;
    unsigned shift = 0;
    for (; has(1); shift += 7) {
      const uint8_t b = *p++;
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        if (shift + 7 < 64 && (b & 0x40)) v |= ~uint64_t(0) << (shift + 7);
        return static_cast<int64_t>(v);
      }
    }
    return 0;
  }
  void skip(uint64_t n) noexcept {
    if (has(n)) p += n;
  }
  // A pointer in the encoding `enc` (DW_EH_PE_*), skipped: only its size matters here.
  void skip_encoded(uint8_t enc) noexcept {
    if (enc == 0xff) return;  // DW_EH_PE_omit
    switch (enc & 0x0f) {
      case 0x00:
      case 0x04:
      case 0x0c:
        skip(8);
        break;  // absptr (8 bytes on x86-64), udata8, sdata8
      case 0x02:
      case 0x0a:
        skip(2);
        break;
      case 0x03:
      case 0x0b:
        skip(4);
        break;
      case 0x01:
        uleb();
        break;
      case 0x09:
        sleb();
        break;
      default:
        bad = true;
    }
  }
};

// What a register's rule says, as far as a step needs it.
enum class How : uint8_t { kSame, kOffset, kUndefined, kOther };
struct Reg {
  How how = How::kSame;
  int64_t offset = 0;  // kOffset: saved at CFA + offset
};
struct State {
  bool cfa_ok = false;  // CFA = register + offset (not an expression)
  uint64_t cfa_reg = 0;
  int64_t cfa_offset = 0;
  Reg bp, ra, sp;
};

Reg* reg_of(State& s, uint64_t r) noexcept {
  return r == kBp ? &s.bp : r == kRa ? &s.ra : r == kSp ? &s.sp : nullptr;
}
Reg reg_in(const State& s, uint64_t r) noexcept { return r == kBp ? s.bp : r == kRa ? s.ra : s.sp; }

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = 1;
  uint8_t fde_enc = 0;
  bool z = false;
  const uint8_t* insns = nullptr;
  const uint8_t* insns_end = nullptr;
};

// The CIE at `p`; false for a form this reader does not take (a signal frame's among them).
bool read_cie(const uint8_t* p, const uint8_t* end, Cie& c) noexcept {
  Bytes b{p, end};
  const uint64_t length = b.fixed(4);
  if (b.bad || length == 0 || length >= 0xfffffff0u) return false;  // 0xffffffff: the 64-bit form
  const uint8_t* cie_end = b.p + length;
  if (end && cie_end > end) return false;
  if (b.fixed(4) != 0) return false;  // a CIE's id in .eh_frame
  const uint64_t version = b.fixed(1);
  if (version != 1 && version != 3) return false;
  const char* aug = reinterpret_cast<const char*>(b.p);
  size_t aug_len = 0;
  while (b.has(1) && b.p < cie_end && *b.p) ++b.p, ++aug_len;
  b.skip(1);
  c.code_align = b.uleb();
  c.data_align = b.sleb();
  const uint64_t ra = version == 1 ? b.fixed(1) : b.uleb();
  if (ra != kRa) return false;
  if (aug_len > 0) {
    if (aug[0] != 'z') return false;
    c.z = true;
    const uint64_t data_len = b.uleb();
    const uint8_t* data_end = b.p + data_len;
    for (size_t i = 1; i < aug_len && !b.bad; ++i) {
      switch (aug[i]) {
        case 'R':
          c.fde_enc = static_cast<uint8_t>(b.fixed(1));
          break;
        case 'P':
          b.skip_encoded(static_cast<uint8_t>(b.fixed(1)));
          break;
        case 'L':
          b.fixed(1);
          break;
        case 'S':
          return false;  // a signal frame: the DWARF unwinder's own handling
        case 'B':
        case 'G':
          break;
        default:
          return false;
      }
    }
    b.p = data_end;
  }
  if (b.bad || b.p > cie_end) return false;
  c.insns = b.p;
  c.insns_end = cie_end;
  return true;
}

// Runs a CFA program up to `pc` (every instruction at a location ≤ pc); `initial`, for DW_CFA_restore,
// is the state after the CIE's program (null while running it). False where the program says what this
// reader cannot follow.
bool run_program(const uint8_t* p, const uint8_t* end, const Cie& c, uint64_t& loc, uint64_t pc, State& s,
                 const State* initial) noexcept {
  constexpr int kDepth = 8;
  State saved[kDepth];
  int depth = 0;
  Bytes b{p, end};
  auto set = [&](uint64_t r, How how, int64_t offset) {
    if (Reg* x = reg_of(s, r)) *x = {how, offset};
  };
  auto restore = [&](uint64_t r) {
    if (!initial) return false;
    if (Reg* x = reg_of(s, r)) *x = reg_in(*initial, r);
    return true;
  };
  auto advance = [&](uint64_t delta) {  // true: the next instruction is past pc
    loc += delta * c.code_align;
    return loc > pc;
  };
  while (b.p < end && !b.bad) {
    const uint8_t op = static_cast<uint8_t>(b.fixed(1));
    const uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:
        if (advance(low)) return true;
        continue;
      case 2:
        set(low, How::kOffset, static_cast<int64_t>(b.uleb()) * c.data_align);
        continue;
      case 3:
        if (!restore(low)) return false;
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;  // nop
      case 0x02:
        if (advance(b.fixed(1))) return true;
        break;
      case 0x03:
        if (advance(b.fixed(2))) return true;
        break;
      case 0x04:
        if (advance(b.fixed(4))) return true;
        break;
      case 0x05: {
        const uint64_t r = b.uleb();
        set(r, How::kOffset, static_cast<int64_t>(b.uleb()) * c.data_align);
        break;
      }
      case 0x06:
        if (!restore(b.uleb())) return false;
        break;
      case 0x07:
        set(b.uleb(), How::kUndefined, 0);
        break;
      case 0x08:
        set(b.uleb(), How::kSame, 0);
        break;
      case 0x09:
        set(b.uleb(), How::kOther, 0);
        b.uleb();
        break;  // kept in another register
      case 0x0a:
        if (depth == kDepth) return false;
        saved[depth++] = s;
        break;
      case 0x0b: {
        if (depth == 0) return false;
        // The CFA rule is restored with the registers' (as the DWARF unwinder does).
        s = saved[--depth];
        break;
      }
      case 0x0c:
        s.cfa_reg = b.uleb();
        s.cfa_offset = static_cast<int64_t>(b.uleb());
        s.cfa_ok = true;
        break;
      case 0x0d:
        s.cfa_reg = b.uleb();
        s.cfa_ok = true;
        break;
      case 0x0e:
        s.cfa_offset = static_cast<int64_t>(b.uleb());
        break;
      case 0x0f:
        b.skip(b.uleb());
        s.cfa_ok = false;
        break;  // an expression
      case 0x10:
      case 0x16: {
        const uint64_t r = b.uleb();
        set(r, How::kOther, 0);
        b.skip(b.uleb());
        break;
      }
      case 0x11: {
        const uint64_t r = b.uleb();
        set(r, How::kOffset, b.sleb() * c.data_align);
        break;
      }
      case 0x12:
        s.cfa_reg = b.uleb();
        s.cfa_offset = b.sleb() * c.data_align;
        s.cfa_ok = true;
        break;
      case 0x13:
        s.cfa_offset = b.sleb() * c.data_align;
        break;
      case 0x14: {
        const uint64_t r = b.uleb();
        set(r, How::kOther, 0);
        b.uleb();
        break;
      }
      case 0x15: {
        const uint64_t r = b.uleb();
        set(r, How::kOther, 0);
        b.sleb();
        break;
      }
      case 0x2e:
        b.uleb();
        break;  // GNU_args_size: nothing for a step
      case 0x2f: {
        const uint64_t r = b.uleb();
        set(r, How::kOffset, -static_cast<int64_t>(b.uleb()) * c.data_align);
        break;
      }
      default:
        return false;  // DW_CFA_set_loc, a vendor's, or one of another architecture
    }
  }
  return !b.bad;
}

constexpr int64_t kFieldLimit = int64_t(1) << 29;  // pack_rule's 30-bit signed fields

}  // namespace

UnwindRule rule_from_fde(const uint8_t* fde, const uint8_t* begin, const uint8_t* end, uint64_t func,
                         uint64_t pc) noexcept {
  UnwindRule none;
#if defined(__x86_64__)
  Bytes b{fde, end};
  const uint64_t length = b.fixed(4);
  if (b.bad || length == 0 || length >= 0xfffffff0u) return none;
  const uint8_t* fde_end = b.p + length;
  if (end && fde_end > end) return none;
  const uint8_t* id_at = b.p;
  const uint64_t cie_offset = b.fixed(4);
  if (b.bad || cie_offset == 0 || (begin && uint64_t(id_at - begin) < cie_offset)) return none;
  Cie c;
  if (!read_cie(id_at - cie_offset, end, c)) return none;
  b.skip_encoded(c.fde_enc);         // the start: `func` is it, decoded
  b.skip_encoded(c.fde_enc & 0x0f);  // the length, in the same format without its base
  if (c.z) b.skip(b.uleb());
  if (b.bad || b.p > fde_end) return none;
  State s;
  uint64_t loc = func;
  if (!run_program(c.insns, c.insns_end, c, loc, ~uint64_t(0), s, nullptr)) return none;
  const State initial = s;
  loc = func;
  if (!run_program(b.p, fde_end, c, loc, pc, s, &initial)) return none;
  UnwindRule r;
  if (s.ra.how == How::kUndefined) {
    r.kind = UnwindRule::kOutermost;
    return r;
  }
  if (!s.cfa_ok || (s.cfa_reg != kBp && s.cfa_reg != kSp) || s.sp.how != How::kSame) return none;
  if (s.ra.how != How::kOffset || s.ra.offset != -8) return none;
  if (s.bp.how != How::kSame && s.bp.how != How::kOffset) return none;
  if (s.cfa_offset <= -kFieldLimit || s.cfa_offset >= kFieldLimit || s.bp.offset <= -kFieldLimit ||
      s.bp.offset >= kFieldLimit)
    return none;
  r.kind = UnwindRule::kFrame;
  r.cfa_from_bp = s.cfa_reg == kBp;
  r.cfa_offset = static_cast<int32_t>(s.cfa_offset);
  r.bp_saved = s.bp.how == How::kOffset;
  r.bp_offset = static_cast<int32_t>(s.bp.offset);
  return r;
#else
  (void)fde, (void)begin, (void)end, (void)func, (void)pc;
  return none;
#endif
}

}  // namespace lockstep::trace

// libgcc's lookup of the FDE covering an address (the DWARF unwinder's own; exported by libgcc_s since
// GCC 3.0, not declared in its public header).
struct lst_dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(const void* pc, lst_dwarf_eh_bases* bases);

namespace lockstep::trace {

UnwindRule rule_at(uint64_t ret) noexcept {
#if defined(__x86_64__)
  if (ret < 2) return {};
  lst_dwarf_eh_bases bases{};
  const void* fde = _Unwind_Find_FDE(reinterpret_cast<const void*>(ret - 1), &bases);
  if (!fde) return {};  // a signal trampoline has none, and the DWARF unwinder knows it by its code
  return rule_from_fde(static_cast<const uint8_t*>(fde), nullptr, nullptr,
                       reinterpret_cast<uint64_t>(bases.func), ret - 1);
#else
  (void)ret;
  return {};
#endif
}

uint64_t pack_rule(const UnwindRule& r) noexcept {
  if (r.kind != UnwindRule::kFrame) return r.kind;
  if (r.cfa_offset <= -kFieldLimit || r.cfa_offset >= kFieldLimit || r.bp_offset <= -kFieldLimit ||
      r.bp_offset >= kFieldLimit)
    return UnwindRule::kNone;
  constexpr uint64_t kMask = (uint64_t(1) << 30) - 1;
  return uint64_t(r.kind) | uint64_t(r.cfa_from_bp) << 2 | uint64_t(r.bp_saved) << 3 |
         (static_cast<uint64_t>(int64_t(r.cfa_offset)) & kMask) << 4 |
         (static_cast<uint64_t>(int64_t(r.bp_offset)) & kMask) << 34;
}

UnwindRule unpack_rule(uint64_t w) noexcept {
  UnwindRule r;
  r.kind = static_cast<UnwindRule::Kind>(w & 3);
  if (r.kind != UnwindRule::kFrame) return r;
  r.cfa_from_bp = (w >> 2) & 1;
  r.bp_saved = (w >> 3) & 1;
  // The 30-bit fields, sign-extended.
  r.cfa_offset = static_cast<int32_t>(static_cast<int64_t>(w << 30) >> 34);
  r.bp_offset = static_cast<int32_t>(static_cast<int64_t>(w) >> 34);
  return r;
}

}  // namespace lockstep::trace
